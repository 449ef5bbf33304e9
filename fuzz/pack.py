#!/usr/bin/env python3
"""Packs a journal_segment seed directory in place: the hashed (fuzzer-found) seeds are joined,
up to 64 at a time and 60 KB, with the separator that the target splits its input on
(`JOURNAL_PART_SEPARATOR` in src/fuzzing.rs). The coverage is the same; the files are far fewer,
because most of these seeds are short records that each reach one decoder branch.

    fuzz/pack.py fuzz/seeds/journal_segment
"""
import hashlib
import os
import re
import sys

SEPARATOR = b"\xc1\xc1botlist-part\xc1\xc1"
MAX_PARTS = 64
MAX_BYTES = 60_000

directory = sys.argv[1]
hashed = [f for f in sorted(os.listdir(directory)) if re.fullmatch(r"[0-9a-f]{40}", f)]
seeds = []
for name in hashed:
    path = os.path.join(directory, name)
    with open(path, "rb") as file:
        seeds.append(file.read())
    os.remove(path)
seeds.sort(key=len)
packs, current, size = [], [], 0
for seed in seeds:
    if current and (size + len(seed) > MAX_BYTES or len(current) >= MAX_PARTS):
        packs.append(current)
        current, size = [], 0
    current.append(seed)
    size += len(seed) + len(SEPARATOR)
if current:
    packs.append(current)
for pack in packs:
    data = SEPARATOR.join(pack)
    with open(os.path.join(directory, hashlib.sha1(data).hexdigest()), "wb") as file:
        file.write(data)
print(f"{directory}: {len(seeds)} seeds packed into {len(packs)} files")

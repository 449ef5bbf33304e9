#!/usr/bin/env python3
"""Self time by function from a `perf record` of botlist, with botlist's own symbols resolved.

perf 6.1 on the development machine leaves botlist's functions as bare addresses (offsets in
the file); this maps them to names through `nm` and the executable segment's offset, and adds
up the samples by function.

    perf record -F 999 -g -p PID -o perf.data -- sleep 8
    benches/perf_top.py perf.data target/release/botlist [N] [--comm THREAD]
"""
import bisect
import collections
import re
import subprocess
import sys


def executable_delta(binary):
    """Virtual address minus file offset of the executable LOAD segment."""
    out = subprocess.run(['readelf', '-lW', binary], capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ['LOAD'] and 'E' in fields[6:-1]:
            return int(fields[2], 16) - int(fields[1], 16)
    return 0


def symbols(binary):
    out = subprocess.run(['nm', '-C', '--defined-only', binary], capture_output=True, text=True).stdout
    table = []
    for line in out.splitlines():
        parts = line.split(' ', 2)
        if len(parts) == 3 and parts[1] in 'tTwW':
            table.append((int(parts[0], 16), re.sub(r'::h[0-9a-f]{16}$', '', parts[2])))
    table.sort()
    return table


def main():
    args = [a for a in sys.argv[1:]]
    comm = None
    if '--comm' in args:
        at = args.index('--comm')
        comm = args[at + 1]
        del args[at:at + 2]
    data, binary = args[0], args[1]
    most = int(args[2]) if len(args) > 2 else 40
    delta = executable_delta(binary)
    table = symbols(binary)
    starts = [a for a, _ in table]
    command = ['perf', 'report', '-i', data, '--no-children', '-g', 'none', '--sort', 'dso,sym', '--stdio']
    if comm:
        command += ['--comm', comm]
    report = subprocess.run(command, capture_output=True, text=True).stdout
    by_function = collections.Counter()
    for line in report.splitlines():
        m = re.match(r'\s+([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)$', line)
        if not m:
            continue
        share, dso, sym = float(m.group(1)), m.group(2), m.group(4).strip()
        if dso == os_basename(binary) and sym.startswith('0x'):
            at = bisect.bisect_right(starts, int(sym, 16) + delta) - 1
            sym = table[at][1] if at >= 0 else sym
        by_function[f'{dso} {sym[:150]}'] += share
    for name, share in by_function.most_common(most):
        print(f'{share:6.2f}%  {name}')


def os_basename(path):
    return path.rstrip('/').rsplit('/', 1)[-1]


if __name__ == '__main__':
    main()

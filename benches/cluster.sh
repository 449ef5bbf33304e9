#!/usr/bin/env bash
# Cluster mode on one machine (docs/CLUSTER.md, docs/PERFORMANCE.md, "Cluster mode"): three
# nats-servers (R3, sync_interval: always) and three botlist nodes on loopback. Prints:
#   - votes/s and latency percentiles through the writer (wrk -t2 -c32, benches/votes.lua),
#     beside the same through one single-node server with --fsync always on this machine;
#   - the same through a node that does not write (it forwards to the writer);
#   - follower lag at about 1,000 writes/s (benches/cluster_lag.py): p50/p99 from a write's 2xx
#     to a node that does not write reporting it applied;
#   - read ratio: GET /bots/:id/check on a follower while it applies about 1,000 writes/s,
#     divided by the same on a single node taking about 1,000 writes/s (alternated, ROUNDS);
#   - catch-up: records/s a node started late reads from the stream;
#   - failover: seconds from kill -9 of the writer to the first 2xx write through another node.
#
#   cargo build --release && benches/cluster.sh
#   SECS=10 BIN=target/release/botlist benches/cluster.sh
#   PERF_OUT=/tmp/reads ROUNDS=1 benches/cluster.sh   (also profiles both readers with perf)
# Needs wrk, curl, python3 (for the pinned nats-server's venv). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/botlist}
SECS=${SECS:-10}
TTL=${TTL:-3}
command -v wrk >/dev/null || { echo "needs wrk" >&2; exit 1; }
nats=$(scripts/nats-server.sh)
work=$(mktemp -d /tmp/botlist-cluster-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
ADMIN=bench-admin-token-cluster
urls=""
for i in 1 2 3; do
  mkdir -p $work/n$i
  cat > $work/n$i.conf <<CONF
server_name: n$i
listen: 127.0.0.1:$((14221 + i))
max_payload: 8MB
jetstream { store_dir: "$work/n$i", sync_interval: always }
cluster { name: bench, listen: 127.0.0.1:$((16221 + i)), routes: [nats-route://127.0.0.1:16222, nats-route://127.0.0.1:16223, nats-route://127.0.0.1:16224] }
CONF
  $nats -c $work/n$i.conf > $work/n$i.log 2>&1 & pids+=($!)
  urls="$urls${urls:+,}nats://127.0.0.1:$((14221 + i))"
done
declare -A NODE_PID
start_node() {
  local i=$1
  $BIN serve --bind 127.0.0.1:$((18180 + i)) --replicate $urls --node-id node$i --cluster-token t \
    --admin-token $ADMIN --rate-limit 0 --lease-ttl $TTL --data-dir $work/d$i > $work/node$i.out 2> $work/node$i.err &
  NODE_PID[$i]=$!; pids+=($!)
  until grep -q "listening on" $work/node$i.out 2>/dev/null; do
    kill -0 ${NODE_PID[$i]} 2>/dev/null || { echo "node $i did not start:" >&2; cat $work/node$i.err >&2; exit 1; }
    sleep 0.1
  done
}
for i in 1 2 3; do start_node $i; done
writer=""
until [ -n "$writer" ]; do
  for i in 1 2 3; do curl -sf http://127.0.0.1:$((18180 + i))/cluster/writer >/dev/null && writer=$i; done
  sleep 0.2
done
other=$(( writer % 3 + 1 ))
W=http://127.0.0.1:$((18180 + writer)); O=http://127.0.0.1:$((18180 + other))
bot=$(curl -sf -XPOST $W/api/v1/admin/bots -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
  -d '{"platform_id":"1","name":"Bench","username":"bench","short_description":"bench"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["bot"]["id"])')
run_wrk() { wrk -t2 -c32 -d${SECS}s --latency -s benches/votes.lua "$1/api/v1" -- $bot $ADMIN $2 2>/dev/null; }
report() { awk -v what="$1" '/Requests\/sec/ {r=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} END {printf "%-34s %9.0f votes/s  p50 %8s  p99 %8s\n", what, r, p50, p99}'; }
run_wrk $W 0 | report "cluster, through the writer"
run_wrk $O 1000000000 | report "cluster, through a follower"

# Single node, fsync always, same machine and moment.
$BIN serve --bind 127.0.0.1:18190 --admin-token $ADMIN --rate-limit 0 --fsync always --data-dir $work/single > $work/single.out 2>&1 & spid=$!; pids+=($spid)
until grep -q "listening on" $work/single.out 2>/dev/null; do sleep 0.1; done
S=http://127.0.0.1:18190
sbot=$(curl -sf -XPOST $S/api/v1/admin/bots -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
  -d '{"platform_id":"1","name":"Bench","username":"bench","short_description":"bench"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["bot"]["id"])')
bot=$sbot run_wrk $S 0 | report "single node, --fsync always"

# Read ratio: check on a follower applying ~1,000 writes/s ÷ check on the single node taking
# ~1,000 writes/s, alternated. Each bot gets its own token for check.
token_of() { curl -sf -XPOST "$1/api/v1/admin/bots/$2/token" -H "Authorization: $ADMIN" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
ctoken=$(token_of $W $bot); stoken=$(token_of $S $sbot)
# Reads per second, and reads per second of the reading process's own CPU (user + system, from
# /proc): on a machine the nats-servers share, the second says what the node costs a read.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
check_rate() {
  local before after
  before=$(ticks "$4")
  # PERF_OUT=/tmp/x: a perf profile of the reading process over the run, one file per process.
  [ -n "${PERF_OUT:-}" ] && perf record -F 999 -g -p "$4" -o "$PERF_OUT.$4" -- sleep $((${RSECS:-5} - 1)) >/dev/null 2>&1 &
  wrk -t2 -c64 -d${RSECS:-5}s -H "Authorization: $2" "$1/api/v1/bots/$3/check?userId=700000000000000001" > $work/check.out
  after=$(ticks "$4")
  awk -v t=$((after - before)) -v hz="$HZ" '/requests in/ {n = $1} /Requests\/sec/ {r = $2}
    END {printf "%.0f %.0f\n", r, (t > 0 ? n / (t / hz) : 0)}' $work/check.out
}
for r in $(seq 1 ${ROUNDS:-2}); do
  WRITE_THREADS=32 python3 benches/write_rate.py $W/api/v1 $bot $ADMIN ${LAG_RATE:-1000} ${RSECS:-5} $((810000000000000000 + r * 1000000000)) > $work/wf.out & wpid=$!
  sleep 0.3; f=$(check_rate $O $ctoken $bot ${NODE_PID[$other]}); wait $wpid
  WRITE_THREADS=32 python3 benches/write_rate.py $S/api/v1 $sbot $ADMIN ${LAG_RATE:-1000} ${RSECS:-5} $((820000000000000000 + r * 1000000000)) > $work/ws.out & wpid=$!
  sleep 0.3; s1=$(check_rate $S $stoken $sbot $spid); wait $wpid
  # The writes each side took meanwhile: a ratio means little unless they are alike.
  wf=$(awk '{print $4}' $work/wf.out); ws=$(awk '{print $4}' $work/ws.out)
  awk -v r=$r -v f="$f" -v s="$s1" -v wf="$wf" -v ws="$ws" -v secs=${RSECS:-5} -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {split(f, a, " "); split(s, b, " ");
    printf "read ratio round %d: follower check %.0f/s (%.0f per CPU-second) applying %.0f writes/s, single node %.0f/s (%.0f per CPU-second) taking %.0f writes/s; ratio %.2f, per CPU %.2f; load %s\n",
      r, a[1], a[2], wf / secs, b[1], b[2], ws / secs, a[1] / b[1], (b[2] > 0 ? a[2] / b[2] : 0), load}'
done
kill $spid

# Follower lag at about 1,000 writes/s: from each write's 2xx to a follower applying it.
python3 benches/cluster_lag.py $W/api/v1 $O $bot $ADMIN ${LAG_RATE:-1000} ${SECS}

# Catch-up: a fourth node on an empty directory reads the whole stream.
last=$(curl -sf $W/cluster | python3 -c 'import json,sys; print(json.load(sys.stdin)["applied_seq"])')
t0=$(date +%s.%N)
start_node 4
until [ "$(curl -sf http://127.0.0.1:18184/cluster | python3 -c 'import json,sys; print(json.load(sys.stdin)["applied_seq"])')" -ge "$last" ] 2>/dev/null; do sleep 0.05; done
t1=$(date +%s.%N)
awk -v n=$last -v a=$t0 -v b=$t1 'BEGIN {printf "catch-up of %d records: %.2f s, %.0f records/s (start included)\n", n, b-a, n/(b-a)}'

# Failover: kill -9 the writer, write through another node until a 2xx.
t0=$(date +%s.%N)
kill -9 ${NODE_PID[$writer]}
user=900000000000000000
until curl -sf -o /dev/null -XPOST $O/api/v1/admin/bots/$bot/votes -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
    -d "{\"user_id\":\"$user\",\"username\":\"u\",\"avatar\":null}"; do user=$((user + 1)); sleep 0.05; done
t1=$(date +%s.%N)
awk -v a=$t0 -v b=$t1 -v ttl=$TTL 'BEGIN {printf "failover (kill -9 of the writer, --lease-ttl %d): %.2f s to the first 2xx write\n", ttl, b-a}'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

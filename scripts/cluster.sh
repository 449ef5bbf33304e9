#!/usr/bin/env bash
# A cluster on loopback for a person to try (docs/CLUSTER.md): three nats-servers (routes,
# JetStream, sync_interval: always, max_payload: 8MB) and three botlist nodes on ports 8081-8083,
# --lease-ttl 3, admin token `cluster-admin-token`, cluster token `cluster-secret` (from files in
# .cluster/, never on a command line). A node that exits 5
# (a writer that lost its role) is started again, as a supervisor would. Ctrl-C stops all.
#
#   scripts/cluster.sh            # uses target/release/botlist (cargo build --release first)
#   BOTLIST=target/debug/botlist scripts/cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
botlist="${BOTLIST:-target/release/botlist}"
[ -x "$botlist" ] || { echo "no $botlist: run cargo build --release first" >&2; exit 1; }
nats_server="$(scripts/nats-server.sh)"
work=.cluster
rm -rf "$work"
mkdir -p "$work"
pids=()
cleanup() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for file in "$work"/node*.pid; do
        [ -f "$file" ] && kill "$(cat "$file")" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

for i in 1 2 3; do
    mkdir -p "$work/nats$i"
    cat > "$work/nats$i.conf" <<CONF
server_name: nats$i
listen: 127.0.0.1:$((4221 + i))
max_payload: 8MB
jetstream { store_dir: "$PWD/$work/nats$i", sync_interval: always }
cluster {
  name: botlist
  listen: 127.0.0.1:$((6221 + i))
  routes: [nats-route://127.0.0.1:6222, nats-route://127.0.0.1:6223, nats-route://127.0.0.1:6224]
}
CONF
    "$nats_server" -c "$work/nats$i.conf" > "$work/nats$i.log" 2>&1 &
    pids+=($!)
    echo "nats$i: nats://127.0.0.1:$((4221 + i)) (pid $!)"
done
urls=nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224
# The tokens go in files only this user reads, never on a command line (`ps` shows those to
# every local user).
(umask 077 && printf '%s\n' cluster-secret > "$work/cluster-token" \
    && printf '%s\n' cluster-admin-token > "$work/admin-token")

# One node, restarted while it exits 5.
node() {
    local i=$1
    while true; do
        set +e
        "$botlist" serve --bind "127.0.0.1:$((8080 + i))" --replicate "$urls" \
            --node-id "node$i" --cluster-token-file "$work/cluster-token" \
            --admin-token-file "$work/admin-token" \
            --lease-ttl 3 --data-dir "$work/node$i" >> "$work/node$i.log" 2>&1 &
        local pid=$!
        echo "$pid" > "$work/node$i.pid"
        wait "$pid"
        local code=$?
        set -e
        if [ "$code" -ne 5 ]; then
            echo "node$i exited with $code" >&2
            return
        fi
        echo "node$i lost the writer's role (exit 5); starting it again" >&2
    done
}
for i in 1 2 3; do
    node "$i" &
    pids+=($!)
    echo "node$i: http://127.0.0.1:$((8080 + i))/api/v1 (pid file $work/node$i.pid, log $work/node$i.log)"
done
echo "waiting for a writer..."
for _ in $(seq 1 100); do
    for i in 1 2 3; do
        if curl -sf "http://127.0.0.1:$((8080 + i))/cluster/writer" > /dev/null 2>&1; then
            echo "node$i writes. Try: curl -s http://127.0.0.1:8082/cluster"
            wait
            exit 0
        fi
    done
    sleep 0.3
done
echo "no writer came up; see $work/*.log" >&2
exit 1

#!/usr/bin/env bash
# TLS handshakes per second wirepool sustains: `openssl s_time` opening new TLS
# 1.3 sessions (no resumption) against a PostgreSQL listener in direct-TLS mode
# for SECONDS (default 10). s_time offers no ALPN, so wirepool closes each
# connection right after its handshake: what is counted is the handshake.
# Usage: bench/tls_handshakes.sh [SECONDS]   (needs build/wirepool)
set -euo pipefail
seconds=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
bin=${WIREPOOL_BIN:-$here/../build/wirepool}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/wirepool.yaml" <<YAML
server: { state_dir: state, log: { level: error } }
tls: { generate: true }
listeners: [ { protocol: postgres, address: 127.0.0.1, port: $port } ]
users: [ { name: a, password: b } ]
databases: [ { name: d, driver: sqlite, connection: d.db } ]
YAML
"$bin" --config "$dir/wirepool.yaml" & pid=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
cpu0=$(awk '{print $14+$15}' /proc/$pid/stat)
out=$(openssl s_time -connect 127.0.0.1:$port -new -time "$seconds" 2>&1)
cpu1=$(awk '{print $14+$15}' /proc/$pid/stat)
# s_time prints "N connections in T real seconds" (its other line counts its own CPU time)
conns=$(echo "$out" | sed -n 's/^\([0-9]*\) connections in \([0-9.]*\) real seconds.*/\1 \2/p' | head -1)
n=${conns% *}; t=${conns#* }
ticks=$(getconf CLK_TCK)
python3 -c "import json; print(json.dumps({'handshakes': $n, 'seconds': $t, 'per_second': round($n/$t), 'wirepool_cpu_s': round(($cpu1-$cpu0)/$ticks, 2), 'wirepool_cpu_ms_per_handshake': round(1000*($cpu1-$cpu0)/$ticks/$n, 3)}))"

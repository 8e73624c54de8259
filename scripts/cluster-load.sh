#!/usr/bin/env bash
# Issue 15's spread, measured: a real redis-server and three `veil serve` nodes on 127.0.0.11-13
# sharing this machine (each told it has a third of the cores, server.max_sessions = auto, so
# each admits by its own learned headroom), and `veil load` ramping sessions through node 1's
# URL only. Tables per node and in total in out/cluster-load/. Env: STAGES (6,9,12,15),
# STAGE_SECONDS (20), MODE (bypass), INPUT (build/media/sample_720p30.ivf), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
out=out/cluster-load
mkdir -p "$out"
cores=$(nproc)
share=$(python3 -c "print(round($cores / 3, 2))")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no > "$out/redis.log" 2>&1 &
pids=($!)
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
sleep 0.5
urls=()
for i in 1 2 3; do
  veil_serve "$out/node-$i" "127.0.0.1$i" -- --rtp-address "127.0.0.1$i" --ice-address "127.0.0.1$i" \
    --redis "redis://127.0.0.1:$port" --node-id "node-$i" --cores "$share"
  pids+=("$server")
  urls+=("$url")
done
sleep 1.5  # every node has seen the others' heartbeats
echo "cluster-load: nodes ${urls[*]} ($share cores each), redis on $port"
"$veil" load --server "${urls[0]}" -i "${INPUT:-${BUILD_DIR:-build}/media/sample_720p30.ivf}" \
  --stages "${STAGES:-6,9,12,15}" --stage-seconds "${STAGE_SECONDS:-20}" --mode "${MODE:-bypass}" \
  --label "3 nodes via node 1" --all-stages --out "$out" || true
for i in 1 2 3; do curl -s "${urls[$((i - 1))]}/readyz" > "$out/node-$i-readyz.json"; done
kill -TERM "${pids[@]:1}" 2>/dev/null || true
wait "${pids[@]:1}" 2>/dev/null || true

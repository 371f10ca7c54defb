#!/usr/bin/env bash
# Puts llmload beside other streaming clients on one paced server, run by
# hand: the simulator (examples/simserver, fast profile: 100 tokens/s a
# stream) on one CPU, each client in turn on another, STREAMS streams of
# MAX_TOKENS-token completions in a closed loop for DURATION seconds, in
# ROUNDS interleaved rounds. For each run it prints the tokens the server
# generated (its vllm:generation_tokens_total), the client's CPU time
# (user + system, from /usr/bin/time) and their ratio, tokens per client
# CPU-second.
#
# The clients: llmload's, reading bodies on its pollers (poll), on a
# goroutine a stream (goroutine) and on net/http's transport (http)
# (internal/harness/clientbench); Node.js's fetch (node_client.mjs), if node is
# installed; and a Python asyncio client on aiohttp with the streaming loop
# of vLLM's benchmark client (aiohttp_client.py), if python3 has aiohttp
# (Debian: apt-get install python3-aiohttp).
#
#	STREAMS=64 DURATION=20 ROUNDS=3 internal/harness/clientbench/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
streams=${STREAMS:-64}
duration=${DURATION:-20}
rounds=${ROUNDS:-3}
max_tokens=${MAX_TOKENS:-256}
speed=${SPEED:-1}
here=internal/harness/clientbench

tmp=$(mktemp -d)
sim=""
cleanup() {
	[ -n "$sim" ] && kill "$sim" 2>/dev/null && wait "$sim" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/simserver" ./examples/simserver
go build -o "$tmp/clientbench" ./$here

server_cpu="" client_cpu=""
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	server_cpu="taskset -c 0" client_cpu="taskset -c 1"
fi
$server_cpu "$tmp/simserver" -addr 127.0.0.1:0 -profile fast -speed "$speed" 2>"$tmp/sim.log" &
sim=$!
for _ in $(seq 50); do
	addr=$(grep -o 'on http://[^ ]*' "$tmp/sim.log" | head -1 | sed 's|on http://||') || true
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { echo "the simulator did not start:"; cat "$tmp/sim.log"; exit 1; }
url="http://$addr/v1"

generated() {
	curl -s "http://$addr/metrics" | awk '/^vllm:generation_tokens_total/ {printf "%d", $2}'
}

clients=(llmload-poll llmload-goroutine llmload-http)
command -v node >/dev/null && clients+=(node)
python=""
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import aiohttp' 2>/dev/null; then python=$p && clients+=(aiohttp) && break; fi
done

run_client() {
	case $1 in
	llmload-*) "$tmp/clientbench" -url "$url" -streams "$streams" -duration "${duration}s" -max-tokens "$max_tokens" -read "${1#llmload-}" ;;
	node) node "$here/node_client.mjs" "$url" "$streams" "$duration" "$max_tokens" ;;
	aiohttp) "$python" "$here/aiohttp_client.py" "$url" "$streams" "$duration" "$max_tokens" ;;
	esac
}

echo "server: $url, fast profile at speed $speed; $streams streams of $max_tokens tokens; ${duration} s a run; $rounds rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %5s %14s %10s %16s\n' client round server-tokens client-cpu-s tokens/cpu-s
for round in $(seq "$rounds"); do
	for client in "${clients[@]}"; do
		before=$(generated)
		/usr/bin/time -f '%U %S' -o "$tmp/time" $client_cpu bash -c "$(declare -f run_client); tmp=$tmp url=$url streams=$streams duration=$duration max_tokens=$max_tokens here=$here python=$python run_client $client" >"$tmp/out" 2>&1 || {
			echo "$client failed:"; cat "$tmp/out"; continue
		}
		after=$(generated)
		read -r user sys <"$tmp/time"
		awk -v c="$client" -v r="$round" -v t=$((after - before)) -v u="$user" -v s="$sys" \
			'BEGIN { cpu = u + s; printf "%-18s %5d %14d %10.2f %16.0f\n", c, r, t, cpu, (cpu > 0 ? t / cpu : 0) }'
	done
done

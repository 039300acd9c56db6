#!/usr/bin/env bash
# Makes the stored results tests/golden.rs renders: one real run of each kind, against pelt's
# own server on 127.0.0.1. Run it only to replace them (a new kind, a new field), then bless
# the copies: PELT_BLESS=1 cargo test --test golden. Usage: tests/golden/make.sh [PELT]
set -euo pipefail
cd "$(dirname "$0")"
pelt="${1:-../../target/release/pelt}"
work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# `pelt serve ARGS` on a free port: its URL in $url.
serve() {
    "$pelt" serve --port 0 "$@" >"$work/serve.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 50); do
        url="$(sed -n 's/^listening on //p' "$work/serve.log" | head -1)"
        [ -n "$url" ] && return
        sleep 0.1
    done
    echo "pelt serve did not start" >&2
    exit 1
}
run() { "$pelt" "$@" -q >/dev/null; }

serve
run "$url/" -c 4 -t 1 -d 2s --json plain.json
run "$url/" --rate 400 -c 4 -t 1 -d 2s --warmup 1s --json open-loop.json
run "$url/" -c 4 -t 1 -d 2s --monitor listener --json monitored.json
for line in a:0 b:100 a:200 c:300; do
    printf '{"url": "%s/%s", "name": "%s", "t": %s}\n' "$url" "${line%%:*}" "${line%%:*}" "${line#*:}"
done >"$work/recording.jsonl"
run "$url/" --targets "$work/recording.jsonl" --replay --replay-loop --replay-speed 4 -c 2 -t 1 \
    -d 2s --json replay.json
cat >"$work/shop.yaml" <<'YAML'
scenarios:
  - flow:
      - get:
          url: /items
          name: items
          check:
            - status: 200
              name: listed
      - think: 5ms
      - post:
          url: /cart
          name: cart
          json: {"id": 1}
YAML
run "$url/" --scenario "$work/shop.yaml" -c 2 -t 1 -d 2s --json scenario.json
echo "the-token-of-the-golden-fleet-0" >"$work/token"
"$pelt" "$url/" --rate 200 -c 4 -d 2s --agents 2 --listen 127.0.0.1:0 --token-file "$work/token" \
    --json fleet.json >/dev/null 2>"$work/coord.log" &
coord=$!
for _ in $(seq 50); do
    addr="$(grep -o 'coordinator on [0-9.]*:[0-9]*' "$work/coord.log" | head -1 | cut -d' ' -f3)"
    [ -n "$addr" ] && break
    sleep 0.1
done
for rank in 0 1; do
    "$pelt" agent --coordinator "$addr" --token-file "$work/token" --rank "$rank" --agents 2 \
        -t 1 2>/dev/null &
    pids+=($!)
done
wait "$coord"

serve --sse 5 --sse-interval 20ms --sse-first 50ms
run "$url/" -c 2 -t 1 -d 2s --json sse.json
serve --ws
ws="${url/http:/ws:}"
run "$ws/" -b hello -c 2 -t 1 -d 2s --json websocket.json

#!/usr/bin/env bash
# pelt against wrk, oha, hey, autocannon and h2load on this machine: see bench/peers.py.
#
#   bench/peers.sh [--install] [peers.py options]
#
# --install first installs the peers from the package registries (Debian packages nginx,
# wrk, nghttp2-client for h2load, apache2-utils for ab; oha from crates.io; hey and vegeta from
# the Go module proxy; autocannon from npm) and builds wrk2 from github.com/giltene/wrk2 (no
# registry has it), then runs the comparison. Build pelt first: cargo build --release.
# bench/open_loop.py then finds wrk2 and vegeta on PATH (~/.local/bin, ~/go/bin).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--install" ]; then
    shift
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y -qq nginx-light wrk nghttp2-client apache2-utils linux-perf >/dev/null || true
    command -v oha >/dev/null || cargo install --locked oha
    command -v hey >/dev/null || GOBIN="${GOBIN:-$HOME/go/bin}" go install github.com/rakyll/hey@latest
    command -v autocannon >/dev/null || npm install -g autocannon
    # The open loop's peers (bench/open_loop.py): vegeta from the Go module proxy, and wrk2,
    # which no package registry carries, built from its public source.
    command -v vegeta >/dev/null || GOBIN="${GOBIN:-$HOME/go/bin}" go install github.com/tsenart/vegeta/v12@latest
    if ! command -v wrk2 >/dev/null; then
        $sudo apt-get install -y -qq git make gcc libssl-dev zlib1g-dev >/dev/null || true
        src="${XDG_CACHE_HOME:-$HOME/.cache}/pelt-bench/wrk2"
        if [ -d "$src/.git" ] || git clone -q https://github.com/giltene/wrk2 "$src"; then
            make -C "$src" -j"$(nproc)" >/dev/null && mkdir -p "$HOME/.local/bin" \
                && ln -sf "$src/wrk" "$HOME/.local/bin/wrk2" \
                || echo "wrk2 did not build in $src: bench/open_loop.py leaves it out" >&2
        else
            echo "github.com/giltene/wrk2 could not be cloned: bench/open_loop.py leaves wrk2 out" >&2
        fi
    fi
    export PATH="$PATH:${GOBIN:-$HOME/go/bin}:$HOME/.local/bin"
fi

exec python3 bench/peers.py "$@"

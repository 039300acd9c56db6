#!/usr/bin/env bash
# pelt against wrk, oha, hey, autocannon and h2load on this machine: see bench/peers.py.
#
#   bench/peers.sh [--install] [peers.py options]
#
# --install first installs the peers from the package registries (Debian packages nginx,
# wrk, nghttp2-client for h2load, apache2-utils for ab; oha from crates.io; hey from the Go module proxy;
# autocannon from npm), then runs the comparison. Build pelt first: cargo build --release.
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
    export PATH="$PATH:${GOBIN:-$HOME/go/bin}"
fi

exec python3 bench/peers.py "$@"

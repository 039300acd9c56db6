#!/bin/sh
# LuaJIT (JIT on and off, as pelt runs it) against Lua 5.4, on CPU 1, three times each.
set -e
cd "$(dirname "$0")"
cargo build --release -q --features luajit --target-dir target/luajit
cargo build --release -q --features lua54 --target-dir target/lua54
for i in 1 2 3; do
  printf 'luajit, JIT on:  '; taskset -c 1 target/luajit/release/lua-embed-bench
  printf 'luajit, JIT off: '; taskset -c 1 target/luajit/release/lua-embed-bench off
  printf 'lua 5.4:         '; taskset -c 1 target/lua54/release/lua-embed-bench
done

//! Nanoseconds per call of a wrk-style `request()` (a path and a header per call, the request
//! written by Lua's own string functions) from Rust through mlua, on the Lua mlua was built
//! with (`--features luajit` or `lua54`); `off` as the argument turns LuaJIT's JIT compiler off,
//! as pelt's script states run.
use mlua::{Function, Lua, Value};
use std::time::Instant;
fn main() {
    let jit_off = std::env::args().nth(1).as_deref() == Some("off");
    let lua = Lua::new();
    if jit_off {
        lua.load("if jit then jit.off() end").exec().unwrap();
    }
    lua.load(r#"
counter = 0
headers = { Host = "127.0.0.1:8080", ["X-Counter"] = 0 }
function request()
   local path = "/" .. counter
   headers["X-Counter"] = counter
   counter = counter + 1
   local t = { "GET ", path, " HTTP/1.1\r\n" }
   for k, v in pairs(headers) do t[#t + 1] = k .. ": " .. tostring(v) .. "\r\n" end
   t[#t + 1] = "\r\n"
   return table.concat(t)
end
"#).exec().unwrap();
    let f: Function = lua.globals().get("request").unwrap();
    let mut out = Vec::with_capacity(256);
    let n = 2_000_000;
    let t = Instant::now();
    for _ in 0..n {
        out.clear();
        if let Value::String(s) = f.call::<Value>(()).unwrap() {
            out.extend_from_slice(&s.as_bytes());
        }
    }
    println!("{:.0} ns per request() call", t.elapsed().as_nanos() as f64 / n as f64);
}

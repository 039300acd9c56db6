//! A second front end in a few lines: runs one load test through the library and prints the
//! report as JSON. Nothing here comes from the `pelt` binary.
//!
//! `cargo run --release -p pelt-load --example run -- [URL] [REQUESTS]`: with no URL it loads
//! pelt's built-in server, started on a free port; REQUESTS defaults to 10,000.

use pelt_load::{prepare, run, LoadSpec};
use std::sync::atomic::AtomicBool;

fn main() {
    let mut args = std::env::args().skip(1);
    let server = match args.next() {
        Some(_) => None,
        None => Some(pelt_server::Server::start(Default::default()).expect("built-in server")),
    };
    let url = match &server {
        Some(s) => format!("http://{}/", s.addr()),
        None => std::env::args().nth(1).expect("a URL"),
    };
    let mut spec = LoadSpec::new(url);
    spec.connections = 16;
    spec.requests = Some(
        args.next()
            .map_or(10_000, |n| n.parse().expect("a request count")),
    );
    let prepared = match prepare(&spec) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bad input: {e}");
            std::process::exit(2);
        }
    };
    let report = run(&prepared, &AtomicBool::new(false), &mut |second| {
        eprintln!("{:>6.0} requests/s", second.rps);
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).expect("a report serializes")
    );
    if let Some(s) = server {
        eprintln!("the built-in server answered {}", s.stop());
    }
}

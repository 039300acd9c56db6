//! `pelt demo`: the built-in server and a 3-second run against it, no setup.

use crate::args::Outputs;
use crate::run::{run_and_report, stop_flag, Prepared};
use crate::{bad, output};
use anyhow::{bail, Context, Result};
use pelt_load::LoadSpec;
use std::process::ExitCode;
use std::time::Duration;

pub fn demo() -> Result<ExitCode> {
    let server = pelt_server::Server::start(pelt_server::ServerConfig::default())
        .context("cannot start the built-in server")?;
    let url = format!("http://{}/", server.addr());
    eprintln!("pelt demo: the built-in server is on {url}; pelt loads it:");
    let spec = LoadSpec {
        connections: 32,
        duration: Some(Duration::from_secs(3)),
        threads: Some(1),
        ..LoadSpec::new(url)
    };
    let p = Prepared {
        run: pelt_load::prepare(&spec).map_err(bad)?,
        out: Outputs::default(),
        jsonl: None,
        quiet: false,
        agents: None,
    };
    let stop = stop_flag()?;
    let (code, report) = run_and_report(&p, &stop)?;
    let served = server.stop();
    println!(
        "\nThe built-in server answered {} requests; pelt counted {} complete responses \
         and {} in flight at the stop.",
        output::thousands(served),
        output::thousands(report.requests.completed),
        output::thousands(report.requests.in_flight),
    );
    println!("Point pelt at your own server:  pelt http://HOST:PORT/PATH -c 64 -d 10s");
    println!("Or serve a target yourself:     pelt serve --port 8080 --delay 5ms");
    println!("A report with charts:           pelt http://HOST:PORT/ -d 10s --html report.html");
    if served == 0 {
        bail!("the demo server answered no requests");
    }
    Ok(code)
}

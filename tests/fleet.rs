//! A run split over several processes (`pelt_engine::Slice`, what a fleet of agents is made
//! of): the slices' shares add up exactly to what one process would send. Each slice runs here
//! on its own thread, as an agent would in its own process, against one real server.

mod util;

use pelt_engine::{Config, IoBackend, Rate, RunResult, Slice};
use pelt_server::ServerConfig;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use util::*;

/// Runs `config` as slices of `threads[k]` workers each, all at once.
fn in_slices(config: &Config, threads: &[usize]) -> Vec<RunResult> {
    let workers = threads.iter().sum();
    let mut first = 0;
    let configs: Vec<Config> = threads
        .iter()
        .map(|&t| {
            let mut c = config.clone();
            c.threads = t;
            c.slice = Some(Slice { first, workers });
            c.slice
                .unwrap()
                .check(t, c.connections)
                .expect("a valid slice");
            first += t;
            c
        })
        .collect();
    std::thread::scope(|s| {
        let runs: Vec<_> = configs
            .iter()
            .map(|c| s.spawn(move || pelt_engine::run(c, &AtomicBool::new(false), &mut |_| {})))
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("a slice ran"))
            .collect()
    })
}

fn config(server: &pelt_server::Server) -> Config {
    let request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec();
    let mut config = Config::new(server.addr(), request);
    config.io = IoBackend::detect();
    config.timeout = Duration::from_secs(5);
    config
}

#[test]
fn a_request_count_split_over_slices_is_sent_exactly_once() {
    let (server, _) = serve(ServerConfig::default());
    let mut c = config(&server);
    c.requests = Some(1_000);
    c.duration = Some(Duration::from_secs(30));
    c.connections = 7;
    let runs = in_slices(&c, &[1, 2, 3]);
    let each: Vec<u64> = runs.iter().map(|r| r.stats.completed()).collect();
    assert_eq!(each.iter().sum::<u64>(), 1_000, "{each:?}");
    // Worker w of 6 takes share(1000, 6, w): 167 for the first four, 166 for the last two.
    assert_eq!(each, [167, 334, 499]);
    assert_eq!(server.stop(), 1_000);
}

#[test]
fn an_open_loop_rate_split_over_slices_holds_in_total() {
    let (server, _) = serve(ServerConfig::default());
    let mut c = config(&server);
    c.rate = Rate::per_second(2_000.0);
    c.duration = Some(Duration::from_secs(1));
    // Up to 10 connections a worker, so a due request never waits for a busy one (one that
    // waited past the end would not be sent, rightly).
    c.connections = 6;
    c.max_connections = 60;
    let runs = in_slices(&c, &[2, 2, 2]);
    // Request i of the schedule is due at i / 2000 s and goes to worker i mod 6: each slice
    // sends its third of the 2,000 due in the second, and nothing is sent twice.
    let sent: Vec<u64> = runs.iter().map(|r| r.stats.sent).collect();
    assert_eq!(sent.iter().sum::<u64>(), 2_000, "{sent:?}");
    assert!(sent.iter().all(|&n| n.abs_diff(667) <= 1), "{sent:?}");
    assert_eq!(server.stop(), 2_000);
}

#[test]
fn slices_that_do_not_fit_the_fleet_are_refused() {
    let slice = Slice {
        first: 4,
        workers: 6,
    };
    assert!(slice.check(2, 6).is_ok());
    assert!(slice
        .check(3, 6)
        .unwrap_err()
        .contains("not within the fleet's 6"));
    assert!(slice
        .check(2, 5)
        .unwrap_err()
        .contains("each of the fleet's 6 workers"));
    assert!(slice.check(0, 6).is_err());
}

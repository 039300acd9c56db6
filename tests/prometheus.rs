//! pelt's live metrics as Prometheus itself sees them: a real Prometheus (Debian's package,
//! started here on loopback, `.ci/run` installs it) scrapes a running pelt's
//! `--metrics-listen` endpoint once a second, and its HTTP API must then hold the same counts
//! as pelt's JSON result; and, with its remote-write receiver on, receives what pelt pushes
//! with `--metrics-push`. Outside CI a missing Prometheus skips the test with a line.

mod util;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use util::*;

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// A Prometheus process in a directory of its own, ended by its PID.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    addr: String,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` every second; `None` (skipped) where it is not
    /// installed, outside CI.
    fn start(test: &str, targets: &[String]) -> Option<Prometheus> {
        if !Path::new(PROMETHEUS).exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "Prometheus is missing (Debian package: prometheus); .ci/run installs it"
            );
            eprintln!("SKIPPED: Prometheus is not installed (Debian package: prometheus)");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("pelt-prom-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let mut config = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n".to_string();
        if !targets.is_empty() {
            config += &format!(
                "scrape_configs:\n  - job_name: pelt\n    static_configs:\n      - targets: [{}]\n",
                list.join(", ")
            );
        }
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new(PROMETHEUS)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, dir, addr };
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&p.addr, "/-/ready").0 != 200 {
            assert!(Instant::now() < deadline, "Prometheus did not get ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(p)
    }

    /// The last value Prometheus holds of `metric` for the series labelled run=`run`, if any.
    /// (`last_over_time`: once pelt has exited, a failed scrape marks its series stale, and a
    /// plain instant query finds nothing.)
    fn value(&self, metric: &str, run: &str) -> Option<f64> {
        let query = encode(&format!("last_over_time({metric}[5m])"));
        let (status, body) = get(&self.addr, &format!("/api/v1/query?query={query}"));
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"]
            .as_array()?
            .iter()
            .find(|r| r["metric"]["run"] == run)
            .and_then(|r| r["value"][1].as_str()?.parse().ok())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `text` percent-encoded for a query string (everything but the unreserved characters).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A plain HTTP GET: (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    // Prometheus answers chunked: the JSON is the body's one chunk.
    let body = match body.split_once("\r\n") {
        Some((size, rest)) if u64::from_str_radix(size.trim(), 16).is_ok() => rest
            .rsplit_once("\r\n0\r\n")
            .map_or(rest, |r| r.0)
            .to_string(),
        _ => body,
    };
    (status, body)
}

#[test]
fn prometheus_scrapes_a_run_and_stores_its_exact_counts() {
    let (server, url) = serve(pelt_server::ServerConfig::default());
    let port = free_port();
    let Some(prom) = Prometheus::start("scrape", &[format!("127.0.0.1:{port}")]) else {
        return;
    };
    let listen = port.to_string();
    let v = run_json(&[
        &url,
        "-d",
        "4s",
        "-c",
        "4",
        "--rate",
        "2000",
        "--metrics-listen",
        &listen,
        "--metrics-linger",
        "4s",
        "--metrics-run",
        "scraped",
    ]);
    let completed = count(&v, &["requests", "completed"]);
    assert!(completed > 0);
    // pelt has gone: the next scrape fails and marks its series stale. What Prometheus holds
    // must still be right (the queries below read the last values, as a dashboard would).
    std::thread::sleep(Duration::from_secs(2));
    // The last scrapes, during the linger, saw the final values.
    wait_value(
        &prom,
        "pelt_requests_completed_total",
        "scraped",
        completed as f64,
    );
    let sent = count(&v, &["requests", "sent"]) as f64;
    assert_eq!(
        prom.value("pelt_requests_sent_total", "scraped"),
        Some(sent)
    );
    assert_eq!(
        prom.value("pelt_latency_seconds_count", "scraped"),
        Some(completed as f64)
    );
    assert_eq!(prom.value("pelt_run_finished", "scraped"), Some(1.0));
    // The counts a worker keeps only as totals, taken once a second: codes, bytes, lag.
    assert_eq!(
        prom.value("pelt_responses_total", "scraped"),
        Some(completed as f64),
        "every response was a 200"
    );
    let bytes = count(&v, &["bytes", "received"]) as f64;
    assert_eq!(
        prom.value("pelt_received_bytes_total", "scraped"),
        Some(bytes)
    );
    assert_eq!(prom.value("pelt_lag_seconds_count", "scraped"), Some(sent));
    assert!(prom
        .value("pelt_lag_last_second_seconds", "scraped")
        .is_some());
    assert_eq!(
        prom.value("pelt_target_rate_requests_per_second", "scraped"),
        Some(2000.0)
    );
    // Prometheus read every family without complaint: its own scrape health says so.
    let (_, targets) = get(&prom.addr, "/api/v1/targets");
    assert!(!targets.contains("\"lastError\":\"expected"), "{targets}");
    // The server saw every completed request (and perhaps some in flight at the end).
    let served = server.stop();
    assert!(served >= completed && served as f64 <= sent, "{served}");
}

/// Polls `metric` for run=`run` until it is `want` (bounded), for values that arrive late.
fn wait_value(prom: &Prometheus, metric: &str, run: &str, want: f64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stored = prom.value(metric, run);
        if stored == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus holds {metric} = {stored:?}, pelt's JSON says {want}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn prometheus_receives_remote_writes_with_the_exact_counts() {
    let (server, url) = serve(pelt_server::ServerConfig::default());
    let Some(prom) = Prometheus::start("push", &[]) else {
        return;
    };
    let push = format!("http://{}/api/v1/write", prom.addr);
    // A short run: only pushes carry it (nothing scrapes), and the last push its final values.
    let v = run_json(&[
        &url,
        "-n",
        "3000",
        "-c",
        "4",
        "--metrics-push",
        &push,
        "--metrics-run",
        "pushed",
    ]);
    let completed = count(&v, &["requests", "completed"]);
    assert_eq!(completed, 3000);
    wait_value(&prom, "pelt_requests_completed_total", "pushed", 3000.0);
    wait_value(&prom, "pelt_latency_seconds_count", "pushed", 3000.0);
    wait_value(&prom, "pelt_run_finished", "pushed", 1.0);
    assert_eq!(server.stop(), 3000);
    // Per target name (--targets): each name's counts, as the JSON's `targets` has them.
    let (server, url) = serve(pelt_server::ServerConfig::default());
    let dir = std::env::temp_dir().join(format!("pelt-prom-{}-targets", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("targets.jsonl");
    std::fs::write(
        &file,
        format!("{{\"url\":\"{url}a\",\"name\":\"home\"}}\n{{\"url\":\"{url}b\",\"name\":\"cart\"}}\n{{\"url\":\"{url}b\",\"name\":\"cart\"}}\n"),
    )
    .unwrap();
    let v = run_json(&[
        "--targets",
        file.to_str().unwrap(),
        "-n",
        "3000",
        "-c",
        "4",
        "--metrics-push",
        &push,
        "--metrics-run",
        "named",
    ]);
    for t in v["targets"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let metric = format!("pelt_target_requests_completed_total{{name=\"{name}\"}}");
        wait_value(
            &prom,
            &metric,
            "named",
            t["completed"].as_u64().unwrap() as f64,
        );
    }
    assert_eq!(v["targets"][1]["completed"], 2000);
    assert_eq!(server.stop(), 3000);
    std::fs::remove_dir_all(&dir).unwrap();
    // A receiver that refuses: the run goes on, and says so once at the end.
    let (server, url) = serve(pelt_server::ServerConfig::default());
    let (out, _) = run(&[
        &url,
        "-n",
        "100",
        "--metrics-push",
        &format!("http://{}/not-here", prom.addr),
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("of the pushes failed; the first: HTTP 404"),
        "{err}"
    );
    assert_eq!(server.stop(), 100);
}

/// Every query of the Grafana dashboard (deploy/grafana/pelt.json) finds data of run `run`,
/// over the last minute, as Grafana asks.
fn assert_dashboard_finds(prom: &Prometheus, run: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/pelt.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 6);
    for panel in panels {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"]
                .as_str()
                .unwrap()
                .replace("$run", run)
                .replace("$__rate_interval", "10s");
            let end = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let path = format!(
                "/api/v1/query_range?query={}&start={}&end={end}&step=1",
                encode(&expr),
                end - 60
            );
            let (status, body) = get(&prom.addr, &path);
            assert_eq!(status, 200, "{expr}: {body}");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            let found = v["data"]["result"].as_array().map_or(0, Vec::len);
            assert!(
                found > 0,
                "panel {:?}: {expr} found nothing",
                panel["title"]
            );
        }
    }
}

#[test]
fn a_fleet_coordinator_serves_the_fleet_and_each_agent() {
    let (server, url) = serve(pelt_server::ServerConfig::default());
    let (port, monitored_port) = (free_port(), free_port());
    let Some(prom) = Prometheus::start(
        "fleet",
        &[
            format!("127.0.0.1:{port}"),
            format!("127.0.0.1:{monitored_port}"),
        ],
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("pelt-prom-{}-token", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "prometheus-fleet-token-0123").unwrap();
    let t = token.to_str().unwrap();
    let listen = port.to_string();
    let coord = spawn(&[
        &url,
        "--agents",
        "2",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        t,
        "--rate",
        "1000",
        "-d",
        "4s",
        "-c",
        "4",
        "--metrics-listen",
        &listen,
        "--metrics-linger",
        "4s",
        "--metrics-run",
        "fleet",
        "--json",
        "-",
        "-q",
    ]);
    // Beside the fleet, a plain run with --monitor (this test's process serves): the
    // dashboard's resource panels read its series.
    let me = std::process::id().to_string();
    let monitored_listen = monitored_port.to_string();
    let monitored = spawn(&[
        &url,
        "--rate",
        "500",
        "-d",
        "4s",
        "-c",
        "2",
        "--monitor",
        &me,
        "--metrics-listen",
        &monitored_listen,
        "--metrics-linger",
        "4s",
        "--metrics-run",
        "monitored",
        "-q",
    ]);
    // The coordinator says where it listens (port 0), then the agents join.
    let mut coord = coord;
    let mut err = std::io::BufReader::new(coord.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    let addr = line
        .split("coordinator on ")
        .nth(1)
        .and_then(|r| r.split(": ").next())
        .unwrap()
        .to_string();
    let agents: Vec<_> = (0..2)
        .map(|r| {
            spawn(&[
                "agent",
                "--coordinator",
                &addr,
                "--rank",
                &r.to_string(),
                "--agents",
                "2",
                "--token-file",
                t,
                "-t",
                "1",
                "-q",
            ])
        })
        .collect();
    let (out, _) = wait_bounded(coord, CHILD_LIMIT);
    assert!(out.status.success(), "coordinator: {:?}", out.status);
    for a in agents {
        wait_bounded(a, CHILD_LIMIT);
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let completed = count(&v, &["requests", "completed"]) as f64;
    std::thread::sleep(Duration::from_secs(2));
    // The fleet's own series (no agent label) hold the merged count; each agent's its own.
    let query = encode("last_over_time(pelt_requests_completed_total{run=\"fleet\"}[5m])");
    let (_, body) = get(&prom.addr, &format!("/api/v1/query?query={query}"));
    let r: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut fleet = None;
    let mut agents_sum = 0.0;
    let mut agents_seen = 0;
    for s in r["data"]["result"].as_array().unwrap() {
        let value: f64 = s["value"][1].as_str().unwrap().parse().unwrap();
        match s["metric"]["agent"].as_str() {
            None => fleet = Some(value),
            Some(_) => {
                agents_sum += value;
                agents_seen += 1;
            }
        }
    }
    assert_eq!(fleet, Some(completed), "{body}");
    assert_eq!((agents_seen, agents_sum), (2, completed), "{body}");
    let (out, _) = wait_bounded(monitored, CHILD_LIMIT);
    assert!(out.status.success(), "monitored run: {:?}", out.status);
    // Every panel finds one run's data or the other's (the resource panels the monitored
    // run's, the agents' panel the fleet's), as Grafana shows with both runs chosen.
    assert_dashboard_finds(&prom, "fleet|monitored");
    let served = server.stop() as f64;
    assert!(served >= completed);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_metrics_address_is_bad_input() {
    let (server, url) = serve(pelt_server::ServerConfig::default());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().to_string();
    for (args, says) in [
        (
            vec![url.as_str(), "-n", "10", "--metrics-listen", "localhost:x"],
            "expected a port",
        ),
        (
            vec![url.as_str(), "-n", "10", "--metrics-listen", &busy],
            "cannot listen on --metrics-listen",
        ),
        (
            vec![url.as_str(), "-n", "10", "--metrics-linger", "5s"],
            "--metrics-listen",
        ),
        (
            vec![url.as_str(), "-n", "10", "--metrics-push", "ftp://x/"],
            "expected an http:// or https:// URL",
        ),
        (
            vec![url.as_str(), "-n", "10", "--metrics-push", "nonsense"],
            "not a URL",
        ),
        (
            vec![url.as_str(), "-n", "10", "--metrics-run", "x"],
            "give one",
        ),
    ] {
        assert_bad_input(&args, says);
    }
    assert_eq!(server.stop(), 0);
}

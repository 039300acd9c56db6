//! `--monitor`: the server's processes, the host and pelt sampled each second beside the load,
//! and the verdict on what limited the run. Against nginx from Debian pinned to one CPU (its
//! CPU as pelt sampled it agrees with the kernel's own accounting of its processes over the
//! run, and a saturating run is judged CPU-bound) and against `pelt serve --delay` (nothing
//! saturated: latency-bound).

mod util;

use std::process::Command;
use util::real::*;
use util::*;

/// Clock ticks (user + system) of `pid` and every process descended from it, from /proc.
fn ticks_of_tree(pid: u32) -> u64 {
    let stats: Vec<(u32, u32, u64)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the command name (in parentheses): state, ppid, ... utime (14), stime (15).
            let (head, rest) = text.rsplit_once(") ")?;
            let f: Vec<&str> = rest.split(' ').collect();
            let me = head.split(' ').next()?.parse().ok()?;
            let ppid = f[1].parse().ok()?;
            let ticks = f[11].parse::<u64>().ok()? + f[12].parse::<u64>().ok()?;
            Some((me, ppid, ticks))
        })
        .collect();
    let mut tree = vec![pid];
    let mut k = 0;
    while k < tree.len() {
        let parent = tree[k];
        tree.extend(stats.iter().filter(|s| s.1 == parent).map(|s| s.0));
        k += 1;
    }
    stats
        .iter()
        .filter(|s| tree.contains(&s.0))
        .map(|s| s.2)
        .sum()
}

/// The tests here judge the whole machine's CPU: one at a time.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `pelt serve` answering after `delay`, as a child process: it, its URL and its PID.
fn sleeping_server(delay: &str) -> (ServeProcess, String, String) {
    served(&["--port", "0", "--delay", delay])
}

/// `pelt serve ARGS`, its URL and its PID.
fn served(args: &[&str]) -> (ServeProcess, String, String) {
    let (serve, url) = ServeProcess::listening(args);
    let pid = serve.pid().to_string();
    (serve, url, pid)
}

/// The resources of a run of `seconds` against `url` (8 connections, one thread), the
/// server `pid` monitored.
fn monitored_run(url: &str, pid: &str, seconds: &str) -> serde_json::Value {
    run_json(&[
        &format!("{url}/"),
        "-c",
        "8",
        "-t",
        "1",
        "-d",
        seconds,
        "--monitor",
        pid,
    ])
}

/// The host's mean busy share of its cores over the run.
fn host_busy(r: &serde_json::Value) -> f64 {
    let host = &r["host"];
    host["cpu_busy_mean"].as_f64().unwrap() / host["cores"].as_f64().unwrap()
}

/// nginx (one worker) on CPU 0, answering 200 "OK" on one port, with `directives` (given its
/// directory) in its `http` block; `None` where nginx is missing outside CI.
fn pinned_nginx(
    name: &'static str,
    directives: impl Fn(&std::path::Path) -> String,
) -> Option<RealServer> {
    let bin = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"])?;
    Some(RealServer::start(name, 1, |dir, ports| {
        let http = format!(
            "{}
    server {{
        listen 127.0.0.1:{} backlog=4096;
        location / {{ return 200 \"OK\"; }}
    }}
",
            directives(dir),
            ports[0]
        );
        // The command nginx_command builds, run by taskset on CPU 0.
        let nginx = nginx_command(&bin, dir, &http);
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", "0"])
            .arg(nginx.get_program())
            .args(nginx.get_args());
        cmd
    }))
}

/// The JSON result of pelt run with `args` on CPU 1 alone (the servers here are on CPU 0).
fn pelt_on_cpu_1(args: &[&str]) -> serde_json::Value {
    let child = Command::new("taskset")
        .args(["-c", "1", env!("CARGO_BIN_EXE_pelt")])
        .args(args)
        .args(["--json", "-", "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (out, _) = util::wait_bounded(child, CHILD_LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn nginx_pinned_to_one_cpu_is_judged_cpu_bound_and_its_cpu_is_the_kernels() {
    let _alone = alone();
    // nginx writes each request to its access log: a few microseconds of its CPU that cost
    // pelt nothing, so the server saturates well before pelt's one worker does.
    let Some(server) = pinned_nginx("nginx-monitor", |dir| {
        format!(
            "    access_log {}/access.log;\n    keepalive_requests 1000000000;",
            dir.display()
        )
    }) else {
        return;
    };
    let master = server.child.id();
    let before = ticks_of_tree(master);
    let pid = master.to_string();
    let csv = server.dir.join("timeline.csv");
    let v = run_json(&[
        &server.url("http", 0),
        "-c",
        "16",
        "--pipeline",
        "16",
        "-t",
        "1",
        "-d",
        "3s",
        "--monitor",
        &pid,
        "--csv",
        csv.to_str().unwrap(),
        "--expect",
        "server_cpu>50%",
        "--expect",
        "server_rss<1GiB",
    ]);
    let after = ticks_of_tree(master);
    assert_schema(&v);
    let r = &v["resources"];
    eprintln!("{r}");
    assert_eq!(r["monitored"], format!("PID {master}: 2 processes"), "{r}");
    // nginx fills its core, unless something else on the machine took part of it meanwhile
    // (then the verdict says the machine's cores ran out).
    let expected = if host_busy(r) >= 0.9 && server_share(r) < 0.9 {
        "host-cpu"
    } else {
        "server-cpu"
    };
    assert_eq!(r["verdict"]["bottleneck"], expected, "{r}");
    assert_eq!(r["server"]["cpu_capacity"], 1.0, "{r}");
    assert!(
        r["server"]["rss_peak_bytes"].as_u64().unwrap() > 1 << 20,
        "{r}"
    );
    assert!(r["host"]["cores"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(thresholds_held(&v), [true, true], "{}", v["thresholds"]);
    // The CPU pelt sampled, second by second, is the kernel's count over the run.
    let sampled: f64 = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = &p["resources"]["server"];
            (s["cpu_user"].as_f64().unwrap() + s["cpu_system"].as_f64().unwrap())
                * p["length_s"].as_f64().unwrap()
        })
        .sum();
    let kernel = (after - before) as f64 / ticks_per_second();
    assert!(
        (sampled - kernel).abs() <= 0.05 * kernel + 0.05,
        "sampled {sampled:.3} s of CPU, the kernel counted {kernel:.3} s"
    );
    // CPU-us per request: the server's CPU over the responses.
    let per_request = r["server"]["cpu_us_per_request"].as_f64().unwrap();
    let completed = count(&v, &["requests", "completed"]) as f64;
    assert!(
        (per_request * completed / 1e6 - sampled).abs() <= 0.05 * sampled + 0.05,
        "{per_request} us x {completed}"
    );
    // The CSV's server_cpu column, second by second.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "server_cpu").unwrap();
    assert_eq!(header.len(), 59, "{header:?}");
    for (line, point) in lines.zip(v["timeline"].as_array().unwrap()) {
        let cell: f64 = line.split(',').nth(col).unwrap().parse().unwrap();
        let s = &point["resources"]["server"];
        let cpu = s["cpu_user"].as_f64().unwrap() + s["cpu_system"].as_f64().unwrap();
        assert!((cell - cpu).abs() < 0.001, "{line}");
    }
}

#[test]
fn a_server_that_sleeps_is_judged_latency_bound() {
    let _alone = alone();
    let (serve, url, pid) = sleeping_server("50ms");
    let v = monitored_run(&url, &pid, "2s");
    let r = &v["resources"];
    // Nothing saturated, unless something else filled the machine's cores meanwhile (then
    // that is what the verdict says).
    let expected = if host_busy(r) >= 0.9 {
        "host-cpu"
    } else {
        "latency"
    };
    assert_eq!(r["verdict"]["bottleneck"], expected, "{r}");
    assert!(r["server"]["cpu_mean"].as_f64().unwrap() < 0.5, "{r}");
    // The closed loop's rate is its connections' at the server's latency: 8 x 50 ms, 160/s.
    if expected == "latency" {
        let cap = r["verdict"]["connection_cap_per_s"].as_f64().unwrap();
        assert!(cap > 100.0 && cap <= 160.0, "{r}");
        let rps = v["rps"].as_f64().unwrap();
        assert!(rps <= cap * 1.05, "{rps} over the cap: {r}");
    }
    // pelt's own CPU, and each worker's, are in every second (but the last: the points of
    // the run's end come when the workers have ended).
    let timeline = v["timeline"].as_array().unwrap();
    for p in &timeline[..timeline.len() - 1] {
        let pelt = &p["resources"]["pelt"];
        assert_eq!(pelt["workers"].as_array().unwrap().len(), 1, "{p}");
        assert!(pelt["threads"].as_u64().unwrap() >= 2, "{p}");
    }
    let (out, _) = run(&[&format!("{url}/"), "-c", "4", "-d", "1s", "--monitor", &pid]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  Bottleneck   "), "{text}");
    assert!(text.contains("  Server       PID "), "{text}");
    serve.stop();
}

/// One pelt thread against nginx, every request on a new connection: the client's connect
/// and close cost it more than nginx's accept and answer cost nginx, so pelt's worker (on CPU
/// 1) fills its core while nginx (on CPU 0) has CPU to spare, and the verdict says pelt.
#[test]
fn one_pelt_thread_opening_a_connection_per_request_is_judged_pelt_bound() {
    let _alone = alone();
    let Some(server) = pinned_nginx("nginx-close", |_| "    access_log off;".into()) else {
        return;
    };
    let master = server.child.id().to_string();
    let url = server.url("http", 0);
    let v = pelt_on_cpu_1(&[
        &url,
        "--no-keepalive",
        "-c",
        "32",
        "-t",
        "1",
        "-d",
        "3s",
        "--monitor",
        &master,
    ]);
    let r = &v["resources"];
    eprintln!("{r}");
    // pelt's worker fills its core, unless something else on the machine took part of it
    // meanwhile (then the verdict says the machine's cores ran out).
    let worker = r["pelt"]["worker_peak"].as_f64().unwrap();
    let expected = if host_busy(r) >= 0.9 && worker < 0.9 {
        "host-cpu"
    } else {
        "pelt"
    };
    assert_eq!(r["verdict"]["bottleneck"], expected, "{r}");
    let server = &r["server"];
    assert!(
        server["cpu_mean"].as_f64().unwrap() < 0.9 * server["cpu_capacity"].as_f64().unwrap(),
        "{r}"
    );
    // The client's CPU per request is more than the server's.
    assert!(
        r["pelt"]["cpu_us_per_request"].as_f64().unwrap()
            > server["cpu_us_per_request"].as_f64().unwrap(),
        "{r}"
    );
}

/// `pelt serve --burn`: a handler busy on the CPU, one server thread; pelt's worker waits on
/// it, so the server is what ran out, and each request cost it at least what it burned.
#[test]
fn a_server_that_burns_cpu_is_judged_cpu_bound() {
    let _alone = alone();
    let (serve, url, pid) = served(&["--port", "0", "--threads", "1", "--burn", "300us"]);
    let v = monitored_run(&url, &pid, "3s");
    let r = &v["resources"];
    // The server's one thread fills its core, unless something else on the machine took part
    // of it meanwhile (then the verdict says the machine's cores ran out).
    let share = r["server"]["cpu_mean"].as_f64().unwrap();
    let expected = if host_busy(r) >= 0.9 && share < 0.9 {
        "host-cpu"
    } else {
        "server-cpu"
    };
    assert_eq!(r["verdict"]["bottleneck"], expected, "{r}");
    assert_eq!(r["server"]["cpu_capacity"], 1.0, "{r}");
    // /proc counts in 10 ms ticks: a few per cent either way over three seconds.
    let per_request = r["server"]["cpu_us_per_request"].as_f64().unwrap();
    assert!(per_request > 300.0 * 0.95, "{r}");
    serve.stop();
}

#[test]
fn a_monitor_that_matches_nothing_is_one_line_before_any_traffic() {
    let (server, url) = serve(pelt_server::ServerConfig::default());
    assert_bad_input(
        &[&url, "-n", "10", "--monitor", "2147483647"],
        "--monitor: no process has the ID 2147483647",
    );
    assert_bad_input(
        &[&url, "-n", "10", "--monitor", "no-such-server-here"],
        "--monitor: no process is named \"no-such-server-here\"",
    );
    assert_bad_input(&[&url, "-n", "10", "--monitor=-5"], "is no process ID");
    assert_bad_input(
        &["http://127.0.0.1:1/", "-n", "10", "--monitor", "listener"],
        "--monitor listener: nothing on this machine listens on port 1",
    );
    assert_bad_input(
        &[&url, "-n", "10", "--expect", "server_rss<10%"],
        "a size is bytes",
    );
    // A remote monitor that does not answer, one whose token differs, and no token at all.
    let dir = std::env::temp_dir().join(format!("pelt-monitor-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ours, theirs) = (dir.join("ours"), dir.join("theirs"));
    std::fs::write(&ours, "the-token-of-this-run-0123").unwrap();
    std::fs::write(&theirs, "the-token-of-another-fleet").unwrap();
    let ours = ours.to_str().unwrap();
    assert_bad_input(
        &[
            &url,
            "-n",
            "10",
            "--monitor-remote",
            "127.0.0.1:1",
            "--token-file",
            ours,
        ],
        "--monitor-remote: the monitor at 127.0.0.1:1 does not answer",
    );
    let mut monitor = Killed(
        pelt()
            .args(["monitor", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&theirs)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let addr = listening_on(&mut monitor.0);
    assert_bad_input(
        &[
            &url,
            "-n",
            "10",
            "--monitor-remote",
            &addr,
            "--token-file",
            ours,
        ],
        "does not prove this run's fleet token",
    );
    assert_bad_input_without_token(
        &[&url, "-n", "10", "--monitor-remote", &addr],
        "--monitor-remote needs the fleet's token",
    );
    drop(monitor);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(server.stop(), 0);
}

/// The address a `pelt monitor` says it listens on, from its first line on stderr.
fn listening_on(monitor: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(monitor.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.split_whitespace()
        .nth(3)
        .unwrap_or_default()
        .trim_end_matches(',')
        .to_string()
}

/// A full listen queue: a socket with a backlog of 1 that never accepts, under a burst of 64
/// connections. The kernel refuses what does not fit, and the seconds show it.
#[test]
fn a_full_listen_queue_shows_as_overflows() {
    let _alone = alone();
    use rustix::net::{bind, listen, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    bind(&fd, &std::net::SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    listen(&fd, 1).unwrap();
    let listener = std::net::TcpListener::from(fd);
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // This test's process holds the socket: it is the "server".
    let pid = std::process::id().to_string();
    let (out, _) = run(&[
        &url,
        "-c",
        "64",
        "-t",
        "1",
        "-d",
        "2s",
        "--connect-timeout",
        "300ms",
        "--monitor",
        &pid,
        "--json",
        "-",
        "-q",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let overflows = |p: &serde_json::Value| p["resources"]["host"]["listen_overflows"].as_u64();
    let seconds: Vec<u64> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(overflows)
        .collect();
    assert!(seconds.iter().sum::<u64>() > 0, "{seconds:?}");
    assert_eq!(
        v["resources"]["host"]["listen_overflows"].as_u64(),
        Some(seconds.iter().sum::<u64>()),
        "the run's total is its seconds' (no warm-up)"
    );
    drop(listener);
}

/// The verdict's parties, tightest first: `bottleneck`, then `also`.
fn limits(r: &serde_json::Value) -> Vec<String> {
    let v = &r["verdict"];
    std::iter::once(&v["bottleneck"])
        .chain(v["also"].as_array().into_iter().flatten())
        .map(|b| b.as_str().unwrap().to_string())
        .collect()
}

/// The server's mean CPU as a share of what it could use.
fn server_share(r: &serde_json::Value) -> f64 {
    let s = &r["server"];
    s["cpu_mean"].as_f64().unwrap() / s["cpu_capacity"].as_f64().unwrap()
}

/// An open loop at twice what a CPU-bound server serves (one thread burning 1 ms a request:
/// 1,000/s): every connection waits on the server, requests queue in pelt behind them, and
/// the queue is the server's, not pelt's (pelt's worker has most of its core free).
#[test]
fn an_open_loop_past_a_cpu_bound_servers_capacity_is_the_servers_verdict() {
    let _alone = alone();
    let (serve, url, pid) = served(&["--port", "0", "--threads", "1", "--burn", "1ms"]);
    let v = run_json(&[
        &format!("{url}/"),
        "--rate",
        "2000",
        "-c",
        "20",
        "-t",
        "1",
        "-d",
        "3s",
        "--monitor",
        &pid,
    ]);
    let r = &v["resources"];
    assert_schema(&v);
    // The server's thread fills its core; where something else on the machine took part of it
    // meanwhile, the machine's cores ran out instead, and the verdict says that.
    let expected = if host_busy(r) >= 0.9 && server_share(r) < 0.9 {
        "host-cpu"
    } else {
        "server-cpu"
    };
    assert_eq!(r["verdict"]["bottleneck"], expected, "{r}");
    assert!(!limits(r).contains(&"pelt".to_string()), "{r}");
    // The queue is the evidence: nearly every request started late.
    let queued = r["verdict"]["queued"].as_f64().unwrap();
    assert!(queued >= 0.5, "{r}");
    let notes = v["notes"].to_string();
    if expected == "server-cpu" {
        assert!(
            notes.contains("held by the server, which was at its CPU limit"),
            "{notes}"
        );
        assert!(
            r["verdict"]["evidence"]
                .as_str()
                .unwrap()
                .contains("more connections would move the queue into the server"),
            "{r}"
        );
    }
    assert!(!notes.contains("pelt, not the server"), "{notes}");
    serve.stop();
}

/// nginx with one worker (CPU 0) against one pelt thread (CPU 1) in a closed loop of 64
/// connections: both fill their cores, or nearly. The verdict names every party at its limit,
/// tightest first: the server's CPU whenever it filled its core, pelt beside it when its
/// worker did too; never one that was not at its limit.
#[test]
fn nginx_and_pelt_both_at_their_limit_are_both_named() {
    let _alone = alone();
    let Some(server) = pinned_nginx("nginx-both", |_| {
        "    access_log off;\n    keepalive_requests 1000000000;".into()
    }) else {
        return;
    };
    let master = server.child.id().to_string();
    let url = server.url("http", 0);
    let v = pelt_on_cpu_1(&[
        &url,
        "-c",
        "64",
        "-t",
        "1",
        "-d",
        "3s",
        "--monitor",
        &master,
    ]);
    assert_schema(&v);
    let r = &v["resources"];
    eprintln!("{r}");
    let named = limits(r);
    let worker = r["pelt"]["worker_peak"].as_f64().unwrap();
    let server = server_share(r);
    // Each named party was at (or, for a median second against a mean, near) its limit.
    for party in &named {
        match party.as_str() {
            "server-cpu" => assert!(server >= 0.8, "{r}"),
            "pelt" => assert!(worker >= 0.9, "{r}"),
            // The machine's two cores full while neither process filled its own.
            "host-cpu" => assert!(host_busy(r) >= 0.85 && named.len() == 1, "{r}"),
            other => panic!("{other} named: {r}"),
        }
    }
    // A server clearly at its limit is named; so is pelt beside it when its worker filled
    // its core in every second.
    if server >= 0.95 {
        assert!(named.contains(&"server-cpu".to_string()), "{r}");
    }
    if named.len() == 2 {
        let evidence = r["verdict"]["evidence"].as_str().unwrap();
        assert!(evidence.contains("; and "), "{r}");
    }
}

/// pelt (two threads) and a CPU-bound server (two threads) left to share the machine's two
/// cores: the cores are full, while neither the server nor pelt's busiest worker uses all it
/// could (each may use both cores). The machine is the limit; a server that does take 90% of
/// both cores is judged by its own CPU instead.
#[test]
fn pelt_and_a_server_sharing_the_cores_are_judged_host_cpu() {
    let _alone = alone();
    let (serve, url, pid) = served(&["--port", "0", "--threads", "2", "--burn", "10us"]);
    let v = run_json(&[
        &format!("{url}/"),
        "-c",
        "64",
        "-t",
        "2",
        "-d",
        "3s",
        "--monitor",
        &pid,
    ]);
    assert_schema(&v);
    let r = &v["resources"];
    eprintln!("{r}");
    // What the figures allow (the verdict reads the median second, the summary the mean and
    // the busiest second, so near a threshold either side is right).
    let worker = r["pelt"]["worker_peak"].as_f64().unwrap();
    let mut allowed = vec![];
    if server_share(r) >= 0.85 {
        allowed.push("server-cpu");
    }
    if worker >= 0.85 {
        allowed.push("pelt");
    }
    if host_busy(r) >= 0.85 {
        allowed.push("host-cpu");
    }
    let verdict = r["verdict"]["bottleneck"].as_str().unwrap();
    assert!(allowed.contains(&verdict), "{verdict} of {allowed:?}: {r}");
    if verdict == "host-cpu" {
        let evidence = r["verdict"]["evidence"].as_str().unwrap();
        assert!(evidence.contains("they share too few cores"), "{r}");
    }
    serve.stop();
}

/// An open loop of 2,000/s over 10 connections to a server that answers after 20 ms: the
/// connections carry 500/s at most, neither CPU is busy, and the verdict says the connections
/// with their cap (what raising -c lifts). Without --monitor, the note says the same of the
/// connections and leaves the server's part open.
#[test]
fn an_open_loop_past_what_its_connections_carry_is_judged_connection_bound() {
    let _alone = alone();
    let (serve, url, pid) = sleeping_server("20ms");
    let url = format!("{url}/");
    let args = [
        url.as_str(),
        "--rate",
        "2000",
        "-c",
        "10",
        "-t",
        "1",
        "-d",
        "3s",
    ];
    let mut monitored = args.to_vec();
    monitored.extend(["--monitor", &pid]);
    let v = run_json(&monitored);
    assert_schema(&v);
    let r = &v["resources"];
    // Where something else filled the machine's cores meanwhile, that is the verdict.
    let expected = if host_busy(r) >= 0.9 {
        "host-cpu"
    } else {
        "connections"
    };
    assert_eq!(limits(r), [expected], "{r}");
    if expected == "connections" {
        // 10 connections of 20 ms and a little more each: at most 500/s.
        let cap = r["verdict"]["connection_cap_per_s"].as_f64().unwrap();
        assert!(cap > 300.0 && cap <= 500.0, "{r}");
        let evidence = r["verdict"]["evidence"].as_str().unwrap();
        assert!(evidence.contains("10 connections x "), "{r}");
        assert!(evidence.contains("raise -c or --max-connections"), "{r}");
    }
    assert!(r["verdict"]["queued"].as_f64().unwrap() >= 0.5, "{r}");
    let plain = run_json(&args);
    let notes = plain["notes"].to_string();
    assert!(
        notes.contains("every connection was busy (10 connections x "),
        "{notes}"
    );
    assert!(notes.contains("--monitor tells which"), "{notes}");
    serve.stop();
}

/// A slow open loop (20/s, Poisson) against a stream that lasts half a second: a few requests
/// start late while the connections open, and a lag of milliseconds is small against latency
/// of half a second. Neither is a queue: no note blames pelt, and the verdict is not pelt's.
#[test]
fn a_few_late_requests_against_long_streams_are_no_queue() {
    let _alone = alone();
    let (serve, url, pid) = served(&[
        "--port",
        "0",
        "--sse",
        "40",
        "--sse-interval",
        "10ms",
        "--sse-first",
        "100ms",
    ]);
    let v = run_json(&[
        &format!("{url}/"),
        "--rate",
        "20",
        "--arrival",
        "poisson",
        "-c",
        "50",
        "-d",
        "3s",
        "--monitor",
        &pid,
    ]);
    let r = &v["resources"];
    assert!(r["verdict"]["queued"].is_null(), "{r}");
    assert!(!limits(r).contains(&"pelt".to_string()), "{r}");
    let notes = v["notes"].to_string();
    assert!(!notes.contains("queued in pelt"), "{notes}");
    serve.stop();
}

/// `pelt compare --monitor`: the server's CPU per request and peak RSS beside each row, the
/// HTTP.SYS matrix's two columns, as medians of the runs.
#[test]
fn compare_shows_the_servers_cpu_per_request_and_memory() {
    let _alone = alone();
    // Two servers; `--monitor listener` watches each target's own: the one sending 100 KB
    // bodies spends more CPU per request than the one sending 2 bytes.
    let (serve, url, _) = sleeping_server("0ms");
    let mut big = ServeProcess::start(&["--port", "0", "--body-size", "100000"]);
    let big_url = big
        .line()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let dir = std::env::temp_dir().join(format!("pelt-monitor-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("cmp.json");
    let (out, _) = run(&[
        "compare",
        "--target",
        &format!("small={url}/"),
        "--target",
        &format!("big={big_url}/"),
        "--vary",
        "connections=2,8",
        "-d",
        "1s",
        "-t",
        "1",
        "--monitor",
        "listener",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("| non-2xx | server CPU/req | server RSS | bottleneck |"),
        "{table}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut per_target: std::collections::BTreeMap<String, Vec<(String, f64)>> = Default::default();
    for row in doc["rows"].as_array().unwrap() {
        let m = &row["median"];
        let cpu = m["server_cpu_us_per_request"].as_f64().unwrap();
        assert!(cpu > 0.0, "{m}");
        assert!(m["server_rss_peak_bytes"].as_f64().unwrap() > 1e6, "{m}");
        for run in row["runs"].as_array().unwrap() {
            assert!(run["server_cpu_us_per_request"].as_f64().is_some(), "{run}");
        }
        // The row's verdict is one of its runs' (each judged as a single run's is).
        let verdict = row["bottleneck"].as_str().unwrap();
        assert!(
            row["runs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["bottleneck"] == verdict),
            "{row}"
        );
        assert!(table.contains(&format!(" | {verdict} |")), "{table}");
        let target = row["target"].as_str().unwrap().to_string();
        let connections = row["settings"]["connections"].to_string();
        per_target
            .entry(connections)
            .or_default()
            .push((target, cpu));
    }
    // Like with like: at each number of connections (a server's CPU per request falls as
    // concurrency rises, as it wakes less often a request).
    assert_eq!(per_target.len(), 2, "{per_target:?}");
    for rows in per_target.values() {
        let of = |name: &str| rows.iter().find(|(t, _)| t == name).map(|r| r.1);
        let (small, big_cpu) = (of("small").unwrap(), of("big").unwrap());
        assert!(big_cpu > small, "{per_target:?}");
    }
    big.stop();
    std::fs::remove_dir_all(&dir).unwrap();
    serve.stop();
}

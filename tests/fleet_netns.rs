//! The fleet across a network, as Kubernetes would place it, on one machine: every host in a
//! network namespace of its own (the target, nginx from Debian; the coordinator; each agent),
//! joined by veth pairs to a bridge that lives in one more namespace, so nothing touches the
//! machine's own network. The agents are started through the environment an Indexed Job
//! gives them (`JOB_COMPLETION_INDEX`, `PELT_AGENTS`, `PELT_COORDINATOR`, and the token in
//! `PELT_FLEET_TOKEN`, as from a Secret), not flags.
//!
//! Needs root (namespaces), iproute2 and nginx; `.ci/run` has them. Elsewhere a missing piece
//! skips the test with a line saying so; under CI it fails it.

mod util;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use util::*;

const TOKEN: &str = "netns-fleet-token-0123456789";
const NGINX: &str = "/usr/sbin/nginx";
const TCPDUMP: &str = "/usr/bin/tcpdump";

/// Whether this machine can run the lab; outside CI a missing piece skips the test.
fn lab_possible() -> bool {
    let root = rustix::process::geteuid().is_root();
    let ip = Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    let nginx = Path::new(NGINX).exists();
    if root && ip && nginx {
        return true;
    }
    let why = format!("needs root ({root}), iproute2 ({ip}) and nginx ({nginx})");
    assert!(std::env::var_os("CI").is_none(), "the fleet lab {why}");
    eprintln!("SKIPPED: the fleet lab {why}");
    false
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Hosts on one bridge, each in its own namespace, on 10.213.N.0/24.
struct Lab {
    prefix: String,
    subnet: String,
    hosts: Vec<String>,
    dir: PathBuf,
    nginx: Option<Child>,
}

impl Lab {
    /// A lab with `agents` agent hosts, a coordinator host and a server host.
    fn new(agents: usize) -> Lab {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let id = std::process::id() % 100_000;
        let prefix = format!("pelt{id}x{n}");
        let dir = std::env::temp_dir().join(&prefix);
        std::fs::create_dir_all(&dir).unwrap();
        let mut lab = Lab {
            subnet: format!("10.213.{}", (id as u32 * 7 + n) % 250),
            prefix,
            hosts: Vec::new(),
            dir,
            nginx: None,
        };
        let sw = lab.ns("sw");
        ip(&["netns", "add", &sw]);
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &sw, "link", "set", "br0", "up"]);
        lab.add_host("srv", 2);
        lab.add_host("coord", 3);
        for r in 0..agents {
            lab.add_host(&format!("a{r}"), 10 + r as u32);
        }
        lab
    }

    fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    fn addr(&self, last: u32) -> String {
        format!("{}.{last}", self.subnet)
    }

    fn add_host(&mut self, host: &str, last: u32) {
        let (ns, sw) = (self.ns(host), self.ns("sw"));
        ip(&["netns", "add", &ns]);
        self.hosts.push(ns.clone());
        let port = format!("p{last}");
        ip(&[
            "link", "add", "eth0", "netns", &ns, "type", "veth", "peer", "name", &port, "netns",
            &sw,
        ]);
        ip(&["-n", &sw, "link", "set", &port, "master", "br0", "up"]);
        let cidr = format!("{}/24", self.addr(last));
        ip(&["-n", &ns, "addr", "add", &cidr, "dev", "eth0"]);
        ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
    }

    /// A command run inside `host`'s namespace.
    fn command(&self, host: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(host), program]);
        c
    }

    /// nginx on the server host, port 8080, one worker, its access log in the lab's directory.
    fn start_nginx(&mut self) -> String {
        let d = self.dir.display();
        let addr = self.addr(2);
        let http = format!(
            "    access_log {d}/access.log;
    keepalive_requests 1000000000;
    server {{
        listen {addr}:8080;
        location / {{ return 200 \"OK\"; }}
    }}
"
        );
        let conf = util::real::nginx_conf(&self.dir, &http);
        std::fs::write(self.dir.join("nginx.conf"), conf).unwrap();
        let child = self
            .command("srv", NGINX)
            .arg("-p")
            .arg(&self.dir)
            .arg("-c")
            .arg(self.dir.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        self.nginx = Some(child);
        // Ready when it accepts, from the coordinator's host.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = self
                .command("coord", "bash")
                .args(["-c", &format!("exec 3<>/dev/tcp/{addr}/8080")])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                break;
            }
            assert!(Instant::now() < deadline, "nginx did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        format!("http://{addr}:8080/")
    }

    /// Lines in nginx's access log: the requests it served.
    fn served(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("access.log")).map_or(0, |t| t.lines().count() as u64)
    }

    /// Waits (at most 30 s) until nginx has served `n` requests: the fleet is running.
    fn wait_served(&self, n: u64) {
        let started = Instant::now();
        while self.served() < n {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the fleet never started"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The coordinator on its host, listening on its address, port 7070.
    fn coordinator(&self, url: &str, agents: u32, args: &[&str]) -> Child {
        let token = self.dir.join("token");
        std::fs::write(&token, TOKEN).unwrap();
        let listen = format!("{}:7070", self.addr(3));
        let n = agents.to_string();
        self.command("coord", env!("CARGO_BIN_EXE_pelt"))
            .args([url, "--agents", &n, "--listen", &listen])
            .arg("--token-file")
            .arg(&token)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the coordinator")
    }

    /// Agent `rank` on its host, configured as an Indexed Job's pod is.
    fn agent(&self, rank: u32, agents: u32, token: &str, args: &[&str]) -> Child {
        self.command(&format!("a{rank}"), env!("CARGO_BIN_EXE_pelt"))
            .args(["agent", "-t", "1"])
            .args(args)
            .env("JOB_COMPLETION_INDEX", rank.to_string())
            .env("PELT_AGENTS", agents.to_string())
            .env("PELT_COORDINATOR", format!("{}:7070", self.addr(3)))
            .env("PELT_FLEET_TOKEN", token)
            .env_remove("PELT_FLEET_TOKEN_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start an agent")
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(mut c) = self.nginx.take() {
            let pid = rustix::process::Pid::from_child(&c);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let _ = c.wait();
        }
        for ns in self.hosts.iter().chain(std::iter::once(&self.ns("sw"))) {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// What a run said: its stderr, and with `-q --json -` the agents its result lists as lost
/// (a quiet coordinator prints nothing of them).
fn stderr_of(out: &std::process::Output) -> String {
    let lost = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .map(|v| v["fleet"]["lost"].to_string())
        .unwrap_or_default();
    format!("{}; lost: {lost}", String::from_utf8_lossy(&out.stderr))
}

#[test]
fn three_hosts_send_exactly_n_counted_by_nginx_and_merged_exactly() {
    if !lab_possible() {
        return;
    }
    let mut lab = Lab::new(3);
    let url = lab.start_nginx();
    let merged = lab.path("merged.json");
    let coord = lab.coordinator(
        &url,
        3,
        &["-n", "30000", "-c", "30", "--json", &merged, "-q"],
    );
    let outs: Vec<String> = (0..3)
        .map(|r| lab.path(&format!("agent{r}.json")))
        .collect();
    let agents: Vec<Child> = (0..3)
        .map(|r| lab.agent(r, 3, TOKEN, &["--json", &outs[r as usize], "-q"]))
        .collect();
    let (out, _) = wait_bounded(coord, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    for a in agents {
        let (out, _) = wait_bounded(a, CHILD_LIMIT);
        assert!(out.status.success(), "{}", stderr_of(&out));
    }
    // nginx's own count.
    assert_eq!(lab.served(), 30_000);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_invariant(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 30_000);
    let agents = v["fleet"]["agents"].as_array().unwrap();
    for (r, a) in agents.iter().enumerate() {
        assert_eq!(
            a["address"].as_str().unwrap().split(':').next(),
            Some(lab.addr(10 + r as u32).as_str())
        );
        assert_eq!(a["requests"]["completed"], 10_000);
        assert!(a["start_skew_ms"].is_number(), "{a}");
    }
    assert!(v["fleet"]["start_spread_ms"].is_number());
    // Reported, not asserted (timings are the benchmarks' business): the agents' start skew.
    eprintln!(
        "start skew: max {} ms, spread {} ms",
        v["fleet"]["start_skew_max_ms"], v["fleet"]["start_spread_ms"]
    );
    // Equal to `pelt merge` of the agents' own results.
    assert_is_merge_of(&v, &outs);
}

#[test]
fn an_open_loop_fleet_holds_its_rate_within_one_percent() {
    if !lab_possible() {
        return;
    }
    let mut lab = Lab::new(3);
    let url = lab.start_nginx();
    let coord = lab.coordinator(
        &url,
        3,
        &[
            "--rate", "3000", "-d", "3s", "-c", "60", "--json", "-", "-q",
        ],
    );
    // Not quiet: an agent that stops early says why on stderr.
    let agents: Vec<Child> = (0..3).map(|r| lab.agent(r, 3, TOKEN, &[])).collect();
    let (out, _) = wait_bounded(coord, CHILD_LIMIT);
    // What each agent said (why one stopped, when the run lost it: this test has lost an agent
    // "after second 0" under a loaded CI, twice, and never here).
    let said: Vec<String> = agents
        .into_iter()
        .enumerate()
        .map(|(r, a)| {
            let (o, _) = wait_bounded(a, CHILD_LIMIT);
            format!(
                "agent {r} ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .collect();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}; agents: {said:?}",
        stderr_of(&out)
    );
    let served = lab.served();
    assert!(
        served.abs_diff(9_000) <= 90,
        "nginx served {served} of 9,000 due"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["fleet"]["start_skew_max_ms"].is_number());
}

#[test]
fn a_killed_agent_host_is_named_and_a_dead_coordinator_stops_every_agent() {
    if !lab_possible() {
        return;
    }
    let mut lab = Lab::new(3);
    let url = lab.start_nginx();
    // kill -9 one agent mid-run: the coordinator names it and exits 4 within 10 s.
    let coord = lab.coordinator(
        &url,
        3,
        &["--rate", "300", "-d", "60s", "-c", "3", "--json", "-"],
    );
    let mut agents: Vec<Child> = (0..3).map(|r| lab.agent(r, 3, TOKEN, &[])).collect();
    lab.wait_served(300);
    agents[2].kill().unwrap();
    let killed = Instant::now();
    let (out, _) = wait_bounded(coord, Duration::from_secs(30));
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "{:?}",
        killed.elapsed()
    );
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("agent 2 (") && err.contains(&lab.addr(12)),
        "{err}"
    );
    for a in agents.into_iter().take(2) {
        wait_bounded(a, Duration::from_secs(15));
    }
    // A dead coordinator: each agent stops within 5 s, and nginx sees no more requests.
    let mut lab = Lab::new(2);
    let url = lab.start_nginx();
    let mut coord = lab.coordinator(&url, 2, &["--rate", "300", "-d", "60s", "-c", "2"]);
    let agents: Vec<Child> = (0..2).map(|r| lab.agent(r, 2, TOKEN, &[])).collect();
    lab.wait_served(300);
    coord.kill().unwrap();
    let _ = coord.wait();
    let killed = Instant::now();
    for a in agents {
        let (out, _) = wait_bounded(a, Duration::from_secs(20));
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "{:?}",
            killed.elapsed()
        );
        assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    }
    let after = lab.served();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        lab.served(),
        after,
        "requests went on after every agent stopped"
    );
}

#[test]
fn an_agent_with_the_wrong_token_is_refused() {
    if !lab_possible() {
        return;
    }
    let mut lab = Lab::new(1);
    let url = lab.start_nginx();
    let coord = lab.coordinator(&url, 1, &["-n", "100", "--join-timeout", "3s"]);
    let a = lab.agent(0, 1, "a-token-the-fleet-does-not-use", &[]);
    let (out, _) = wait_bounded(a, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr_of(&out).contains("does not know the fleet token"),
        "{}",
        stderr_of(&out)
    );
    let (out, _) = wait_bounded(coord, CHILD_LIMIT);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!("refused the agent at {}:", lab.addr(10))),
        "{err}"
    );
    assert!(err.contains("missing (rank 0)"), "{err}");
    assert_eq!(lab.served(), 0);
}

/// A capture on the bridge (tcpdump, where a machine in the middle would listen) during a
/// fleet run: the run's header and body cross the control channel to every agent, and none of
/// it is in clear there, while the same capture sees them in the agents' HTTP to nginx.
#[test]
fn a_capture_on_the_bridge_holds_no_header_value_of_the_run() {
    if !lab_possible() {
        return;
    }
    if !Path::new(TCPDUMP).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the capture test needs tcpdump"
        );
        eprintln!("SKIPPED: the capture test needs tcpdump");
        return;
    }
    let mut lab = Lab::new(2);
    let url = lab.start_nginx();
    // tcpdump on the switch (its bridge's ports, the wire between the hosts): the control
    // channel, and the HTTP.
    let capture = |port: u16| {
        let file = lab.path(&format!("port{port}.pcap"));
        let c = lab
            .command("sw", TCPDUMP)
            .args(["-i", "any", "--immediate-mode", "-B", "32768"])
            .args(["-U", "-s", "0", "-w", &file])
            .args(["tcp", "port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tcpdump");
        (Killed(c), file)
    };
    let (mut control, control_file) = capture(7070);
    let (mut http, http_file) = capture(8080);
    // tcpdump says "listening on any" once it captures.
    for t in [&mut control, &mut http] {
        let err = std::io::BufReader::new(t.0.stderr.as_mut().unwrap());
        let said = std::io::BufRead::lines(err).map_while(Result::ok).take(3);
        let said: Vec<String> = said
            .take_while(|l| !l.contains("listening on any"))
            .collect();
        assert!(said.len() < 3, "tcpdump: {said:?}");
    }
    let secret = "Bearer c4pture-me-if-you-can";
    let body = "body-that-only-the-agents-should-read";
    let header = format!("Authorization: {secret}");
    let coord = lab.coordinator(
        &url,
        2,
        &[
            "-n", "200", "-c", "2", "-m", "POST", "-H", &header, "--body", body, "-q",
        ],
    );
    let agents: Vec<Child> = (0..2).map(|r| lab.agent(r, 2, TOKEN, &["-q"])).collect();
    let (out, _) = wait_bounded(coord, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    for a in agents {
        let (out, _) = wait_bounded(a, CHILD_LIMIT);
        assert!(out.status.success(), "{}", stderr_of(&out));
    }
    assert_eq!(lab.served(), 200);
    // Stopped (SIGTERM, by its PID), tcpdump writes what it holds and counts what it saw.
    std::thread::sleep(Duration::from_millis(300));
    for mut t in [control, http] {
        let pid = rustix::process::Pid::from_child(&t.0);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = t.0.wait();
        let mut said = String::new();
        let _ = std::io::Read::read_to_string(t.0.stderr.as_mut().unwrap(), &mut said);
        eprintln!("tcpdump: {}", said.trim().replace('\n', "; "));
    }
    let holds = |file: &str, needle: &str| {
        let bytes = std::fs::read(file).unwrap();
        (
            bytes.len(),
            bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
        )
    };
    let (size, clear) = holds(&control_file, secret);
    // The channel did cross the bridge (two handshakes, the run, the seconds, the results).
    assert!(size > 8 << 10, "only {size} bytes captured on port 7070");
    assert!(
        !clear,
        "the header value crossed the control channel in clear"
    );
    assert!(
        !holds(&control_file, body).1,
        "the body crossed the control channel in clear"
    );
    assert!(!holds(&control_file, "Authorization").1);
    // The same capture reads the HTTP the agents send: it would have seen the channel's too.
    assert!(holds(&http_file, secret).1 && holds(&http_file, body).1);
}

/// `pelt monitor` on the server's host (its own namespace): it watches nginx there and streams
/// each second to the run on another host over the fleet's channel. Killed mid-run, it is named
/// and the run completes without it.
#[test]
fn a_remote_monitor_streams_the_server_hosts_seconds_and_its_loss_is_named() {
    if !lab_possible() {
        return;
    }
    let mut lab = Lab::new(0);
    let url = lab.start_nginx();
    // `ip netns exec` execs nginx: the child is nginx's master.
    let master = lab.nginx.as_ref().unwrap().id().to_string();
    let token = lab.path("token");
    std::fs::write(&token, TOKEN).unwrap();
    let at = format!("{}:7071", lab.addr(2));
    let monitor = || {
        let mut m = Killed(
            lab.command("srv", env!("CARGO_BIN_EXE_pelt"))
                .args(["monitor", &master, "--listen", &at, "--token-file", &token])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start pelt monitor"),
        );
        // Listening once it says so.
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(m.0.stderr.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert!(line.contains("2 processes"), "{line}");
        m
    };
    let run = |seconds: &str| {
        lab.command("coord", env!("CARGO_BIN_EXE_pelt"))
            .args([
                &url, "-d", seconds, "-c", "4", "-t", "1", "--json", "-", "-q",
            ])
            .args(["--monitor-remote", &at, "--token-file", &token])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the run")
    };

    let m = monitor();
    let (out, _) = wait_bounded(run("3s"), CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&v);
    let r = &v["resources"];
    assert_eq!(
        r["monitored"],
        format!(
            "PID {master}: 2 processes on {} (pelt monitor at {at})",
            host_name()
        ),
        "{r}"
    );
    assert!(r["lost"].is_null(), "{r}");
    // Every second came with the server's processes and its host; the bytes nginx's host took
    // in are what the run's host sent out (each host counts its own namespace's interfaces).
    let points = v["timeline"].as_array().unwrap();
    assert!(points.len() >= 3, "{points:?}");
    let (mut sent, mut taken) = (0u64, 0u64);
    for p in points {
        let res = &p["resources"];
        assert_eq!(res["server"]["processes"], 2, "{p}");
        assert!(res["server_host"]["cores"].as_u64().unwrap() >= 1, "{p}");
        sent += res["host"]["net_tx_bytes"].as_u64().unwrap();
        taken += res["server_host"]["net_rx_bytes"].as_u64().unwrap();
    }
    assert!(sent > 100_000, "{sent}");
    assert!(
        taken.abs_diff(sent) * 10 < sent,
        "the server's host took in {taken} bytes, the run's sent {sent}"
    );
    assert!(
        r["server_host"]["net_rx_bytes"].as_u64().unwrap() > 0,
        "{r}"
    );

    // Killed two seconds into a six-second run: named, and the run goes on to its end.
    let child = run("6s");
    lab.wait_served(lab.served() + 1000);
    std::thread::sleep(Duration::from_secs(2));
    drop(m);
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&v);
    let lost = v["resources"]["lost"].as_str().unwrap_or_default();
    assert!(
        lost.starts_with(&format!("the monitor at {at} ")),
        "{}",
        v["resources"]
    );
    assert!(
        v["notes"].as_array().unwrap().iter().any(|n| n == lost),
        "{}",
        v["notes"]
    );
    assert_eq!(v["stopped_by"], "duration");
    let with: Vec<bool> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["resources"]["server"].is_object())
        .collect();
    assert!(with[0] && !with[with.len() - 1], "{with:?}");
}

/// The name the lab's hosts give (they share this machine's UTS namespace).
fn host_name() -> String {
    pelt_load::fleet::host_name()
}

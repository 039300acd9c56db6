//! A run split over several processes (`pelt_engine::Slice`, what a fleet of agents is made
//! of): the slices' shares add up exactly to what one process would send. Each slice runs here
//! on its own thread, as an agent would in its own process, against one real server.

mod util;

use pelt_engine::{Config, IoBackend, Load, Rate, RunResult, Slice};
use pelt_server::ServerConfig;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
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
    c.duration = Some(Duration::from_secs(1));
    // Up to 10 connections a worker, so a due request never waits for a busy one (one that
    // waited past the end would not be sent, rightly).
    c.connections = 6;
    c.load = Load::open(Rate::per_second(2_000.0).expect("a rate"), 60);
    let runs = in_slices(&c, &[2, 2, 2]);
    // Request i of the schedule is due at i / 2000 s and goes to worker i mod 6: each slice
    // sends its third of the 2,000 due in the second, and nothing is sent twice.
    // (A request due just before the end on a machine busy with other tests may still wait
    // for a connection when the run ends: it is then in the backlog, never sent. One due in
    // the last millisecond, the late threshold, is in neither, by design: at 2,000 a second
    // that is at most 2 of them.)
    let sent: Vec<u64> = runs.iter().map(|r| r.stats.sent).collect();
    let due: Vec<u64> = runs
        .iter()
        .map(|r| r.stats.sent + r.backlog_at_end)
        .collect();
    let last_ms = 2_000 * pelt_stats::LATE_THRESHOLD_US / 1_000_000;
    let total = due.iter().sum::<u64>();
    assert!((2_000 - last_ms..=2_000).contains(&total), "{due:?}");
    assert!(
        due.iter().all(|&n| n.abs_diff(667) <= 1 + last_ms),
        "{due:?}"
    );
    // Every request ended one way: a response, an error, or in flight at the stop.
    for r in &runs {
        let s = &r.stats;
        assert_eq!(
            s.sent,
            s.completed() + s.errors.total() + s.in_flight,
            "{s:?}"
        );
    }
    // A response completed is one the server counted; a request sent in the run's last instant
    // reaches a server thread that a busy machine may not have run yet: wait for those
    // (bounded). A request started on a connection still opening when the run stopped is sent
    // but may never reach the server: the server counts at most what was sent.
    let sent = sent.iter().sum::<u64>();
    let completed: u64 = runs.iter().map(|r| r.stats.completed()).sum();
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.served() < sent && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let served = server.stop();
    assert!(
        served >= completed && served <= sent,
        "served {served}, completed {completed}, sent {sent}"
    );
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

// ---- The fleet as its users run it: `pelt URL ... --agents N` and `pelt agent`, as
// processes on loopback. (tests/fleet_netns.rs runs them as hosts in network namespaces.)

use std::io::BufRead;
use std::process::{Child, Stdio};
use std::sync::mpsc;

/// A file holding a token, in a directory of this test's own.
fn token_file(test: &str, token: &str) -> String {
    let dir = std::env::temp_dir().join(format!("pelt-fleet-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path.display().to_string()
}

const TOKEN: &str = "test-token-0123456789abcdef";

/// A coordinator process on 127.0.0.1:0; its stderr lines come on `lines`.
struct Coord {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    addr: String,
}

impl Coord {
    fn start(url: &str, agents: u32, token: &str, extra: &[&str]) -> Coord {
        Coord::start_in(None, url, agents, token, extra)
    }

    /// As [`Coord::start`], in the folder `cwd` when given.
    fn start_in(
        cwd: Option<&std::path::Path>,
        url: &str,
        agents: u32,
        token: &str,
        extra: &[&str],
    ) -> Coord {
        let n = agents.to_string();
        let mut command = pelt();
        if let Some(dir) = cwd {
            command.current_dir(dir);
        }
        let mut child = command
            .args([
                url,
                "--agents",
                &n,
                "--listen",
                "127.0.0.1:0",
                "--token-file",
                token,
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the coordinator");
        let (tx, lines) = mpsc::channel();
        let err = std::io::BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for l in err.lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut c = Coord {
            child,
            lines,
            seen: Vec::new(),
            addr: String::new(),
        };
        let line = c.wait_for("coordinator on ");
        c.addr = line
            .split("coordinator on ")
            .nth(1)
            .and_then(|r| r.split(':').take(2).collect::<Vec<_>>().join(":").into())
            .unwrap();
        c.addr = c.addr.trim_end_matches(':').to_string();
        c
    }

    /// Waits (at most 30 s) for a stderr line containing `what` (one seen already counts).
    fn wait_for(&mut self, what: &str) -> String {
        if let Some(l) = self.seen.iter().find(|l| l.contains(what)) {
            return l.clone();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(what) {
                        return l;
                    }
                }
                Err(_) => panic!("no line with {what:?}; stderr so far: {:#?}", self.seen),
            }
        }
    }

    /// Starts agents 0 .. n with `args`.
    fn agents(&self, n: u32, token: &str, args: &[&str]) -> Vec<Child> {
        (0..n)
            .map(|r| agent(&self.addr, r, n, token, args))
            .collect()
    }

    /// Starts agents 0 .. n, each writing its own result to `dir/agent{rank}.json`; returns
    /// those files and the agents.
    fn agents_with_json(
        &self,
        n: u32,
        token: &str,
        dir: &std::path::Path,
    ) -> (Vec<String>, Vec<Child>) {
        let outs: Vec<String> = (0..n)
            .map(|r| dir.join(format!("agent{r}.json")).display().to_string())
            .collect();
        let agents = (0..n)
            .map(|r| {
                let json = ["--json", &outs[r as usize], "-q"];
                agent(&self.addr, r, n, token, &json)
            })
            .collect();
        (outs, agents)
    }

    /// Waits for the exit (bounded); returns the exit code, stdout and all of stderr.
    fn finish(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let (out, _) = wait_bounded(self.child, limit);
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into(),
            self.seen.join("\n"),
        )
    }
}

/// `pelt agent` with `args`, its rank in the environment as an Indexed Job gives it.
fn agent(coord: &str, rank: u32, agents: u32, token: &str, args: &[&str]) -> Child {
    agent_in(None, coord, rank, agents, token, args)
}

/// As [`agent`], in the folder `cwd` when given.
fn agent_in(
    cwd: Option<&std::path::Path>,
    coord: &str,
    rank: u32,
    agents: u32,
    token: &str,
    args: &[&str],
) -> Child {
    let mut command = pelt();
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    command
        .args([
            "agent",
            "--coordinator",
            coord,
            "--token-file",
            token,
            "-t",
            "1",
        ])
        .args(args)
        .env("JOB_COMPLETION_INDEX", rank.to_string())
        .env("PELT_AGENTS", agents.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn an agent")
}

/// Checks `v` against docs/result-schema.json.
fn assert_schema(v: &serde_json::Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/result-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Waits for each agent (bounded); each exits 0.
fn agents_succeed(agents: Vec<Child>) {
    for a in agents {
        let (out, _) = wait_bounded(a, CHILD_LIMIT);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn json_file(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// HTTP/3 in a fleet (2 agents against caddy): exactly -n, each agent's QUIC counts and
/// handshakes added up in the merged result, which is `pelt merge` of theirs, and caddy's log
/// holds every request.
#[test]
fn a_fleet_over_http3_sends_exactly_n_and_adds_up_quic() {
    let Some(server) = util::h3::caddy("") else {
        return;
    };
    let url = server.url("https", 0);
    let token = token_file("h3", TOKEN);
    let dir = std::path::Path::new(&token).parent().unwrap().to_path_buf();
    let merged = dir.join("merged.json").display().to_string();
    let coord = Coord::start(
        &url,
        2,
        &token,
        &[
            "--http3",
            "--insecure",
            "-n",
            "2000",
            "-c",
            "4",
            "--streams",
            "8",
            "--json",
            &merged,
            "-q",
        ],
    );
    let (outs, agents) = coord.agents_with_json(2, &token, &dir);
    let (code, _, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    agents_succeed(agents);
    let v = json_file(std::path::Path::new(&merged));
    assert_invariant(&v);
    assert_schema(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 2000, "{v}");
    assert_eq!(v["http"], "3");
    let parts: Vec<serde_json::Value> = outs.iter().map(|o| json_file(o.as_ref())).collect();
    for k in ["datagrams_sent", "packets_sent", "datagrams_received"] {
        let sum: u64 = parts.iter().map(|p| count(p, &["quic", k])).sum();
        assert!(sum > 0, "{k}");
        assert_eq!(count(&v, &["quic", k]), sum, "{k}");
    }
    let handshakes =
        count(&v, &["tls_handshakes", "full"]) + count(&v, &["tls_handshakes", "resumed"]);
    assert_eq!(handshakes, count(&v, &["connections_opened"]), "{v}");
    assert_is_merge_of(&v, &outs);
    assert_eq!(util::h3::caddy_h3_requests(&server, 2000).len(), 2000);
}

#[test]
fn three_agents_send_exactly_n_and_the_result_is_the_merge_of_theirs() {
    let (server, url) = serve(ServerConfig::default());
    let token = token_file("exact", TOKEN);
    let dir = std::path::Path::new(&token).parent().unwrap().to_path_buf();
    let merged = dir.join("merged.json");
    let m = merged.display().to_string();
    let html = dir.join("merged.html");
    let h = html.display().to_string();
    let coord = Coord::start(
        &url,
        3,
        &token,
        &["-n", "30000", "-c", "6", "--json", &m, "--html", &h, "-q"],
    );
    let (outs, agents) = coord.agents_with_json(3, &token, &dir);
    let (code, _, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    agents_succeed(agents);
    assert_eq!(server.stop(), 30_000);
    let v = json_file(&merged);
    assert_invariant(&v);
    assert_schema(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 30_000);
    assert_eq!(v["connections"], 6);
    assert_eq!(v["requests_limit"], 30_000);
    // Each agent's part: 10,000 (one worker of three each).
    let fleet = &v["fleet"];
    let agents = fleet["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 3);
    for (r, a) in agents.iter().enumerate() {
        assert_eq!(a["rank"], r as u64);
        assert_eq!(a["state"], "finished");
        assert_eq!(a["requests"]["completed"], 10_000);
        assert_eq!(a["first_worker"], r as u64);
        assert!(a["start_skew_ms"].as_f64().is_some(), "{a}");
    }
    assert!(fleet["start_spread_ms"].as_f64().is_some());
    // The coordinator's result is `pelt merge` of the agents' own.
    assert_is_merge_of(&v, &outs);
    // The HTML report lists the agents.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2>Agents (3, started within"),
        "no agents table"
    );
    for r in 0..3 {
        assert!(
            page.contains(&format!("<td>{r}: ")),
            "agent {r} missing from the page"
        );
    }
    // Each agent's own result says what its part was, so the parts add up.
    let parts: Vec<serde_json::Value> = outs.iter().map(|o| json_file(o.as_ref())).collect();
    assert!(parts
        .iter()
        .all(|p| p["requests_limit"] == 10_000 && p["connections"] == 2));
}

#[test]
fn a_scenario_fleet_ships_its_files_and_splits_users_and_rows_exactly() {
    use util::shop::*;
    let shop = Shop::start();
    // The coordinator reads shop.yaml and users.csv from its own folder; the agents run in
    // another, empty one: all they have is what the coordinator sent.
    let files = Files::new("fleet", &[("shop.yaml", SHOP), ("users.csv", &users(6))]);
    let elsewhere = Files::new("fleet-agents", &[]);
    let token = token_file("scenario", TOKEN);
    let merged = files.path("merged.json");
    let coord = Coord::start_in(
        Some(&files.0),
        &shop.url,
        2,
        &token,
        &[
            "--scenario",
            "shop.yaml",
            "-n",
            "400",
            "-c",
            "6",
            "--json",
            &merged,
            "-q",
        ],
    );
    let agents: Vec<Child> = (0..2)
        .map(|r| agent_in(Some(&elsewhere.0), &coord.addr, r, 2, &token, &["-q"]))
        .collect();
    let (code, _, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    agents_succeed(agents);
    let v = json_file(merged.as_ref());
    assert_schema(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 400);
    let stats = shop.stats();
    // Six users over the fleet, each its own row of users.csv: six logins, one each.
    assert_eq!(shop_count(&stats, "refused"), 0, "{stats}");
    for k in 0..6 {
        assert_eq!(stats[format!("login u{k}")], 1, "{stats}");
    }
    // The merged steps are the shop's counts, and the merged scenario section adds up.
    assert_steps_are_the_shops(&v, &stats, "fleet");
    let s = &v["scenario"];
    assert_eq!(s["file"], "shop.yaml");
    assert_eq!(s["checks"][0]["passed"], 6, "{s}");
    let it = &s["iterations"];
    assert_eq!(
        it["duration_us"]["min"].as_u64().map(|m| m >= 1000),
        Some(true),
        "{it}"
    );
    assert!(v["histograms"]["iteration_us"].is_string());
}

/// A script in a fleet: the coordinator ships its text (the agents run in an empty folder),
/// each agent runs it in each of its threads, and the coordinator's done() reads the fleet's
/// counters; a counter over 2 agents x 2 threads equals what the server served; and done()
/// reads each of the four threads' own values (`thread:get`, as wrk's setup.lua does).
#[test]
fn a_script_fleet_ships_its_text_and_adds_up_every_threads_counters() {
    use util::shop::Files;
    let (server, url) = serve(ServerConfig::default());
    let files = Files::new("fleet-script", &[]);
    let elsewhere = Files::new("fleet-script-agents", &[]);
    files.write(
        "counted.lua",
        "local seen, order, n = pelt.counter('responses'), pelt.histogram('order'), 0\n\
         local threads = {}\n\
         function setup(thread)\n  table.insert(threads, thread)\n  \
         thread:set('id', #threads)\nend\n\
         function request()\n  n = n + 1\n  made = n\n  order:record(n)\n  \
         return wrk.format()\nend\n\
         function response(status)\n  seen:add()\nend\n\
         function done(summary)\n  print('done', pelt.counter('responses'):value(), \
         pelt.histogram('order'):count(), summary.requests)\n  \
         for i, t in ipairs(threads) do print('thread', i, t:get('id'), t:get('made')) end\n\
         end\n",
    );
    let token = token_file("script", TOKEN);
    let merged = files.path("merged.json");
    let coord = Coord::start_in(
        Some(&files.0),
        &url,
        2,
        &token,
        &[
            "-s",
            "counted.lua",
            "-n",
            "600",
            "-c",
            "4",
            "-t",
            "2",
            "--json",
            &merged,
            "-q",
        ],
    );
    let agents: Vec<Child> = (0..2)
        .map(|r| agent_in(Some(&elsewhere.0), &coord.addr, r, 2, &token, &["-q"]))
        .collect();
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    agents_succeed(agents);
    let served = server.stop();
    let v = json_file(merged.as_ref());
    assert_schema(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 600);
    assert_eq!(served, 600);
    assert_eq!(v["threads"], 4, "{v}");
    let sc = &v["script"];
    assert_eq!(sc["file"], "counted.lua");
    assert_eq!(count(sc, &["counters", "responses"]), served, "{sc}");
    // Each of the four threads numbers its own requests from 1.
    assert_eq!(count(sc, &["histograms", "order", "count"]), 600);
    assert_eq!(count(sc, &["histograms", "order", "min"]), 1);
    // done() ran once, on the coordinator, with the fleet's totals.
    let done: Vec<&str> = stdout.lines().filter(|l| l.starts_with("done")).collect();
    assert_eq!(done, ["done\t600\t600\t600"], "{stdout}");
    // Its setup() saw the fleet's four threads; each agent's setup numbered its own two,
    // and each thread's request count is its own: together, the server's.
    let threads: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("thread"))
        .map(|l| l.split('\t').collect())
        .collect();
    let places: Vec<(&str, &str)> = threads.iter().map(|t| (t[1], t[2])).collect();
    assert_eq!(
        places,
        [("1", "1"), ("2", "2"), ("3", "1"), ("4", "2")],
        "{stdout}"
    );
    let made: u64 = threads.iter().map(|t| t[3].parse::<u64>().unwrap()).sum();
    assert_eq!(made, served, "{stdout}");
}

/// wrk's own setup.lua, unchanged, over 2 agents x 2 threads against nginx: the
/// coordinator's done() prints each of the fleet's four threads (wrk prints only its own
/// process's), with each agent's ids and each thread's own counts, which add up to the
/// requests nginx logged.
#[test]
fn wrks_setup_lua_prints_every_agents_threads_against_nginx() {
    use util::real::{find_server, nginx_command, RealServer};
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let nginx = RealServer::start("nginx-fleet-script", 1, move |dir, ports| {
        let http = format!(
            "    keepalive_requests 1000000;\n    server {{ listen 127.0.0.1:{}; \
             access_log {}/access.log; location / {{ return 200 \"ok\"; }} }}\n",
            ports[0],
            dir.display()
        );
        nginx_command(&bin, dir, &http)
    });
    let setup =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/wrk/setup.lua");
    let token = token_file("setup-lua", TOKEN);
    let coord = Coord::start(
        &nginx.url("http", 0),
        2,
        &token,
        &[
            "-s",
            setup.to_str().unwrap(),
            "-n",
            "800",
            "-c",
            "4",
            "-t",
            "2",
            "-q",
        ],
    );
    let agents = coord.agents(2, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    agents_succeed(agents);
    // thread ID made R requests and got S responses
    let lines: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("thread ") && l.contains(" made "))
        .map(|l| l.split(' ').collect())
        .collect();
    let ids: Vec<&str> = lines.iter().map(|w| w[1]).collect();
    assert_eq!(ids, ["1", "2", "1", "2"], "{stdout}");
    let made: u64 = lines.iter().map(|w| w[3].parse::<u64>().unwrap()).sum();
    let got: u64 = lines.iter().map(|w| w[7].parse::<u64>().unwrap()).sum();
    let deadline = Instant::now() + Duration::from_secs(5);
    let logged = loop {
        let n = std::fs::read_to_string(&nginx.access_log)
            .unwrap_or_default()
            .lines()
            .count() as u64;
        if n >= 800 || Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!((made, got, logged), (800, 800, 800), "{stdout}");
}

#[test]
fn an_open_loop_fleet_holds_its_total_rate() {
    let (server, url) = serve(ServerConfig::default());
    let token = token_file("rate", TOKEN);
    let coord = Coord::start(
        &url,
        3,
        &token,
        &[
            "--rate", "3000", "-d", "2s", "-c", "30", "--json", "-", "-q",
        ],
    );
    let agents = coord.agents(3, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    for a in agents {
        wait_bounded(a, CHILD_LIMIT);
    }
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    let sent = count(&v, &["requests", "sent"]);
    // 3,000/s for 2 s: 6,000 due, each agent a third of the schedule.
    assert!(sent.abs_diff(6_000) <= 60, "sent {sent}");
    assert_eq!(v["rate"], 3000.0);
    // The server saw every completed request, and none that was not sent.
    let served = server.stop();
    assert!(
        served >= count(&v, &["requests", "completed"]) && served <= sent,
        "{served}"
    );
    let skew = v["fleet"]["start_skew_max_ms"].as_f64().unwrap();
    assert!(skew >= 0.0);
}

#[test]
fn an_agent_killed_mid_run_is_named_and_the_fleet_stops() {
    let (server, url) = serve(ServerConfig::default());
    let token = token_file("kill", TOKEN);
    let mut coord = Coord::start(
        &url,
        3,
        &token,
        &["--rate", "300", "-d", "60s", "-c", "3", "--json", "-"],
    );
    let mut agents = coord.agents(3, &token, &[]);
    coord.wait_for("agent 1 joined");
    // Let the run go a second or two, then kill -9 agent 1 (by its PID, through its handle).
    std::thread::sleep(Duration::from_secs(3));
    agents[1].kill().unwrap();
    let killed = Instant::now();
    let (code, stdout, stderr) = coord.finish(Duration::from_secs(30));
    let took = killed.elapsed();
    // The others' own accounts, in every message below.
    let said: Vec<(Duration, String)> = agents
        .into_iter()
        .enumerate()
        .filter(|(r, _)| *r != 1)
        .map(|(_, a)| {
            let (out, t) = wait_bounded(a, Duration::from_secs(15));
            (t, String::from_utf8_lossy(&out.stderr).to_string())
        })
        .collect();
    let stderr = format!("{stderr}\nagents 0 and 2 said: {said:#?}");
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        took < Duration::from_secs(10),
        "the coordinator took {took:?}"
    );
    assert!(stderr.contains("agent 1 ("), "{stderr}");
    assert!(stderr.contains(" lost "), "{stderr}");
    // The others stopped when told to, and their counts are the result.
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    assert_schema(&v);
    let fleet = &v["fleet"];
    assert_eq!(fleet["agents"][1]["state"], "lost");
    assert!(
        fleet["lost"][0].as_str().unwrap().starts_with("agent 1"),
        "{}\n{stderr}",
        fleet["lost"]
    );
    assert!(fleet["agents"][1]["requests"]["sent"].as_u64().unwrap() > 0);
    for r in [0, 2] {
        assert_eq!(
            fleet["agents"][r]["state"], "finished",
            "{}\n{stderr}",
            fleet["lost"]
        );
    }
    assert!(count(&v, &["requests", "completed"]) > 0);
    for (t, err) in &said {
        assert!(
            err.contains("the coordinator stopped the run: agent 1 was lost"),
            "{stderr}"
        );
        assert!(*t < Duration::from_secs(15), "{stderr}");
    }
    // The server's own count closes on the result: the merged figures, what the lost agent
    // reported, and the bound of what it may have sent after its last report. Its surplus
    // over the merged `sent` lies within the last two.
    let served = server.stop();
    let sent = count(&v, &["requests", "sent"]);
    let lost = &fleet["agents"][1];
    let reported = lost["requests"]["sent"].as_u64().unwrap();
    let unreported = lost["unreported_max"].as_u64().unwrap();
    assert!(served >= count(&v, &["requests", "completed"]), "{v}");
    assert!(
        served.saturating_sub(sent) <= reported + unreported,
        "the server served {served}: {sent} merged + {reported} reported + at most {unreported} \
         unreported"
    );
    // A second or two of its 100/s (it reports each second), not its minute's schedule.
    assert!(unreported <= 1_000, "{lost}");
    eprintln!(
        "served {served}, merged sent {sent}, reported {reported}, unreported_max {unreported}"
    );
    let note = v["notes"].to_string();
    assert!(note.contains("may have sent up to"), "{note}");
    assert!(note.contains("the server saw at most"), "{note}");
}

/// SIGTERM on one agent (what an eviction, a node drain, a preemption or a spot reclaim
/// sends): its result, short, still counts, but the run is cut short as if it had lost the
/// agent. The agent is named as interrupted, the others stop, the coordinator exits 4 and the
/// agent 130: no one reads a fifth of a test as a success.
#[test]
fn an_agent_stopped_by_a_signal_is_named_and_the_run_does_not_succeed() {
    let (server, url) = serve(ServerConfig::default());
    let token = token_file("sigterm", TOKEN);
    let mut coord = Coord::start(
        &url,
        2,
        &token,
        &["--rate", "400", "-d", "60s", "-c", "4", "--json", "-"],
    );
    let mut agents = coord.agents(2, &token, &[]);
    coord.wait_for("agent 1 joined");
    std::thread::sleep(Duration::from_secs(3));
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&agents[1]),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let (code, stdout, stderr) = coord.finish(Duration::from_secs(30));
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        stderr.contains("agent 1 (") && stderr.contains("stopped by a signal on its machine"),
        "{stderr}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    assert_schema(&v);
    let fleet = &v["fleet"];
    let one = &fleet["agents"][1];
    assert_eq!(one["state"], "interrupted", "{one}");
    let problem = one["problem"].as_str().unwrap();
    let sent = one["requests"]["sent"].as_u64().unwrap();
    assert!(
        sent > 0 && problem.contains(&format!("having sent {sent} requests")),
        "{one}"
    );
    assert!(
        fleet["lost"][0].as_str().unwrap().starts_with("agent 1"),
        "{fleet}"
    );
    assert_eq!(fleet["agents"][0]["state"], "finished");
    assert!(v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().starts_with("Interrupted agent 1")));
    // Its requests count: the merged figures are both agents' results.
    let completed: u64 = (0..2)
        .map(|r| {
            fleet["agents"][r]["requests"]["completed"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(count(&v, &["requests", "completed"]), completed);
    let (out, _) = wait_bounded(agents.remove(1), Duration::from_secs(15));
    assert_eq!(out.status.code(), Some(130));
    let (out, _) = wait_bounded(agents.remove(0), Duration::from_secs(15));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agent 1 was stopped by a signal"),
        "agent 0: {err}"
    );
    assert!(server.stop() >= completed);
}

#[test]
fn agents_stop_when_their_coordinator_dies() {
    let (_server, url) = serve(ServerConfig::default());
    let token = token_file("orphans", TOKEN);
    let mut coord = Coord::start(&url, 2, &token, &["--rate", "200", "-d", "60s", "-c", "2"]);
    let agents = coord.agents(2, &token, &[]);
    coord.wait_for("agent 0 joined");
    coord.wait_for("agent 1 joined");
    std::thread::sleep(Duration::from_secs(2));
    coord.child.kill().unwrap();
    let killed = Instant::now();
    for a in agents {
        let (out, _) = wait_bounded(a, Duration::from_secs(20));
        let took = killed.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            took < Duration::from_secs(5),
            "an agent ran {took:?} after its coordinator died"
        );
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(
            err.contains("the coordinator closed the connection"),
            "{err}"
        );
    }
}

#[test]
fn a_wrong_token_is_refused_both_ways_and_missing_agents_are_named() {
    let (server, url) = serve(ServerConfig::default());
    let token = token_file("token", TOKEN);
    let wrong = token_file("token-wrong", "not-the-fleet-token-at-all");
    let coord = Coord::start(&url, 2, &token, &["-n", "100", "--join-timeout", "3s"]);
    let good = agent(&coord.addr, 0, 2, &token, &[]);
    let bad = agent(&coord.addr, 1, 2, &wrong, &[]);
    let (out, _) = wait_bounded(bad, CHILD_LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("does not know the fleet token"), "{err}");
    let (code, _, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        stderr.contains("refused the agent at 127.0.0.1:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("not every agent joined within 3s: 1 of 2 agents missing (rank 1)"),
        "{stderr}"
    );
    let (out, _) = wait_bounded(good, CHILD_LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("rank 1"), "{err}");
    // Nothing was sent.
    assert_eq!(server.stop(), 0);
}

#[test]
fn control_messages_that_do_not_parse_are_refused_not_trusted() {
    use pelt_load::fleet::wire::{Channel, Reader, ToAgent};
    use std::io::Write;
    let (server, url) = serve(ServerConfig::default());
    let token = token_file("junk", TOKEN);
    let mut coord = Coord::start(&url, 1, &token, &["-n", "500", "-c", "2", "--json", "-"]);
    // Plain text (an HTTP request, or a pelt from before the channel was encrypted) never
    // gets past the TLS handshake.
    let mut s = std::net::TcpStream::connect(&coord.addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    coord.wait_for("TLS handshake failed");
    // Over TLS: junk, then a hello that claims rank 0 but cannot prove the token.
    for line in [
        "GET / HTTP/1.1\r\n\r\n".to_string(),
        format!(
            "{{\"type\":\"hello\",\"protocol\":{},\"version\":\"{}\",\"rank\":0,\"agents\":1,\"threads\":1,\"host\":\"x\",\"nonce\":\"00\"}}\n{{\"type\":\"auth\",\"proof\":\"00\"}}\n",
            pelt_load::fleet::wire::PROTOCOL,
            env!("CARGO_PKG_VERSION")
        ),
    ] {
        let tcp = std::net::TcpStream::connect(&coord.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let ch = Channel::connect(tcp).unwrap();
        ch.write_all(line.as_bytes()).unwrap();
        let mut r = Reader::new(ch);
        while r.read::<ToAgent>().is_ok() {}
    }
    coord.wait_for("does not parse");
    coord.wait_for("wrong token");
    // The real agent still joins rank 0, and the run is its.
    let a = agent(&coord.addr, 0, 1, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    wait_bounded(a, CHILD_LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(count(&v, &["requests", "completed"]), 500);
    assert_eq!(server.stop(), 500);
}

#[test]
fn ctrl_c_on_the_coordinator_stops_the_fleet_and_keeps_the_results() {
    let (_server, url) = serve(ServerConfig::default());
    let token = token_file("sigint", TOKEN);
    let mut coord = Coord::start(
        &url,
        2,
        &token,
        &["--rate", "200", "-d", "60s", "-c", "2", "--json", "-"],
    );
    let agents = coord.agents(2, &token, &["-q"]);
    coord.wait_for("agent 0 joined");
    coord.wait_for("agent 1 joined");
    std::thread::sleep(Duration::from_secs(3));
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&coord.child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let (code, stdout, stderr) = coord.finish(Duration::from_secs(20));
    assert_eq!(code, Some(130), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["stopped_by"], "signal");
    assert!(count(&v, &["requests", "completed"]) >= 200, "{v}");
    // Their parts were cut short by the coordinator: not a success (a Job would say Failed).
    for a in agents {
        let (out, _) = wait_bounded(a, Duration::from_secs(15));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
    }
}

#[test]
fn fleet_bad_input_is_one_line_before_any_traffic() {
    let (server, url) = serve(ServerConfig::default());
    // No token.
    assert_bad_input_without_token(
        &[&url, "--agents", "2"],
        "pelt: a fleet needs a shared token",
    );
    // A short token, a bad address, an agent with no rank.
    let short = token_file("short", "abc");
    let good = token_file("bad-input", TOKEN);
    for (args, want) in [
        (
            vec![url.as_str(), "--agents", "2", "--token-file", &short],
            "needs at least 16",
        ),
        (
            vec![
                url.as_str(),
                "--agents",
                "2",
                "--token-file",
                &good,
                "--listen",
                "localhost",
            ],
            "expected an IP address and port",
        ),
        (vec![url.as_str(), "--listen", "127.0.0.1:0"], "--agents"),
        (
            vec![
                "agent",
                "--coordinator",
                "127.0.0.1:1",
                "--token-file",
                &good,
            ],
            "no rank for this agent",
        ),
        (
            vec![
                "agent",
                "--coordinator",
                "127.0.0.1:1",
                "--token-file",
                &good,
                "--rank",
                "3",
                "--agents",
                "3",
            ],
            "rank 3 is not below",
        ),
    ] {
        let (out, _) = wait_bounded(
            pelt()
                .args(&args)
                .env_remove("JOB_COMPLETION_INDEX")
                .env_remove("SLURM_PROCID")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
            CHILD_LIMIT,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(want) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    // Fewer connections than the fleet's workers: refused once the agents have joined.
    let coord = Coord::start(&url, 2, &good, &["-n", "10", "-c", "1"]);
    let agents = coord.agents(2, &good, &[]);
    let (code, _, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("-c 1 is fewer connections than the fleet's 2 worker threads"),
        "{stderr}"
    );
    for a in agents {
        let (out, _) = wait_bounded(a, CHILD_LIMIT);
        assert_eq!(out.status.code(), Some(4));
    }
    assert_eq!(server.stop(), 0);
}

/// A fleet's coordinator takes a remote monitor (`pelt monitor` beside the server): the
/// agents send, the monitor's samples join the merged seconds, and the merged result says
/// what the server spent.
#[test]
fn a_fleet_coordinator_takes_the_samples_of_a_remote_monitor() {
    let (serve, url) = ServeProcess::listening(&["--port", "0"]);
    let pid = serve.pid().to_string();
    let token = token_file("monitor", TOKEN);
    let mut monitor = Killed(
        pelt()
            .args([
                "monitor",
                &pid,
                "--listen",
                "127.0.0.1:0",
                "--token-file",
                &token,
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pelt monitor"),
    );
    let mut line = String::new();
    std::io::BufReader::new(monitor.0.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let at = line
        .split_whitespace()
        .nth(3)
        .unwrap()
        .trim_end_matches(',');
    let coord = Coord::start(
        &format!("{url}/"),
        2,
        &token,
        &[
            "--rate",
            "1000",
            "-d",
            "3s",
            "-c",
            "4",
            "--monitor-remote",
            at,
            "--json",
            "-",
            "-q",
        ],
    );
    let agents = coord.agents(2, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    agents_succeed(agents);
    drop(monitor);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_schema(&v);
    let r = &v["resources"];
    let monitored = r["monitored"].as_str().unwrap();
    assert!(
        monitored.starts_with(&format!("PID {pid}: 1 process on "))
            && monitored.ends_with(&format!("(pelt monitor at {at})")),
        "{r}"
    );
    assert!(
        r["server"]["cpu_us_per_request"].as_f64().unwrap() > 0.0,
        "{r}"
    );
    assert!(
        r["server"]["rss_peak_bytes"].as_u64().unwrap() > 1 << 20,
        "{r}"
    );
    assert!(r["server_host"]["cores"].as_u64().unwrap() >= 1, "{r}");
    let points = v["timeline"].as_array().unwrap();
    let whole: Vec<_> = points.iter().filter(|p| p["length_s"] == 1.0).collect();
    assert!(whole.len() >= 2, "{points:?}");
    for p in whole {
        assert_eq!(p["resources"]["server"]["processes"], 1, "{p}");
    }
    serve.stop();
}

#[test]
fn a_websocket_fleet_sends_exactly_n_messages_and_merges_its_sockets() {
    let (server, url) = serve(ServerConfig {
        ws: Some(pelt_server::WsConfig::default()),
        ..Default::default()
    });
    let url = url.replace("http://", "ws://");
    let token = token_file("ws", TOKEN);
    let coord = Coord::start(
        &url,
        2,
        &token,
        &[
            "-b",
            "m{{seq}}",
            "-n",
            "3001",
            "-c",
            "6",
            "--ws-ping",
            "1s",
            "--json",
            "-",
            "-q",
        ],
    );
    let agents = coord.agents(2, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    agents_succeed(agents);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    assert_schema(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 3001, "{v}");
    let w = &v["websocket"];
    // Each agent's sockets and messages, merged: 6 sockets in all, every echo read.
    assert_eq!(count(w, &["upgrades"]), 6, "{w}");
    assert_eq!(count(w, &["messages_received"]), 3001, "{w}");
    // The server echoed exactly what the fleet sent.
    let c = server.ws_counts();
    assert_eq!((c.upgrades, c.received, c.sent), (6, 3001, 3001));
}

#[test]
fn a_replay_fleet_sends_each_recorded_request_once() {
    let (server, url) = serve(ServerConfig::default());
    // 41 requests 10 ms apart, each its own path; at 2x the recording takes 0.2 s.
    let file = std::env::temp_dir().join(format!("pelt-fleet-replay-{}.jsonl", std::process::id()));
    let lines: Vec<String> = (0..41)
        .map(|k| format!(r#"{{"url": "{url}p{k}", "t": {}}}"#, 10 * k))
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let path = file.display().to_string();
    let token = token_file("replay", TOKEN);
    let coord = Coord::start(
        &url,
        2,
        &token,
        &[
            "--targets",
            &path,
            "--replay",
            "--replay-speed",
            "2x",
            "-c",
            "4",
            "--json",
            "-",
            "-q",
        ],
    );
    let agents = coord.agents(2, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    agents_succeed(agents);
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    assert_schema(&v);
    // The agents split the recording by index: each request once over the fleet.
    assert_eq!(count(&v, &["requests", "completed"]), 41, "{v}");
    let targets = v["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 41, "{targets:?}");
    assert!(targets.iter().all(|t| t["sent"] == 1), "{targets:?}");
    assert_eq!(server.served(), 41);
}

#[test]
fn a_grpc_fleet_sends_exactly_n_calls_and_merges_their_statuses() {
    let Some(app) = util::real::PythonApp::start("grpc_app.py") else {
        return;
    };
    let port = app.counts()["grpc_port"].as_u64().unwrap();
    let url = format!("grpc://127.0.0.1:{port}/pelt.test.Greeter/SayHello");
    let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/greeter.proto");
    let token = token_file("grpc", TOKEN);
    // Every third call the server ends is UNAVAILABLE, whichever agent sent it.
    let coord = Coord::start(
        &url,
        2,
        &token,
        &[
            "--proto",
            proto,
            "-b",
            r#"{"name": "flaky"}"#,
            "-n",
            "301",
            "-c",
            "4",
            "--streams",
            "2",
            "--json",
            "-",
            "-q",
        ],
    );
    let agents = coord.agents(2, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    agents_succeed(agents);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    assert_schema(&v);
    let g = &v["grpc"];
    assert_eq!(count(g, &["calls"]), 301, "{g}");
    assert_eq!(count(g, &["status", "OK"]), 201, "{g}");
    assert_eq!(count(g, &["status", "UNAVAILABLE"]), 100, "{g}");
    assert_eq!(g["messages"]["UNAVAILABLE"], "backend down: flaky");
    let calls = &app.counts()["calls"];
    assert_eq!(count(calls, &["SayHello OK"]), 201, "{calls}");
    assert_eq!(count(calls, &["SayHello UNAVAILABLE"]), 100, "{calls}");

    // A scenario of calls, shipped to the agents with its data file and the proto: a capture
    // from each user's first call goes into its next, whose check every agent counts.
    let dir = std::env::temp_dir().join(format!("pelt-fleet-grpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users.csv"), "user\nann\nbob\ncid\n").unwrap();
    let flow = format!(
        "config:\n  target: grpc://127.0.0.1:{port}\n  data: [{{file: users.csv}}]\n\
         scenarios:\n  - once:\n      - grpc:\n          name: hello\n\
         \x20         call: pelt.test.Greeter/SayHello\n          json: {{name: \"{{{{user}}}}\"}}\n\
         \x20         capture: [{{json: /message, as: greeting}}]\n    flow:\n      - grpc:\n\
         \x20         name: fail\n          call: pelt.test.Greeter/SayHello\n\
         \x20         json: {{name: \"fail {{{{greeting}}}}\"}}\n\
         \x20         check: [{{status: UNAVAILABLE}}, {{header: grpc-message, contains: \"fail Hello \"}}]\n"
    );
    let file = dir.join("flow.yaml");
    std::fs::write(&file, flow).unwrap();
    let coord = Coord::start(
        "",
        2,
        &token,
        &[
            "--scenario",
            file.to_str().unwrap(),
            "--proto",
            proto,
            "-n",
            "40",
            "-c",
            "2",
            "--json",
            "-",
            "-q",
        ],
    );
    let agents = coord.agents(2, &token, &["-q"]);
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    agents_succeed(agents);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let g = &v["grpc"];
    assert_eq!(count(g, &["calls"]), 40, "{g}");
    // Two users (a connection on each agent), each one hello.
    assert_eq!(count(g, &["status", "OK"]), 2, "{g}");
    assert_eq!(count(g, &["status", "UNAVAILABLE"]), 38, "{g}");
    let checks = &v["scenario"]["checks"];
    assert_eq!(count(&checks[0], &["passed"]), 38, "{checks}");
    assert_eq!(count(&checks[1], &["passed"]), 38, "{checks}");
    assert_eq!(count(&checks[1], &["failed"]), 0, "{checks}");
    let calls = &app.counts()["calls"];
    assert_eq!(count(calls, &["SayHello OK"]), 203, "{calls}");
    assert_eq!(count(calls, &["SayHello UNAVAILABLE"]), 138, "{calls}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_coordinators_live_page_shows_the_merged_fleet() {
    let (server, url) = serve(ServerConfig::default());
    let token = token_file("dashboard", TOKEN);
    let mut coord = Coord::start(
        &url,
        2,
        &token,
        &[
            "--rate",
            "500",
            "-n",
            "3000",
            "-c",
            "4",
            "--dashboard",
            "127.0.0.1:0",
            "--json",
            "-",
        ],
    );
    let line = coord.wait_for("dashboard on http://");
    let page_url = line.split("dashboard on ").nth(1).unwrap().to_string();
    let agents = coord.agents(2, &token, &["-q"]);
    let shot =
        std::env::temp_dir().join(format!("pelt-fleet-dashboard-{}.png", std::process::id()));
    let page = browser(
        "check_dashboard.mjs",
        &[page_url.as_ref(), shot.as_os_str()],
    );
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    agents_succeed(agents);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(count(&v, &["requests", "completed"]), 3000);
    assert_eq!(server.served(), 3000);
    let Some(page) = page else {
        return;
    };
    let page: serde_json::Value = serde_json::from_slice(&page).unwrap();
    assert_eq!(page["problems"], serde_json::json!([]), "{page}");
    assert!(page["updates"].as_u64().unwrap() >= 3, "{page}");
    assert_eq!(
        page["final"]["completed"], "3,000",
        "the merged fleet's count: {page}"
    );
    assert!(page["report"].as_bool().unwrap());
}

#[test]
fn a_change_on_the_coordinators_page_holds_on_every_agent_at_the_same_second() {
    let Some(bin) = util::real::find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let server = util::live::nginx_timed(&bin);
    let url = server.url("http", 0);
    let token = token_file("steer", TOKEN);
    let mut coord = Coord::start(
        &url,
        2,
        &token,
        &[
            "--rate",
            "1000",
            "-d",
            "30s",
            "-c",
            "8",
            "--dashboard",
            "127.0.0.1:0",
            "--json",
            "-",
        ],
    );
    let line = coord.wait_for("dashboard on http://");
    let addr: std::net::SocketAddr = line
        .split("dashboard on http://")
        .nth(1)
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("pelt-fleet-steer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let parts: Vec<String> = (0..2)
        .map(|r| dir.join(format!("agent{r}.json")).display().to_string())
        .collect();
    let agents: Vec<Child> = (0..2)
        .map(|r| {
            agent(
                &coord.addr,
                r,
                2,
                &token,
                &["-q", "--json", &parts[r as usize]],
            )
        })
        .collect();
    for (at, json) in [
        (2.0, r#"{"action": "rate", "value": 3000}"#),
        (4.0, r#"{"action": "pause"}"#),
        (5.0, r#"{"action": "resume"}"#),
        (7.0, r#"{"action": "stop"}"#),
    ] {
        util::live::until_second(addr, at);
        let (code, answer) = util::live::post(addr, json);
        assert_eq!(code, 200, "{json}: {answer}");
    }
    let (code, stdout, stderr) = coord.finish(CHILD_LIMIT);
    assert_eq!(code, Some(130), "{stderr}");
    for a in agents {
        let _ = wait_bounded(a, CHILD_LIMIT);
    }
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_invariant(&v);
    let changes = v["changes"].as_array().unwrap();
    let what: Vec<&str> = changes
        .iter()
        .map(|c| c["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        what,
        ["rate", "pause", "resume", "stop"],
        "each change once: {v}"
    );
    // Every agent followed the same changes, at the same second of the run.
    let mut total = 0;
    let mut shares = vec![];
    for part in &parts {
        let a = json_file(std::path::Path::new(part));
        assert_eq!(a["changes"].as_array().unwrap()[..], changes[..3], "{part}");
        shares.push(count(&a, &["requests", "completed"]));
        total += count(&a, &["requests", "completed"]) + count(&a, &["requests", "errors"]);
    }
    let done = count(&v, &["requests", "completed"]) + count(&v, &["requests", "errors"]);
    assert_eq!(total, done, "the parts add up to the fleet's");
    let (a, b) = (shares[0] as f64, shares[1] as f64);
    assert!(
        (a - b).abs() <= 0.01 * (a + b) + 4.0,
        "split evenly: {shares:?}"
    );
    // nginx saw every request, each phase at its rate, as for one process.
    let times = util::live::logged_times(&server, done);
    assert_eq!(
        times.len() as u64,
        done,
        "nginx logged what the fleet counted"
    );
    let at: Vec<f64> = changes
        .iter()
        .map(|c| c["at_s"].as_f64().unwrap())
        .collect();
    let start = v["started_unix_ms"].as_f64().unwrap() / 1000.0;
    util::live::assert_phases(&times, start, &at);
}

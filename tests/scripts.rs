//! Scripts (`-s`): wrk's own example scripts run on pelt and on wrk (Debian's) against the same
//! nginx, whose access log says what each sent; a script's setup, init and done across threads;
//! per-request hooks (`request()`, `response()`, `delay()`, `thread:stop()`) in each worker's
//! own state; hostile scripts (endless loops, errors, memory, `os.exit()`); and bad scripts,
//! refused in one line before any traffic.

mod util;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use util::real::{find_server, nginx_command, RealServer};
use util::shop::Files;
use util::*;

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(name)
        .display()
        .to_string()
}

/// nginx answering 200 (and a token from `/authenticate`, as wrk's auth.lua wants), logging
/// each request's method, URI, Content-Type, Content-Length, Host, X-Args, X-Counter and
/// X-Token: HTTP/1.1 on its first port (`access.log`), h2c on its second (`h2.log`, the
/// protocol first).
fn nginx() -> Option<RealServer> {
    let bin = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"])?;
    Some(RealServer::start("nginx-scripts", 2, move |dir, ports| {
        let locations = "location / { return 200 \"ok\"; }\n      \
             location /authenticate { add_header X-Token t0k3n always; return 200 \"ok\"; }";
        let http = format!(
            "    log_format s '$request_method $request_uri \"$http_content_type\" \
             $content_length $http_host $http_x_args $http_x_counter $http_x_token';\n    \
             log_format h2 '$server_protocol $request_method $request_uri \"$http_content_type\" \
             $content_length $http_host $http_x_args $http_x_counter $http_x_token';\n    \
             keepalive_requests 1000000;\n    \
             server {{ listen 127.0.0.1:{}; access_log {d}/access.log s;\n      {locations} }}\n    \
             server {{ listen 127.0.0.1:{} http2; access_log {d}/h2.log h2;\n      {locations} }}\n",
            ports[0],
            ports[1],
            d = dir.display(),
        );
        nginx_command(&bin, dir, &http)
    }))
}

/// The access log's lines, waiting (5 s at most) for at least `n`.
fn logged(server: &RealServer, n: usize) -> Vec<String> {
    logged_in(&server.access_log, n)
}

/// The lines of the log at `path`, waiting (5 s at most) for at least `n`.
fn logged_in(path: &Path, n: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(String::from).collect();
        if lines.len() >= n || start.elapsed() > Duration::from_secs(5) {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Debian's wrk, or `None` (skipped outside CI).
fn wrk() -> Option<PathBuf> {
    find_server("wrk", "wrk", &["/usr/bin/wrk"])
}

fn run_wrk(wrk: &Path, url: &str, script: &str) -> String {
    run_wrk_with(wrk, url, script, &["-t1", "-c2", "-d1s"])
}

fn run_wrk_with(wrk: &Path, url: &str, script: &str, args: &[&str]) -> String {
    let child = std::process::Command::new(wrk)
        .args(args)
        .args(["-s", script, url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn distinct(lines: &[String]) -> Vec<String> {
    let mut d = lines.to_vec();
    d.sort();
    d.dedup();
    d
}

#[test]
fn wrks_post_lua_sends_on_pelt_what_it_sends_on_wrk() {
    let (Some(server), Some(wrk)) = (nginx(), wrk()) else {
        return;
    };
    let url = server.url("http", 0);
    let v = run_json(&[&url, "-s", &script("wrk/post.lua"), "-n", "500", "-c", "2"]);
    assert_eq!(count(&v, &["requests", "completed"]), 500);
    let pelt = logged(&server, 500);
    assert_eq!(pelt.len(), 500, "nginx logged each request once");
    run_wrk(&wrk, &url, &script("wrk/post.lua"));
    let all = logged(&server, 501);
    let (pelt, wrk) = (distinct(&pelt), distinct(&all[500..]));
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    assert_eq!(
        pelt,
        [format!(
            "POST / \"application/x-www-form-urlencoded\" 16 {host} - - -"
        )]
    );
    assert_eq!(pelt, wrk, "the same request from both");
}

/// wrk's addr.lua, unchanged: `setup` looks the URL's host up, keeps the addresses
/// `wrk.connect()` reaches and gives each thread one; `init` prints it. pelt and wrk print the
/// same lines, and nginx logs what pelt says it completed.
#[test]
fn wrks_addr_lua_prints_each_threads_address_as_on_wrk() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 0);
    let addr_lines = |stdout: &str| -> Vec<String> {
        let lines: Vec<String> = stdout
            .lines()
            .filter(|l| l.starts_with("thread addr: "))
            .map(String::from)
            .collect();
        lines
    };
    let (out, _) = run(&[
        &url,
        "-s",
        &script("wrk/addr.lua"),
        "-n",
        "300",
        "-c",
        "2",
        "-t",
        "2",
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let pelt = addr_lines(&stdout);
    assert_eq!(pelt, vec![format!("thread addr: {host}"); 2], "{stdout}");
    assert_eq!(logged(&server, 300).len(), 300);
    let Some(wrk) = wrk() else {
        return;
    };
    let on_wrk = run_wrk_with(&wrk, &url, &script("wrk/addr.lua"), &["-t2", "-c2", "-d1s"]);
    assert_eq!(addr_lines(&on_wrk), pelt, "{on_wrk}");
}

/// The `N%,value` lines of report.lua's output.
fn report_lines(stdout: &str) -> Vec<(String, u64)> {
    let after = stdout
        .split_once("------------------------------\n")
        .expect("report.lua's line")
        .1;
    after
        .lines()
        .map(|l| {
            let (p, v) = l.split_once(',').unwrap();
            (p.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn wrks_report_lua_prints_the_results_percentiles() {
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let dir = std::env::temp_dir().join(format!("pelt-scripts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let (out, _) = run(&[
        &url,
        "-s",
        &script("wrk/report.lua"),
        "-n",
        "3000",
        "-c",
        "4",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.find("Latency").unwrap() < stdout.find("------").unwrap(),
        "done() after the summary: {stdout}"
    );
    let lines = report_lines(&stdout);
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let l = &v["latency_us"];
    let names: Vec<&str> = lines.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, ["50%", "90%", "99%", "99.999%"]);
    assert_eq!(lines[0].1, l["p50"].as_u64().unwrap());
    assert_eq!(lines[1].1, l["p90"].as_u64().unwrap());
    assert_eq!(lines[2].1, l["p99"].as_u64().unwrap());
    assert!(lines[3].1 >= lines[2].1 && lines[3].1 <= l["max"].as_u64().unwrap());
    // wrk prints the same lines after its report.
    let Some(wrk) = wrk() else {
        return;
    };
    let on_wrk = run_wrk(&wrk, &url, &script("wrk/report.lua"));
    let wrk_names: Vec<String> = report_lines(&on_wrk).into_iter().map(|l| l.0).collect();
    assert_eq!(wrk_names, names);
}

#[test]
fn setup_init_and_done_see_every_thread() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 0);
    let (out, _) = run(&[
        &url,
        "-s",
        &script("threads.lua"),
        "-n",
        "400",
        "-c",
        "4",
        "-t",
        "3",
        "--",
        "from-args",
        "two",
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let done: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("thread "))
        .collect();
    assert_eq!(
        done,
        [
            "thread 1 started 10 tags a,b",
            "thread 2 started 20 tags a,b",
            "thread 3 started 30 tags a,b",
            "requests 400",
            "errors 0 0 0 0 0",
            "ordered true",
            "counted 400",
            "rates true",
        ],
        "{stdout}"
    );
    let log = logged(&server, 400);
    assert_eq!(log.len(), 400);
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    assert_eq!(
        distinct(&log),
        [format!("GET /from-args \"-\" - {host} 2 - -")]
    );
}

/// wrk's addr.lua, and threads of one script sending different requests: `setup` points the
/// second thread at another nginx (the Host header stays the URL's, as on wrk), and each
/// thread's `init` leaves its own path; without `request()` each thread sends its own request
/// as pelt's plain requests go, with it each thread's `request()` runs in its own state.
#[test]
fn threads_connect_where_setup_says_and_send_their_own_requests() {
    let (Some(a), Some(b)) = (nginx(), nginx()) else {
        return;
    };
    let url = a.url("http", 0);
    let files = Files::new("script-addr", &[]);
    let setup = format!(
        "local n = 0\n\
         function setup(thread)\n\
         \x20  n = n + 1\n\
         \x20  thread:set(\"id\", n)\n\
         \x20  if n == 2 then thread.addr = wrk.lookup(\"127.0.0.1\", \"{}\")[1] end\n\
         end\n\
         function init(args) wrk.path = \"/t\" .. id end\n",
        b.ports[0]
    );
    let own = files.write("own.lua", &setup);
    let hooked = files.write(
        "hooked.lua",
        &format!("{setup}function request() return wrk.format(nil, \"/r\" .. id) end\n"),
    );
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let mut seen = (0, 0);
    // Both I/O backends connect each thread where its setup said.
    for (path, prefix, io) in [
        (&own, "/t", "epoll"),
        (&hooked, "/r", "uring"),
        (&own, "/t", "uring"),
    ] {
        let r = run_json(&[
            &url, "-s", path, "-n", "400", "-c", "2", "-t", "2", "--io", io,
        ]);
        assert_eq!(r["requests"]["completed"], 400, "{r}");
        let (on_a, on_b) = (
            logged(&a, seen.0 + 1)[seen.0..].to_vec(),
            logged(&b, seen.1 + 1)[seen.1..].to_vec(),
        );
        assert_eq!(on_a.len() + on_b.len(), 400);
        assert_eq!(
            distinct(&on_a),
            [format!("GET {prefix}1 \"-\" - {host} - - -")]
        );
        assert_eq!(
            distinct(&on_b),
            [format!("GET {prefix}2 \"-\" - {host} - - -")]
        );
        seen = (seen.0 + on_a.len(), seen.1 + on_b.len());
    }
}

/// A script's `request()` reads the request pelt would send (`pelt.next()`: the `--targets`
/// entry, its templates rendered) and signs it, and names the step each request plays
/// (`request()`'s second value): the result's per-step figures equal what nginx logged of
/// each, also over HTTP/2; `pelt.next()` outside `request()` is one line before any traffic.
#[test]
fn request_reads_pelts_targets_and_names_its_steps() {
    let Some(server) = nginx() else {
        return;
    };
    let files = Files::new("script-offer", &[]);
    let sign = files.write(
        "sign.lua",
        "function request()\n\
         \x20  local r = pelt.next()\n\
         \x20  r.headers[\"X-Args\"] = r.method .. \"-\" .. (r.body or \"none\")\n\
         \x20  return wrk.format(r.method, r.path, r.headers, r.body), r.name\n\
         end\n",
    );
    for (listener, log) in [
        (0, server.access_log.clone()),
        (1, server.dir.join("h2.log")),
    ] {
        let url = server.url("http", listener);
        let targets = files.write(
            &format!("targets-{listener}.jsonl"),
            &format!(
                "{{\"method\":\"GET\",\"url\":\"{url}a/{{{{seq}}}}\",\"name\":\"list\"}}\n\
                 {{\"method\":\"POST\",\"url\":\"{url}b\",\"body\":\"n={{{{rand:1:9}}}}\",\
                 \"name\":\"create\"}}\n"
            ),
        );
        let mut args = vec![
            url.as_str(),
            "-s",
            &sign,
            "--targets",
            &targets,
            "-n",
            "200",
            "-c",
            "2",
            "-t",
            "2",
        ];
        if listener == 1 {
            args.extend(["--http2", "--streams", "4"]);
        }
        let r = run_json(&args);
        assert_eq!(r["requests"]["completed"], 200, "{r}");
        let lines = logged_in(&log, 200);
        assert_eq!(lines.len(), 200);
        // HTTP/2's log names the protocol first.
        let fields =
            |l: &String| -> Vec<String> { l.split(' ').skip(listener).map(String::from).collect() };
        let (gets, posts): (Vec<Vec<String>>, Vec<Vec<String>>) =
            lines.iter().map(fields).partition(|f| f[0] == "GET");
        let step = |name: &str| {
            let t = r["targets"].as_array().unwrap();
            let t = t
                .iter()
                .find(|t| t["name"] == name)
                .unwrap_or_else(|| panic!("{r}"));
            t["completed"].as_u64().unwrap() as usize
        };
        assert_eq!((step("list"), step("create")), (gets.len(), posts.len()));
        assert_eq!(gets.len() + posts.len(), 200);
        // Each GET its own {{seq}}, each POST its own {{rand}} body, signed.
        let mut seqs: Vec<&str> = gets.iter().map(|f| f[1].as_str()).collect();
        seqs.sort();
        seqs.dedup();
        assert_eq!(seqs.len(), gets.len());
        assert!(gets
            .iter()
            .all(|f| f[1].starts_with("/a/") && f[5] == "GET-none"));
        for f in &posts {
            assert_eq!((f[1].as_str(), f[3].as_str()), ("/b", "3"));
            let n: u32 = f[5].strip_prefix("POST-n=").unwrap().parse().unwrap();
            assert!((1..=9).contains(&n), "{f:?}");
        }
    }
    // The guide's sign.lua: the same steps.
    let url = server.url("http", 0);
    let targets = files.path("targets-0.jsonl");
    let r = run_json(&[
        &url,
        "-s",
        &script("sign.lua"),
        "--targets",
        &targets,
        "-n",
        "100",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    let names: Vec<(&str, u64)> = r["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["completed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("list", 50), ("create", 50)], "{r}");
    assert_eq!(logged(&server, 300).len(), 300);
    let early = files.write(
        "early.lua",
        "function init(args)\n  pelt.next()\nend\nfunction request() return wrk.format() end\n",
    );
    let (out, _) = run(&[&url, "-s", &early, "-n", "10"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("early.lua:2: pelt.next() reads"),
        "{stderr}"
    );
}

#[test]
fn bad_scripts_are_one_line_before_any_traffic() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 0);
    let dir = std::env::temp_dir().join(format!("pelt-bad-scripts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let cases = [
        (
            write("syntax.lua", "wrk.method = 'POST'\nlocal x = = 1\n"),
            "syntax.lua:2:",
        ),
        (
            write(
                "init.lua",
                "function init(args)\n  error('no ' .. args[1])\nend\n",
            ),
            "init.lua:2: no way",
        ),
        (
            write("exit.lua", "function init(args) os.exit(1) end\n"),
            "os.exit() is not allowed",
        ),
        (
            write("setup.lua", "function setup(t)\n  t:set('f', print)\nend\n"),
            "a function cannot pass between threads",
        ),
        (
            dir.join("missing.lua").display().to_string(),
            "cannot read the script",
        ),
    ];
    for (path, says) in &cases {
        let (out, _) = run(&[&url, "-s", path, "-n", "10", "--", "way"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{path}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // Nothing was sent.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(logged(&server, 0).len(), 0);
}

/// A log line's URI, X-Counter and X-Token.
fn uri_counter_token(line: &str) -> (&str, &str, &str) {
    let f: Vec<&str> = line.split(' ').collect();
    (f[1], f[f.len() - 2], f[f.len() - 1])
}

#[test]
fn wrks_counter_lua_calls_request_per_request_as_on_wrk() {
    let (Some(server), Some(wrk)) = (nginx(), wrk()) else {
        return;
    };
    let url = server.url("http", 0);
    let v = run_json(&[
        &url,
        "-s",
        &script("wrk/counter.lua"),
        "-n",
        "300",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 300);
    let pelt = logged(&server, 300);
    assert_eq!(pelt.len(), 300);
    // Each request its own path and header, in the order request() made them.
    for (k, line) in pelt.iter().enumerate() {
        assert_eq!(
            uri_counter_token(line),
            (&*format!("/{k}"), &*k.to_string(), "-")
        );
    }
    run_wrk_with(
        &wrk,
        &url,
        &script("wrk/counter.lua"),
        &["-t1", "-c1", "-d1s"],
    );
    let all = logged(&server, 302);
    let on_wrk = &all[300..];
    assert!(on_wrk.len() > 1);
    // wrk calls request() once before its threads start, to count the requests a call makes,
    // and does not send what it made: its requests begin at /1. pelt sends that first one.
    for (k, line) in on_wrk.iter().enumerate() {
        let k = k + 1;
        assert_eq!(
            uri_counter_token(line),
            (&*format!("/{k}"), &*k.to_string(), "-")
        );
    }
}

/// wrk's scripts over HTTP/2, which wrk does not speak: each request `request()` writes goes
/// as its own stream, `response()` reads the HTTP/2 response's fields.
#[test]
fn per_request_hooks_run_over_http2() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 1);
    let h2_log = server.dir.join("h2.log");
    // counter.lua on one connection of 8 streams, 4 threads: every path once, each with its
    // own X-Counter, all over HTTP/2.
    let v = run_json(&[
        &url,
        "--http2",
        "--streams",
        "8",
        "-s",
        &script("wrk/counter.lua"),
        "-n",
        "400",
        "-c",
        "4",
        "-t",
        "4",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 400, "{v}");
    assert_eq!(v["http"], "2");
    let h2 = |n: usize| -> Vec<String> {
        logged_in(&h2_log, n)
            .iter()
            .map(|l| match l.strip_prefix("HTTP/2.0 ") {
                Some(rest) => rest.to_string(),
                None => panic!("not over HTTP/2: {l}"),
            })
            .collect()
    };
    let lines = h2(400);
    assert_eq!(lines.len(), 400);
    // Each thread counts from 0 in its own state: 4 x /0..99, each path with its counter.
    let mut paths: Vec<String> = lines
        .iter()
        .map(|l| {
            let (uri, counter, _) = uri_counter_token(l);
            assert_eq!(uri, format!("/{counter}"));
            uri.to_string()
        })
        .collect();
    paths.sort();
    let mut want: Vec<String> = (0..4)
        .flat_map(|_| (0..100).map(|k| format!("/{k}")))
        .collect();
    want.sort();
    assert_eq!(paths, want);
    // auth.lua: response() reads the token nginx sends, and every later request carries it.
    let v = run_json(&[
        &url,
        "--http2",
        "--streams",
        "1",
        "-s",
        &script("wrk/auth.lua"),
        "-n",
        "50",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 50);
    // The guide's outcomes.lua: its counters over HTTP/2 are the responses nginx logged.
    let v = run_json(&[
        &url,
        "--http2",
        "-s",
        &script("outcomes.lua"),
        "-n",
        "100",
        "-t",
        "2",
        "-c",
        "2",
    ]);
    assert_eq!(count(&v, &["script", "counters", "2xx"]), 100, "{v}");
    assert_eq!(count(&v, &["script", "histograms", "body_bytes", "max"]), 2);
    let lines = h2(550);
    assert_eq!(lines.len(), 550);
    let auth = &lines[400..450];
    assert_eq!(auth.len(), 50);
    assert_eq!(uri_counter_token(&auth[0]).0, "/authenticate");
    for line in &auth[1..] {
        assert_eq!(uri_counter_token(line).0, "/resource", "{line}");
        assert_eq!(uri_counter_token(line).2, "t0k3n", "{line}");
    }
}

#[test]
fn setup_lua_reads_every_worker_threads_counts_in_done() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 0);
    let (out, _) = run(&[
        &url,
        "-s",
        &script("wrk/setup.lua"),
        "-n",
        "600",
        "-c",
        "3",
        "-t",
        "3",
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let created: Vec<&str> = stdout.lines().filter(|l| l.ends_with("created")).collect();
    assert_eq!(created.len(), 3, "each thread's init: {stdout}");
    let mut ids = Vec::new();
    let (mut made, mut got) = (0, 0);
    for line in stdout.lines().filter(|l| l.contains(" made ")) {
        // thread N made R requests and got S responses
        let w: Vec<&str> = line.split(' ').collect();
        ids.push(w[1].parse::<u32>().unwrap());
        made += w[3].parse::<u64>().unwrap();
        got += w[7].parse::<u64>().unwrap();
    }
    assert_eq!(ids, [1, 2, 3], "{stdout}");
    assert_eq!((made, got), (600, 600), "{stdout}");
    assert_eq!(logged(&server, 600).len(), 600);
    // wrk prints the same lines (its counts are its own).
    let Some(wrk) = wrk() else {
        return;
    };
    let on_wrk = run_wrk_with(
        &wrk,
        &url,
        &script("wrk/setup.lua"),
        &["-t3", "-c3", "-d1s"],
    );
    let shape = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("thread "))
            .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    let mut mine = shape(&stdout);
    let mut theirs = shape(&on_wrk);
    mine.sort();
    theirs.sort();
    assert_eq!(mine, theirs);
}

/// wrk's stop, auth, pipeline and delay scripts, unchanged, on pelt and then on wrk against
/// the same nginx: its log holds the same requests from each.
#[test]
fn wrks_stop_auth_pipeline_and_delay_scripts_hold_against_nginx() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 0);
    // stop.lua: each thread stops at its 100th response (one connection each: none in flight).
    let v = run_json(&[
        &url,
        "-s",
        &script("wrk/stop.lua"),
        "-c",
        "2",
        "-t",
        "2",
        "-d",
        "20",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 200);
    assert_eq!(v["stopped_by"], "requests");
    assert_eq!(logged(&server, 200).len(), 200);
    // auth.lua: the token from the first response goes with every later request.
    let v = run_json(&[
        &url,
        "-s",
        &script("wrk/auth.lua"),
        "-n",
        "50",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 50);
    let log = logged(&server, 250);
    let auth: Vec<(&str, &str)> = log[200..]
        .iter()
        .map(|l| {
            let (uri, _, token) = uri_counter_token(l);
            (uri, token)
        })
        .collect();
    assert_eq!(auth.len(), 50);
    assert_eq!(auth[0], ("/authenticate", "-"));
    assert!(
        auth[1..].iter().all(|a| *a == ("/resource", "t0k3n")),
        "{auth:?}"
    );
    // pipeline.lua: three requests per request() call, written together.
    let v = run_json(&[
        &url,
        "-s",
        &script("wrk/pipeline.lua"),
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1",
    ]);
    let (done, sent) = (
        count(&v, &["requests", "completed"]),
        count(&v, &["requests", "sent"]),
    );
    assert_eq!(sent % 3, 0, "whole calls: {sent}");
    assert_eq!(count(&v, &["requests", "errors"]), 0);
    let log = logged(&server, 250 + done as usize);
    let uris: Vec<&str> = log[250..].iter().map(|l| uri_counter_token(l).0).collect();
    assert!(uris.len() as u64 >= done);
    assert_eq!(
        distinct(&uris.iter().map(|u| u.to_string()).collect::<Vec<_>>()),
        ["/?bar", "/?baz", "/?foo"]
    );
    // pipeline.lua's calls make three requests: -n could not end inside one.
    let (out, _) = run(&[&url, "-s", &script("wrk/pipeline.lua"), "-n", "10"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sends 3 requests at once"), "{stderr}");
    // delay.lua: each request waits 10-50 ms first, so one connection sends at most 100 in a
    // second; nginx saw each one pelt counted.
    let before = logged(&server, 0).len();
    let v = run_json(&[
        &url,
        "-s",
        &script("wrk/delay.lua"),
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1",
    ]);
    let done = count(&v, &["requests", "completed"]);
    assert!((1..=101).contains(&done), "{done}");
    assert_eq!(
        count(&v, &["requests", "sent"]),
        done + count(&v, &["requests", "in_flight"])
    );
    assert!(logged(&server, before + done as usize).len() >= before + done as usize);
    let pelt_delay = distinct(&logged(&server, 0)[before..]);
    // The same scripts on wrk against the same nginx: nginx logs the same requests.
    let Some(wrk) = wrk() else {
        return;
    };
    let on_wrk = |name: &str, args: &[&str]| -> Vec<String> {
        let before = logged(&server, 0).len();
        run_wrk_with(&wrk, &url, &script(name), args);
        logged(&server, before + 1)[before..].to_vec()
    };
    // stop.lua: each of wrk's threads stops at its 100th response too.
    let stopped = on_wrk("wrk/stop.lua", &["-t2", "-c2", "-d2s"]);
    assert_eq!(stopped.len(), 200, "{stopped:?}");
    let auth: Vec<(String, String)> = on_wrk("wrk/auth.lua", &["-t1", "-c1", "-d1s"])
        .iter()
        .map(|l| {
            let (uri, _, token) = uri_counter_token(l);
            (uri.to_string(), token.to_string())
        })
        .collect();
    assert_eq!(auth[0], ("/authenticate".to_string(), "-".to_string()));
    assert!(
        auth[1..]
            .iter()
            .all(|(u, t)| u == "/resource" && t == "t0k3n"),
        "{auth:?}"
    );
    let piped = on_wrk("wrk/pipeline.lua", &["-t1", "-c2", "-d1s"]);
    let uris: Vec<String> = piped
        .iter()
        .map(|l| uri_counter_token(l).0.to_string())
        .collect();
    assert_eq!(distinct(&uris), ["/?bar", "/?baz", "/?foo"]);
    let delayed = on_wrk("wrk/delay.lua", &["-t1", "-c1", "-d1s"]);
    assert!(delayed.len() <= 101, "{}", delayed.len());
    assert_eq!(distinct(&delayed), pelt_delay);
}

#[test]
fn hostile_scripts_end_in_counted_errors_or_one_line() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 0);
    let dir = Files::new("hostile-scripts", &[]);
    let write = |name: &str, text: &str| dir.write(name, text);
    // Every 1,000th request() raises an error: a script error each, the rest sent.
    let every = write(
        "every.lua",
        "n = 0\nfunction request()\n  n = n + 1\n  if n % 1000 == 0 then error('the 1000th') end\n  \
         return wrk.format()\nend\n",
    );
    let v = run_json(&[&url, "-s", &every, "-n", "5000", "-c", "1", "-t", "1"]);
    assert_eq!(count(&v, &["requests", "completed"]), 4995);
    assert_eq!(count(&v, &["errors", "script"]), 5);
    assert_eq!(logged(&server, 4995).len(), 4995);
    // An endless loop in request() after 20 requests: each call is cut at its instruction
    // budget with its line, and the run ends at -d.
    let endless = write(
        "endless.lua",
        "n = 0\nfunction request()\n  n = n + 1\n  if n > 20 then while true do end end\n  \
         return wrk.format()\nend\n",
    );
    let v = run_json(&[&url, "-s", &endless, "-d", "1", "-c", "1", "-t", "1"]);
    assert_eq!(count(&v, &["requests", "completed"]), 20);
    assert!(count(&v, &["errors", "script"]) >= 1);
    assert_eq!(v["stopped_by"], "duration");
    let first = v["error_examples"]["script"].as_str().unwrap_or_default();
    assert!(
        first.contains("endless.lua:4: the script ran too long"),
        "{v}"
    );
    // A state that grows without bound; os.exit(); a request() that returns no request: one
    // line each, exit 2, nothing sent.
    let sent_before = logged(&server, 0).len();
    for (path, says) in [
        (
            write("grow.lua", "t = {}\nfunction request()\n  while true do t[#t + 1] = string.rep('x', 1000) .. #t end\nend\n"),
            "grow.lua:3: the script's state holds more than 512 MiB",
        ),
        (
            write("exit.lua", "function request()\n  os.exit(1)\nend\n"),
            "exit.lua:2: os.exit() is not allowed",
        ),
        (
            write("nothing.lua", "function request() return 42 end\n"),
            "request() returned integer, not a request",
        ),
    ] {
        let (out, _) = run(&[&url, "-s", &path, "-d", "5", "-t", "1", "-c", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
        assert!(stderr.lines().last().unwrap_or_default().contains(says), "{stderr}");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(logged(&server, 0).len(), sent_before);
    // pelt k8s ships a script in its Secret, for the coordinator's pod (which ships its text
    // to the agents).
    let post = script("wrk/post.lua");
    let (out, _) = run(&["k8s", &url, "-s", &post, "--agents", "2"]);
    let manifests = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(manifests.contains("file-0.lua: "), "{manifests}");
    assert!(
        manifests.contains("- \"/var/run/pelt/file-0.lua\""),
        "{manifests}"
    );
    // Hooks over WebSocket, and delay() with --rate, are refused before any traffic.
    let ws = url.replace("http://", "ws://");
    for (to, args, says) in [
        (&url, vec!["--rate", "100"], "delay() spaces a closed loop"),
        (&ws, vec![], "not WebSocket messages"),
    ] {
        let delay = script("wrk/delay.lua");
        let mut a = vec![to.as_str(), "-s", &delay, "-d", "1"];
        a.extend(args);
        let (out, _) = run(&a);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

/// pelt's own figures from a script: `pelt.counter(name)` and `pelt.histogram(name)`, kept in
/// each worker thread's state and added up exactly, in the result, in `done()` and through
/// `pelt merge`.
#[test]
fn a_scripts_counters_and_histograms_add_up_over_threads_and_results() {
    let Some(server) = nginx() else {
        return;
    };
    let url = server.url("http", 0);
    let dir = Files::new("script-metrics", &[]);
    // Four threads count their responses and record each body's length and the request's
    // number; done() reads the totals.
    let counted = dir.write(
        "counted.lua",
        "local n, seen, sizes, order = 0, pelt.counter('responses'), pelt.histogram('body'), \
         pelt.histogram('order')\n\
         function request()\n  n = n + 1\n  order:record(n)\n  return wrk.format()\nend\n\
         function response(status, headers, body)\n  seen:add()\n  \
         if status == 200 then pelt.counter('ok'):add(2) end\n  sizes:record(#body)\nend\n\
         function done(summary)\n  local o = pelt.histogram('order')\n  \
         print('done', pelt.counter('responses'):value(), o:count(), o:min(), o:max(), \
         summary.requests)\nend\n",
    );
    let before = logged(&server, 0).len();
    let mut results = Vec::new();
    for (name, n) in [("a.json", "4000"), ("b.json", "1000")] {
        let path = dir.path(name);
        let (out, _) = run(&[
            &url, "-s", &counted, "-n", n, "-c", "8", "-t", "4", "--json", &path,
        ]);
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_schema(&v);
        let n: u64 = n.parse().unwrap();
        let sc = &v["script"];
        assert_eq!(sc["file"], counted.as_str());
        assert_eq!(count(sc, &["counters", "responses"]), n, "{sc}");
        assert_eq!(count(sc, &["counters", "ok"]), 2 * n);
        assert_eq!(count(sc, &["histograms", "body", "count"]), n);
        assert_eq!(
            count(sc, &["histograms", "body", "max"]),
            2,
            "nginx's \"ok\""
        );
        // Each thread numbers its own requests from 1: the histogram holds every thread's.
        assert_eq!(count(sc, &["histograms", "order", "count"]), n);
        assert_eq!(count(sc, &["histograms", "order", "min"]), 1);
        // done() reads the totals of every thread.
        let done: Vec<&str> = stdout
            .lines()
            .find(|l| l.starts_with("done"))
            .unwrap_or_default()
            .split('\t')
            .collect();
        assert_eq!(done[1].parse::<u64>().unwrap(), n, "{stdout}");
        assert_eq!(done[2].parse::<u64>().unwrap(), n, "{stdout}");
        assert_eq!(done[3], "1");
        assert_eq!(done[5].parse::<u64>().unwrap(), n);
        // The summary shows them.
        assert!(stdout.contains("  Script  "), "{stdout}");
        assert!(stdout
            .lines()
            .any(|l| l.trim_start().starts_with("responses")));
        results.push(path);
    }
    assert_eq!(logged(&server, before + 5000).len(), before + 5000);
    // Two results merge exactly: counters add, histograms add.
    let merged = dir.path("merged.json");
    let (out, _) = run(&["merge", &results[0], &results[1], "--json", &merged]);
    assert!(out.status.success(), "{out:?}");
    let m: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_schema(&m);
    assert_eq!(count(&m, &["script", "counters", "responses"]), 5000);
    assert_eq!(count(&m, &["script", "histograms", "order", "count"]), 5000);
    // A script without per-request hooks counts in its threads' init() (four states) and its
    // setup state; a bad value is one line with the script's line, before any traffic.
    let init = dir.write(
        "init.lua",
        "pelt.counter('states'):add()\nfunction init(args) pelt.histogram('threads'):record(1) end\n",
    );
    let v = run_json(&[&url, "-s", &init, "-n", "10", "-t", "4", "-c", "4"]);
    assert_eq!(
        count(&v, &["script", "counters", "states"]),
        5,
        "setup and 4 threads"
    );
    assert_eq!(count(&v, &["script", "histograms", "threads", "count"]), 4);
    let sent = logged(&server, 0).len();
    for (text, says) in [
        (
            "function init() pelt.counter('x'):add(-1) end\n",
            "bad.lua:1: counter:add(n): a whole number",
        ),
        (
            "function init() pelt.histogram({}) end\n",
            "bad.lua:1: pelt.histogram(name): a name",
        ),
        (
            "function init() pelt.histogram('h'):record(0.5) end\n",
            "bad.lua:1: histogram:record(v)",
        ),
    ] {
        let bad = dir.write("bad.lua", text);
        let (out, _) = run(&[&url, "-s", &bad, "-d", "5"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.lines().last().unwrap_or_default().contains(says),
            "{stderr}"
        );
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(logged(&server, 0).len(), sent);
}

#[test]
fn an_open_loop_with_request_per_request_shows_a_server_stall() {
    // The server freezes for 1 s from its second second; requests keep falling due meanwhile.
    let (_server, url) = serve(pelt_server::ServerConfig {
        stall: Some((Duration::from_secs(1), Duration::from_secs(1))),
        ..Default::default()
    });
    let v = run_json(&[
        &url,
        "-s",
        &script("wrk/counter.lua"),
        "--rate",
        "200",
        "-d",
        "3",
        "-c",
        "50",
        "-t",
        "1",
    ]);
    assert!(count(&v, &["requests", "completed"]) > 300);
    assert_eq!(count(&v, &["requests", "errors"]), 0);
    // Latency counts from each request's due time: those due in the stall waited for its end.
    let l = &v["latency_us"];
    assert!(l["p99"].as_u64().unwrap() >= 500_000, "{l}");
    assert!(l["max"].as_u64().unwrap() >= 800_000, "{l}");
}

/// A report's lines with their figures (and units) as `#`, spaces collapsed: its layout.
fn layout(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut out = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '.')
                {
                    chars.next();
                }
                out.push('#');
            } else {
                out.push(c);
            }
        }
        lines.push(out.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    lines
}

#[test]
fn pelt_wrk_takes_wrks_flags_and_prints_its_report() {
    let (Some(server), Some(wrk)) = (nginx(), wrk()) else {
        return;
    };
    let url = server.url("http", 0);
    let flags = ["-t2", "-c4", "-d1s", "--latency"];
    let mut args = vec!["wrk"];
    args.extend(flags);
    args.push(&url);
    let (out, _) = run(&args);
    assert!(out.status.success(), "{out:?}");
    let mine = String::from_utf8(out.stdout).unwrap();
    let done: u64 = mine
        .lines()
        .find_map(|l| l.trim().split_once(" requests in ")?.0.parse().ok())
        .unwrap();
    let logged_now = logged(&server, done as usize).len() as u64;
    assert!(
        done <= logged_now && logged_now <= done + 4,
        "{done} {logged_now}"
    );
    let child = std::process::Command::new(&wrk)
        .args(flags)
        .arg(&url)
        .output()
        .unwrap();
    let theirs = String::from_utf8(child.stdout).unwrap();
    assert_eq!(layout(&mine), layout(&theirs), "{mine}\n{theirs}");
    // A script with its arguments after the URL, as wrk takes them; its done() after the
    // report.
    let script = script("threads.lua");
    let (out, _) = run(&[
        "wrk",
        "-t3",
        "-c3",
        "-d1s",
        "-s",
        &script,
        &url,
        "from-args",
        "two",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let after = text.split_once("Transfer/sec:").unwrap().1;
    assert!(after.contains("thread 3 started 30 tags a,b"), "{text}");
    // wrk's rule: connections >= threads.
    let (out, _) = run(&["wrk", "-t4", "-c2", &url]);
    assert_eq!(out.status.code(), Some(2));
}

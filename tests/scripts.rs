//! Scripts (`-s`): wrk's own example scripts run on pelt and on wrk (Debian's) against the same
//! nginx, whose access log says what each sent; a script's setup, init and done across threads;
//! and bad scripts, refused in one line before any traffic.

mod util;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use util::real::{find_server, nginx_command, RealServer};
use util::*;

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(name)
        .display()
        .to_string()
}

/// nginx answering 200, logging each request's method, URI, Content-Type, Content-Length,
/// Host and X-Args.
fn nginx() -> Option<RealServer> {
    let bin = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"])?;
    Some(RealServer::start("nginx-scripts", 1, move |dir, ports| {
        let http = format!(
            "    log_format s '$request_method $request_uri \"$http_content_type\" \
             $content_length $http_host $http_x_args';\n    access_log {d}/access.log s;\n    \
             server {{ listen 127.0.0.1:{}; location / {{ return 200 \"ok\"; }} }}\n",
            ports[0],
            d = dir.display(),
        );
        nginx_command(&bin, dir, &http)
    }))
}

/// The access log's lines, waiting (5 s at most) for at least `n`.
fn logged(server: &RealServer, n: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&server.access_log).unwrap_or_default();
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
    let child = std::process::Command::new(wrk)
        .args(["-t1", "-c2", "-d1s", "-s", script, url])
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
            "POST / \"application/x-www-form-urlencoded\" 16 {host} -"
        )]
    );
    assert_eq!(pelt, wrk, "the same request from both");
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
    assert_eq!(distinct(&log), [format!("GET /from-args \"-\" - {host} 2")]);
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

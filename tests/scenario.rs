//! Scenarios end to end: pelt's virtual users against a shop that checks who is asking
//! (`tests/scenario-app/app.py`: each user's token and session cookie are its own, every
//! other request is refused and counted), on both I/O backends. The shop's own counts must be
//! pelt's per-step counts, and no request may carry another user's token or cookie.

mod util;

use util::real::*;
use util::shop::*;
use util::*;

#[test]
fn each_user_logs_in_once_and_carries_its_own_token_and_cookie_on_both_backends() {
    for io in ["uring", "epoll"] {
        let shop = Shop::start();
        let files = Files::new(io, &[("shop.yaml", SHOP), ("users.csv", &users(12))]);
        let steps_csv = files.path("steps.csv");
        let v = run_json(&[
            &shop.url,
            "--scenario",
            &files.path("shop.yaml"),
            "--csv-targets",
            &steps_csv,
            "-c",
            "12",
            "-t",
            "2",
            "-n",
            "600",
            "--io",
            io,
            "--expect",
            "checks>99.9%",
            "--expect",
            "iterations_failed<0.1%",
            "--expect",
            "step[items].p99<10s",
        ]);
        let held = thresholds_held(&v);
        assert_eq!(held, [true, true, true], "{io}: {}", v["thresholds"]);
        let stats = shop.stats();
        // Nobody was refused: every request carried its own user's token and cookie.
        assert_eq!(shop_count(&stats, "refused"), 0, "{io}: {stats}");
        // Every user logged in exactly once, and the shop's counts are pelt's, step by step.
        for k in 0..12 {
            assert_eq!(stats[format!("login u{k}")], 1, "{io}: {stats}");
        }
        assert_eq!(v["requests"]["completed"], 600, "{io}");
        assert_eq!(v["requests"]["errors"], 0, "{io}");
        assert_steps_are_the_shops(&v, &stats, io);
        // --csv-targets: a row per step, its counts and percentiles those of the JSON.
        let csv = std::fs::read_to_string(&steps_csv).unwrap();
        let mut rows = csv.lines();
        assert_eq!(
            rows.next(),
            Some("name,sent,completed,errors,in_flight,rps,mean_us,p50_us,p90_us,p99_us,max_us,1xx,2xx,3xx,4xx,5xx,other,ttfb_p50_us,ttfb_p99_us,recorded_p50_us,recorded_p99_us")
        );
        for (row, step) in rows.zip(["login", "items", "cart"]) {
            let t = target(&v, step);
            let f: Vec<&str> = row.split(',').collect();
            let n = |k: &str| t[k].as_u64().unwrap().to_string();
            let l = |k: &str| t["latency_us"][k].as_u64().unwrap().to_string();
            assert_eq!(
                (f[0], f[1], f[2], f[3], f[8], f[9], f[12]),
                (
                    step,
                    n("sent").as_str(),
                    n("completed").as_str(),
                    "0",
                    l("p90").as_str(),
                    l("p99").as_str(),
                    n("completed").as_str()
                ),
                "{io}: {row}"
            );
        }
        assert_eq!(csv.lines().count(), 4, "{csv}");
        assert_carts_took_the_captured_id(&stats);
        // The result, scenario section included, is what docs/result-schema.json says.
        assert_schema(&v);
        let s = &v["scenario"];
        assert!(s["file"].as_str().unwrap().ends_with("shop.yaml"));
        let checks: Vec<(String, u64, u64)> = s["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["passed"].as_u64().unwrap(),
                    c["failed"].as_u64().unwrap(),
                )
            })
            .collect();
        let completed = |step| target(&v, step)["completed"].as_u64().unwrap();
        assert_eq!(
            checks,
            [
                ("logged in".to_string(), 12, 0),
                ("listed".to_string(), completed("items"), 0),
                ("added".to_string(), completed("cart"), 0)
            ]
        );
        // An iteration is a list and a cart: each cart ended one, without a failure.
        let it = &s["iterations"];
        assert_eq!(
            it["completed"].as_u64(),
            Some(completed("cart")),
            "{io}: {it}"
        );
        assert_eq!(it["failed"], 0);
        assert!(it["started"].as_u64().unwrap() >= completed("cart"));
    }
}

#[test]
fn failed_checks_and_captures_are_counted_and_a_stop_ends_the_iteration() {
    let shop = Shop::start();
    // Without the login, every list is refused (401): its check fails, its capture finds
    // nothing, and `on_failure: stop` ends the iteration before the cart.
    let text = r#"
scenarios:
  - flow:
      - get:
          url: /items
          name: items
          capture:
            - json: /items/0/id
              as: id
          check:
            - status: 200
              name: listed
          on_failure: stop
      - post:
          url: "/cart/{{id}}"
          name: cart
"#;
    let files = Files::new("stop", &[("stop.yaml", text)]);
    let v = run_json(&[
        &shop.url,
        "--scenario",
        &files.path("stop.yaml"),
        "-c",
        "2",
        "-n",
        "40",
    ]);
    let stats = shop.stats();
    assert_eq!(shop_count(&stats, "refused /items"), 40, "{stats}");
    assert_eq!(shop_count(&stats, "cart"), 0, "{stats}");
    assert_eq!(v["status"]["401"], 40);
    let s = &v["scenario"];
    assert_eq!(s["checks"][0]["failed"], 40);
    assert_eq!(s["iterations"]["failed"], 40);
    // The same with objectives on the checks and the iterations: they fail, exit 3.
    let (out, _) = run(&[
        &shop.url,
        "--scenario",
        &files.path("stop.yaml"),
        "-c",
        "2",
        "-n",
        "10",
        "--expect",
        "checks>99%",
        "--expect",
        "iterations_failed<=0",
        "--json",
        "-",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["thresholds"][0]["actual"], 0.0);
    assert_eq!(r["thresholds"][1]["actual"], 10.0);
    assert_eq!(s["iterations"]["completed"], 0);
}

#[test]
fn open_loop_iterations_arrive_on_schedule_and_every_user_keeps_its_own_session() {
    for io in ["uring", "epoll"] {
        let shop = Shop::start();
        let files = Files::new(
            &format!("open-{io}"),
            &[("shop.yaml", SHOP), ("users.csv", &users(12))],
        );
        // 200 iterations a second, up to 12 users, until 300 requests have been sent.
        let v = run_json(&[
            &shop.url,
            "--scenario",
            &files.path("shop.yaml"),
            "--rate",
            "200",
            "-c",
            "2",
            "--max-users",
            "12",
            "-t",
            "2",
            "-n",
            "300",
            "--io",
            io,
        ]);
        assert_schema(&v);
        assert_eq!(v["load_model"], "open", "{io}");
        assert_eq!(v["latency_from"], "due", "{io}");
        assert_eq!(v["requests"]["completed"], 300, "{io}: {}", v["requests"]);
        assert_eq!(v["requests"]["errors"], 0, "{io}");
        let stats = shop.stats();
        assert_eq!(shop_count(&stats, "refused"), 0, "{io}: {stats}");
        let logins = shop_count(&stats, "login ");
        assert!((1..=12).contains(&logins), "{io}: {stats}");
        for k in 0..12 {
            assert!(
                stats[format!("login u{k}")].as_u64().unwrap_or(0) <= 1,
                "{stats}"
            );
        }
        assert_steps_are_the_shops(&v, &stats, io);
        // Every completed iteration is a list, a think of 1 to 3 ms and a cart: none is
        // shorter than the think.
        let s = &v["scenario"];
        let it = &s["iterations"];
        let carts = target(&v, "cart")["completed"].as_u64().unwrap();
        assert_eq!(it["completed"].as_u64(), Some(carts), "{io}: {it}");
        assert!(
            it["duration_us"]["min"].as_u64().unwrap() >= 1000,
            "{io}: {it}"
        );
        let h = v["histograms"]["iteration_us"].as_str().unwrap();
        assert!(h.starts_with("HISTF"), "{h}");
        let items = target(&v, "items")["completed"].as_u64().unwrap();
        let captures: Vec<(&str, u64, u64)> = s["captures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let n = |k: &str| c[k].as_u64().unwrap();
                (c["name"].as_str().unwrap(), n("found"), n("missing"))
            })
            .collect();
        assert_eq!(
            captures,
            [("login: token", logins, 0), ("items: id", items, 0)],
            "{io}"
        );
    }
}

#[test]
fn over_https_the_secure_session_cookie_goes_back_and_users_ramp_in_stages() {
    let identity = pelt_server::TlsIdentity::self_signed().unwrap();
    let files = Files::new(
        "tls",
        &[
            ("shop.yaml", SHOP),
            ("users.csv", &users(6)),
            ("cert.pem", &identity.cert_pem),
            ("key.pem", &identity.key_pem),
        ],
    );
    let shop = Shop::start_tls(&files.path("cert.pem"), &files.path("key.pem"));
    assert!(shop.url.starts_with("https://"));
    // Closed loop, the users ramping 0 -> 6 -> 2: each logs in once over TLS, and its
    // Secure cookie comes back on every request (the shop refuses any request without it).
    let v = run_json(&[
        &shop.url,
        "--scenario",
        &files.path("shop.yaml"),
        "--cacert",
        &files.path("cert.pem"),
        "--stages",
        "500ms:6,500ms:2",
        "-t",
        "2",
    ]);
    assert_schema(&v);
    let stats = shop.stats();
    assert_eq!(shop_count(&stats, "refused"), 0, "{stats}");
    let logins = shop_count(&stats, "login ");
    assert!((1..=6).contains(&logins), "{stats}");
    assert!(shop_count(&stats, "items ") > 0, "{stats}");
    assert_eq!(v["errors"], serde_json::json!({}), "{}", v["errors"]);
    assert!(v["scenario"]["iterations"]["completed"].as_u64().unwrap() > 0);
    let peak = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["connections"].as_u64().unwrap())
        .max();
    assert!(peak.is_some_and(|c| c <= 6), "{}", v["timeline"]);
}

/// nginx from Debian in front of the shop: HTTP/2 to pelt on listener 0 (h2c, prior
/// knowledge) and 1 (TLS, ALPN h2), HTTP/1.1 keep-alive to the shop.
fn nginx_before(bin: &std::path::Path, shop: &Shop) -> RealServer {
    let upstream = shop
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let bin = bin.to_path_buf();
    RealServer::start("nginx-shop", 2, move |dir, ports| {
        let (_, cert, key) = certificates(dir);
        let d = dir.display();
        let http = format!(
            "    access_log {d}/access.log;
    upstream shop {{ server {upstream}; keepalive 32; }}
    server {{
        listen 127.0.0.1:{p0} http2;
        listen 127.0.0.1:{p1} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass http://shop;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }}
    }}
",
            cert = cert.display(),
            key = key.display(),
            p0 = ports[0],
            p1 = ports[1],
        );
        nginx_command(&bin, dir, &http)
    })
}

/// Over HTTP/2 each stream of a connection is a user: 3 connections of 4 streams are 12 users,
/// each logging in once and carrying its own token and cookie on its own stream, with the
/// requests rendered from the steps' templates per stream. nginx speaks HTTP/2 to pelt (h2c
/// on one backend, TLS on the other) and passes every request to the shop, whose counts are
/// pelt's per step.
#[test]
fn over_http2_each_stream_is_a_user_with_its_own_session() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    for (io, listener) in [("uring", 0), ("epoll", 1)] {
        let shop = Shop::start();
        let front = nginx_before(&bin, &shop);
        let url = front.url(if listener == 0 { "http" } else { "https" }, listener);
        let ca = front.dir.join("ca.pem").display().to_string();
        let tls = if listener == 1 {
            vec!["--cacert", ca.as_str()]
        } else {
            vec![]
        };
        let files = Files::new(
            &format!("h2-{io}"),
            &[("shop.yaml", SHOP), ("users.csv", &users(12))],
        );
        let shop_yaml = files.path("shop.yaml");
        let mut args = vec![
            url.as_str(),
            "--scenario",
            &shop_yaml,
            "--http2",
            "-c",
            "3",
            "--streams",
            "4",
            "-t",
            "1",
            "-n",
            "600",
            "--io",
            io,
        ];
        args.extend(tls);
        let v = run_json(&args);
        assert_eq!(v["http"], "2", "{io}");
        assert_each_stream_was_a_user(&v, &shop, io);
    }
}

/// 600 requests of 12 users on 3 connections of 4 streams: each user logged in once, carried
/// its own token and cookie, and the shop's counts are pelt's per step.
fn assert_each_stream_was_a_user(v: &serde_json::Value, shop: &Shop, at: &str) {
    assert_eq!(v["requests"]["completed"], 600, "{at}: {v}");
    assert_eq!(v["requests"]["errors"], 0, "{at}: {v}");
    assert_eq!(count(v, &["connections_opened"]), 3, "{at}: {v}");
    let stats = shop.stats();
    assert_eq!(shop_count(&stats, "refused"), 0, "{at}: {stats}");
    for k in 0..12 {
        assert_eq!(stats[format!("login u{k}")], 1, "{at}: {stats}");
    }
    assert_steps_are_the_shops(v, &stats, at);
    let it = &v["scenario"]["iterations"];
    assert_eq!(it["failed"], 0, "{at}: {it}");
    assert_eq!(
        it["completed"].as_u64(),
        target(v, "cart")["completed"].as_u64(),
        "{at}: {it}"
    );
    assert_carts_took_the_captured_id(&stats);
}

/// Over HTTP/3 too each stream is a user: caddy from Debian in front of the shop (HTTP/3 to
/// pelt, HTTP/1.1 to the shop), the steps' templates rendered per stream, captures and
/// cookies read from the QUIC streams' responses.
#[test]
fn over_http3_each_stream_is_a_user_with_its_own_session() {
    let shop = Shop::start();
    let upstream = shop.url.trim_start_matches("http://").trim_end_matches('/');
    let Some(front) = util::h3::caddy(&format!("reverse_proxy {upstream}")) else {
        return;
    };
    let url = front.url("https", 0);
    let files = Files::new("h3", &[("shop.yaml", SHOP), ("users.csv", &users(12))]);
    let shop_yaml = files.path("shop.yaml");
    let v = run_json(&[
        &url,
        "--scenario",
        &shop_yaml,
        "--http3",
        "--insecure",
        "-c",
        "3",
        "--streams",
        "4",
        "-t",
        "1",
        "-n",
        "600",
    ]);
    assert_eq!(v["http"], "3");
    assert_each_stream_was_a_user(&v, &shop, "http3");
}

#[test]
fn a_stalled_server_shows_in_every_iteration_it_held_up() {
    let shop = Shop::start();
    // One user; an iteration every 50 ms; each takes 100 ms. Iteration k arrives at 50k ms
    // and can start only at 100k ms: its latency, counted from its arrival, is 100 + 50k ms
    // (the tenth: 550 ms), where a closed loop would report 100 ms for every one.
    let files = Files::new(
        "stall",
        &[(
            "slow.yaml",
            "scenarios:\n  - flow:\n      - get: {url: /slow/100, name: slow}\n",
        )],
    );
    let v = run_json(&[
        &shop.url,
        "--scenario",
        &files.path("slow.yaml"),
        "--rate",
        "20",
        "-c",
        "1",
        "--max-users",
        "1",
        "-n",
        "10",
    ]);
    assert_eq!(v["requests"]["completed"], 10);
    let slow = &target(&v, "slow")["latency_us"];
    assert!(slow["max"].as_u64().unwrap() >= 500_000, "{slow}");
    assert!(slow["min"].as_u64().unwrap() >= 100_000, "{slow}");
    let it = &v["scenario"]["iterations"];
    assert_eq!(it["completed"], 10);
    assert!(
        it["duration_us"]["max"].as_u64().unwrap() >= 500_000,
        "{it}"
    );
    // The wait was pelt's queue, not the server: the lag shows it.
    let lag = &v["open_loop"]["lag_us"];
    assert!(lag["max"].as_u64().unwrap() >= 400_000, "{lag}");
}

#[test]
fn a_bad_scenario_is_one_line_naming_its_place_before_any_traffic() {
    let files = Files::new(
        "bad",
        &[
            (
                "typo.yaml",
                "scenarios:\n  - flow:\n      - fetch: {url: /}\n",
            ),
            (
                "early.yaml",
                "scenarios:\n  - flow:\n      - get: {url: \"/{{id}}\"}\n",
            ),
            ("ok.yaml", "scenarios:\n  - flow:\n      - get: {url: /}\n"),
        ],
    );
    let url = format!("http://127.0.0.1:{}/", closed_port());
    assert_bad_input(
        &[&url, "--scenario", &files.path("typo.yaml")],
        "typo.yaml:3:9: unknown variant `fetch`",
    );
    assert_bad_input(
        &[&url, "--scenario", &files.path("early.yaml")],
        "early.yaml:3:20: variable 'id' is used before any step captures it",
    );
    assert_bad_input(
        &[&url, "--scenario", &files.path("missing.yaml")],
        "cannot read the scenario file",
    );
    assert_bad_input(
        &[
            &url,
            "--scenario",
            &files.path("ok.yaml"),
            "--pipeline",
            "2",
        ],
        "nothing to pipeline: drop --pipeline",
    );
    assert_bad_input(
        &[
            &url,
            "--scenario",
            &files.path("ok.yaml"),
            "--targets",
            "t.txt",
        ],
        "cannot be used with",
    );
    assert_bad_input(
        &["--scenario", &files.path("ok.yaml")],
        "--scenario needs a URL",
    );
}

#[test]
fn a_run_ends_when_its_users_run_out_of_unique_rows() {
    let shop = Shop::start();
    let text = "config:\n  data:\n    - file: ids.csv\n      per: iteration\n      order: unique\nscenarios:\n  - flow:\n      - post: {url: \"/cart/{{id}}\", name: cart}\n";
    let files = Files::new(
        "unique",
        &[("rows.yaml", text), ("ids.csv", "id\n1\n2\n3\n")],
    );
    // -n asks for more than there are rows: the run ends when the last row was used.
    let v = run_json(&[
        &shop.url,
        "--scenario",
        &files.path("rows.yaml"),
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "1000",
    ]);
    assert_eq!(v["requests"]["sent"], 3);
    assert_eq!(v["stopped_by"], "requests");
    assert_eq!(v["scenario"]["iterations"]["started"], 3);
    // Refused (no login), but each row went once.
    assert_eq!(shop_count(&shop.stats(), "refused /cart/"), 3);
}

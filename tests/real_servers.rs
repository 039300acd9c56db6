//! pelt against real servers from Debian, as its users run it: nginx (HTTP/1.1 keep-alive,
//! close and pipelined; HTTPS; HTTP/2 over TLS; h2c; Unix sockets; many targets) and Apache httpd with its default
//! `MaxKeepAliveRequests 100`, so every 100th response closes its connection on purpose
//! (HTTP/1.1, HTTPS, HTTP/2 over TLS, h2c). Every case checks `completed == n`, zero errors,
//! and that the server's own access log gained exactly n lines.
//!
//! `.ci/run` installs both (Debian: nginx-light, apache2). Elsewhere a missing server is
//! reported and its test skipped; under CI a missing server fails the test.
//!
//! Neither server can bind port 0 and report the port, so each listener gets a port that was
//! free a moment before (bound to 0 and released); a server that fails to start (the port
//! was taken meanwhile) is started again on new ports.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use util::real::*;
use util::*;

/// The backends here: epoll, and io_uring where this kernel allows it.
fn backends() -> Vec<&'static str> {
    let mut b = vec!["epoll"];
    if pelt_engine::IoBackend::Uring.check().is_ok() {
        b.push("uring");
    }
    b
}

impl RealServer {
    /// The access log from byte `from` on: how many requests each path got (query dropped).
    fn paths_since(&self, from: usize) -> std::collections::BTreeMap<String, u64> {
        let log = std::fs::read(&self.access_log).unwrap_or_default();
        let mut paths = std::collections::BTreeMap::new();
        for line in String::from_utf8_lossy(&log[from.min(log.len())..]).lines() {
            // `... "GET /t3?q=3 HTTP/1.1" 200 ...`
            let Some(request) = line.split('"').nth(1) else {
                continue;
            };
            let target = request.split(' ').nth(1).unwrap_or("");
            let path = target.split('?').next().unwrap_or("").to_string();
            *paths.entry(path).or_insert(0) += 1;
        }
        paths
    }

    fn log_len(&self) -> usize {
        std::fs::metadata(&self.access_log).map_or(0, |m| m.len() as usize)
    }

    fn log_lines(&self) -> u64 {
        std::fs::read(&self.access_log)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count() as u64)
            .unwrap_or(0)
    }

    /// Runs pelt on `url` with `flags` (split at spaces), one thread, backend `io`, and checks
    /// the run and the server agree: `n` requests sent and completed with status 200, no
    /// error, and `n` more lines in the access log. The server logs a request after answering
    /// it, so its log may trail the last response a little: the count is awaited (at most
    /// 10 s), and must then be exactly `n`.
    fn exact(&self, io: &str, n: u64, url: &str, flags: &str) -> serde_json::Value {
        let before = self.log_lines();
        let n_arg = n.to_string();
        let mut all = vec![url];
        all.extend(flags.split_whitespace());
        if !all.contains(&"-t") {
            all.extend(["-t", "1"]);
        }
        all.extend(["--io", io, "-n", &n_arg, "--json", "-", "-q"]);
        let (out, _) = wait_bounded(spawn_any_backend(&all), CHILD_LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{}: pelt {all:?}: {stderr}",
            self.name
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_invariant(&v);
        let what = format!("{} {all:?}", self.name);
        assert_eq!(count(&v, &["requests", "sent"]), n, "{what}: {v}");
        assert_eq!(count(&v, &["requests", "completed"]), n, "{what}: {v}");
        assert_eq!(count(&v, &["requests", "errors"]), 0, "{what}: {v}");
        assert_eq!(count(&v, &["status", "200"]), n, "{what}: {v}");
        assert_eq!(v["connection_errors"], serde_json::json!({}), "{what}: {v}");
        let start = Instant::now();
        while self.log_lines() < before + n && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Anything past n would show up by now too.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            self.log_lines() - before,
            n,
            "{what}: the server's access log disagrees"
        );
        v
    }
}

/// nginx 1.22 as the issue that found the HTTP/2 bug ran it: one worker, keep-alive without a
/// request limit, 256 streams, a shared session cache and tickets. Listeners: 0 HTTP/1.1,
/// 1 TLS (ALPN h2 and http/1.1), 2 h2c (prior knowledge).
fn nginx(bin: &Path) -> RealServer {
    RealServer::start("nginx", 3, |dir, ports| {
        let (_, cert, key) = certificates(dir);
        let d = dir.display();
        let http = format!(
            "    log_format seq '$remote_addr - - [$time_local] \"$request\" $status $body_bytes_sent \"$http_x_seq\" $content_length';
    access_log {d}/access.log seq;
    keepalive_requests 1000000000;
    http2_max_concurrent_streams 256;
    ssl_session_cache shared:S:10m;
    ssl_session_tickets on;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    server {{
        listen 127.0.0.1:{p0};
        listen 127.0.0.1:{p1} ssl http2;
        listen 127.0.0.1:{p2} http2;
        listen unix:{d}/nginx.sock;
        listen unix:{d}/nginx-h2.sock http2;
        location / {{ return 200 \"OK\"; }}
    }}
",
            cert = cert.display(),
            key = key.display(),
            p0 = ports[0],
            p1 = ports[1],
            p2 = ports[2],
        );
        nginx_command(bin, dir, &http)
    })
}

#[test]
fn nginx_http1_keep_alive_close_and_pipelined() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let server = nginx(&bin);
    let url = server.url("http", 0);
    for io in backends() {
        let v = server.exact(io, 20_000, &url, "-c 8");
        assert_eq!(count(&v, &["connections_opened"]), 8, "{io}: {v}");
        let v = server.exact(io, 2_000, &url, "-c 4 --no-keepalive");
        assert_eq!(count(&v, &["connections_opened"]), 2_000, "{io}: {v}");
        server.exact(io, 20_000, &url, "-c 4 --pipeline 16");
    }
}

#[test]
fn nginx_https_and_http2() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let server = nginx(&bin);
    let ca = format!("--cacert {}", server.dir.join("ca.pem").display());
    let (https, h2c) = (server.url("https", 1), server.url("http", 2));
    for io in backends() {
        // HTTPS, HTTP/1.1: keep-alive, and a new (resumed) connection per request.
        server.exact(io, 5_000, &https, &format!("-c 4 {ca}"));
        let v = server.exact(io, 500, &https, &format!("-c 2 --no-keepalive {ca}"));
        assert!(count(&v, &["tls_handshakes", "resumed"]) > 0, "{io}: {v}");
        // HTTP/2 over TLS, the issue's run, three times: nginx (TLS 1.2) writes its SETTINGS
        // right behind its Finished, which pelt once read as HTTP/1.1 in about two runs of
        // three. Every run must be exact, on four connections.
        for _ in 0..3 {
            let flags = format!("--http2 -c 4 --streams 100 {ca}");
            let v = server.exact(io, 200_000, &https, &flags);
            assert_eq!(count(&v, &["connections_opened"]), 4, "{io}: {v}");
            assert_eq!(v["http"], "2", "{io}: {v}");
        }
        // h2c, prior knowledge.
        let v = server.exact(io, 20_000, &h2c, "--http2 -c 4 --streams 50");
        assert_eq!(count(&v, &["connections_opened"]), 4, "{io}: {v}");
    }
}

/// `--unix-socket` against nginx listening on Unix sockets: HTTP/1.1 (keep-alive and
/// pipelined) and h2c, exact by nginx's own access log.
#[test]
fn nginx_over_unix_sockets() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let server = nginx(&bin);
    let h1 = server.dir.join("nginx.sock").display().to_string();
    let h2 = server.dir.join("nginx-h2.sock").display().to_string();
    for io in backends() {
        let v = server.exact(
            io,
            10_000,
            "http://localhost/",
            &format!("--unix-socket {h1} -c 4"),
        );
        assert_eq!(v["unix_socket"], h1.as_str(), "{v}");
        let flags = format!("--unix-socket {h1} -c 2 --pipeline 16");
        server.exact(io, 10_000, "http://localhost/", &flags);
        let flags = format!("--unix-socket {h2} --http2 -c 2 --streams 50");
        let v = server.exact(io, 10_000, "http://localhost/", &flags);
        assert_eq!(count(&v, &["connections_opened"]), 2, "{io}: {v}");
    }
}

/// Many requests (`--targets`): over two threads, with and without pipelining, and over h2c,
/// every target gets exactly its share, counted by nginx's access log per path. The targets
/// mix GET with a query and a header, POST with a body file, and HEAD (whose responses have
/// no body although they say `Content-Length: 2`: the parser must know which request each
/// response answers).
#[test]
fn nginx_counts_exact_shares_per_target() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let server = nginx(&bin);
    let (url, h2c) = (server.url("http", 0), server.url("http", 2));
    let body = server.dir.join("body.json");
    std::fs::write(&body, br#"{"k":1}"#).unwrap();
    let targets = |base: &str| -> String {
        (0..7)
            .map(|t| match t % 3 {
                0 => format!("GET {base}t{t}?q={t}\nX-Target: {t}\n"),
                1 => format!(
                    "POST {base}t{t}\nContent-Type: application/json\n@{}\n",
                    body.display()
                ),
                _ => format!("HEAD {base}t{t}\n"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let http_file = server.dir.join("targets.txt");
    std::fs::write(&http_file, targets(&url)).unwrap();
    // The same targets as JSON lines, for the h2c listener.
    let json_file = server.dir.join("targets.jsonl");
    let lines: Vec<String> = (0..7)
        .map(|t| {
            let method = ["GET", "POST", "HEAD"][t % 3];
            let body = if t % 3 == 1 { r#","body":"{}""# } else { "" };
            format!(r#"{{"method":"{method}","url":"{h2c}t{t}"{body}}}"#)
        })
        .collect();
    std::fs::write(&json_file, lines.join("\n")).unwrap();
    let k = 300;
    let want: std::collections::BTreeMap<String, u64> =
        (0..7).map(|t| (format!("/t{t}"), k)).collect();
    for io in backends() {
        for (base, file, flags) in [
            (&url, &http_file, "-c 4 -t 2"),
            (&url, &http_file, "-c 4 -t 2 --pipeline 4"),
            (&h2c, &json_file, "--http2 -c 2 --streams 20 -t 2"),
        ] {
            let from = server.log_len();
            let flags = format!("--targets {} {flags}", file.display());
            let v = server.exact(io, 7 * k, base, &flags);
            assert_eq!(v["request_set"]["entries"], 7, "{io} {flags}: {v}");
            assert_eq!(v["method"], "GET,POST,HEAD", "{io} {flags}: {v}");
            assert_eq!(server.paths_since(from), want, "{io} {flags}");
            // pelt's own per-target figures agree with the server's log.
            let per: Vec<(String, u64, u64, u64)> = v["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    let n = |k: &str| t[k].as_u64().unwrap();
                    (
                        t["name"].as_str().unwrap().to_string(),
                        n("sent"),
                        n("completed"),
                        t["status"]["200"].as_u64().unwrap_or(0),
                    )
                })
                .collect();
            let expected: Vec<(String, u64, u64, u64)> = (0..7)
                .map(|t| (format!("{} /t{t}", ["GET", "POST", "HEAD"][t % 3]), k, k, k))
                .collect();
            assert_eq!(per, expected, "{io} {flags}");
        }
    }
}

/// Templates over HTTP/2: each stream's request is rendered on its own (path, header and body
/// from `{{seq}}`, its content-length from the rendered body), as nginx's log shows line by
/// line, on h2c and on TLS.
#[test]
fn nginx_http2_renders_templates_per_stream() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let server = nginx(&bin);
    let ca = format!("--cacert {}", server.dir.join("ca.pem").display());
    let n = 3_000u64;
    for io in backends() {
        for (url, tls) in [
            (server.url("http", 2), ""),
            (server.url("https", 1), ca.as_str()),
        ] {
            let from = server.log_len();
            let url = format!("{url}t/{{{{seq}}}}");
            let flags = format!(
                "--http2 -c 2 --streams 32 -t 2 -m POST -H X-Seq:{{{{seq}}}} -b {{\"seq\":{{{{seq}}}}}} {tls}"
            );
            server.exact(io, n, &url, &flags);
            let log = std::fs::read(&server.access_log).unwrap();
            let mut seen = std::collections::BTreeSet::new();
            for line in String::from_utf8_lossy(&log[from..]).lines() {
                // `... "POST /t/17 HTTP/2.0" 200 2 "17" 11`
                let fields: Vec<&str> = line.split('"').collect();
                let seq = fields[1]
                    .split(' ')
                    .nth(1)
                    .unwrap()
                    .trim_start_matches("/t/");
                assert_eq!(fields[3], seq, "{io} {url}: {line}");
                let length = format!("{{\"seq\":{seq}}}").len().to_string();
                assert_eq!(fields[4].trim(), length, "{io} {url}: {line}");
                seen.insert(seq.parse::<u64>().unwrap());
            }
            assert_eq!(seen, (0..n).collect(), "{io} {url}: every index once");
        }
    }
}

/// Apache httpd (event MPM) with its defaults for keep-alive: `MaxKeepAliveRequests 100`.
/// Listeners: 0 HTTP/1.1 and h2c, 1 TLS (ALPN h2 and http/1.1). `/` is a two-byte file.
fn apache(bin: &Path) -> RealServer {
    let modules = Path::new("/usr/lib/apache2/modules");
    RealServer::start("apache", 2, |dir, ports| {
        let (_, cert, key) = certificates(dir);
        let www = dir.join("www");
        std::fs::create_dir_all(&www).unwrap();
        std::fs::write(www.join("index.html"), "OK").unwrap();
        let d = dir.display();
        let m = modules.display();
        // As root, Apache's children need a user to run as; as anyone else they stay theirs.
        let user = if rustix::process::geteuid().is_root() {
            "User #65534\nGroup #65534\n"
        } else {
            ""
        };
        let conf = format!(
            "ServerRoot {d}
ServerName 127.0.0.1
{user}PidFile {d}/httpd.pid
Mutex file:{d} default
LoadModule mpm_event_module {m}/mod_mpm_event.so
LoadModule authz_core_module {m}/mod_authz_core.so
LoadModule dir_module {m}/mod_dir.so
LoadModule ssl_module {m}/mod_ssl.so
LoadModule socache_shmcb_module {m}/mod_socache_shmcb.so
LoadModule http2_module {m}/mod_http2.so
ErrorLog {d}/error.log
LogFormat \"%h \\\"%r\\\" %>s %b %H\" pelt
CustomLog {d}/access.log pelt
DocumentRoot {www}
<Directory {www}>
    Require all granted
</Directory>
SSLSessionCache shmcb:{d}/ssl_scache(512000)
Listen 127.0.0.1:{p0}
Listen 127.0.0.1:{p1}
<VirtualHost 127.0.0.1:{p0}>
    Protocols h2c http/1.1
</VirtualHost>
<VirtualHost 127.0.0.1:{p1}>
    SSLEngine on
    SSLCertificateFile {cert}
    SSLCertificateKeyFile {key}
    Protocols h2 http/1.1
</VirtualHost>
",
            www = www.display(),
            cert = cert.display(),
            key = key.display(),
            p0 = ports[0],
            p1 = ports[1],
        );
        std::fs::write(dir.join("httpd.conf"), conf).unwrap();
        let mut cmd = Command::new(bin);
        cmd.arg("-f")
            .arg(dir.join("httpd.conf"))
            .arg("-DFOREGROUND");
        cmd
    })
}

fn apache_bin() -> Option<PathBuf> {
    let bin = find_server("Apache httpd", "apache2", &["/usr/sbin/apache2"])?;
    let http2 = Path::new("/usr/lib/apache2/modules/mod_http2.so");
    assert!(http2.exists(), "apache2 without its modules directory");
    Some(bin)
}

#[test]
fn apache_closes_every_hundredth_response_and_pelt_counts_exactly() {
    let Some(bin) = apache_bin() else {
        return;
    };
    let server = apache(&bin);
    let (http, https) = (server.url("http", 0), server.url("https", 1));
    let ca = format!("--cacert {}", server.dir.join("ca.pem").display());
    for io in backends() {
        // 10,000 requests on 4 connections: Apache ends each connection after its 100th
        // response (with `Connection: close`), so pelt opens at least 100, and at most 3 more
        // (the connections still open at the end).
        let v = server.exact(io, 10_000, &http, "-c 4");
        let opened = count(&v, &["connections_opened"]);
        assert!(
            (100..=103).contains(&opened),
            "{io}: {opened} connections: {v}"
        );
        // The same over TLS: each close comes with close_notify.
        let v = server.exact(io, 5_000, &https, &format!("-c 4 {ca}"));
        let opened = count(&v, &["connections_opened"]);
        assert!(
            (50..=53).contains(&opened),
            "{io}: {opened} connections: {v}"
        );
        // HTTP/2 (mod_http2) over TLS, and h2c with prior knowledge.
        let h2 = "--http2 -c 4 --streams 50";
        server.exact(io, 10_000, &https, &format!("{h2} {ca}"));
        server.exact(io, 10_000, &http, h2);
    }
}

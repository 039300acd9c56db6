//! Bad input: exit code 2, exactly one line on stderr, nothing on stdout, and no traffic.

mod util;

use std::sync::atomic::Ordering;
use util::*;

/// Runs pelt with `args` (URL placeholder `{url}` replaced by a watched listener's URL) and
/// checks the bad-input contract; returns the stderr line.
fn rejected(args: &[&str]) -> String {
    rejected_with_file("", args)
}

/// `rejected`, with a file whose contents are `contents` (`{url}` replaced too) named by
/// `{file}` in `args`.
fn rejected_with_file(contents: &str, args: &[&str]) -> String {
    let watch = RawServer::start(|_| {});
    let url = watch.url();
    let dir = std::env::temp_dir().join(format!(
        "pelt-bad-input-{}-{}",
        std::process::id(),
        watch
            .url()
            .rsplit(':')
            .next()
            .unwrap_or("0")
            .trim_end_matches('/')
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("input.txt");
    std::fs::write(&file, contents.replace("{url}", &url)).unwrap();
    let file = file.display().to_string();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.replace("{url}", &url)
                .replace("{ws}", &url.replace("http://", "ws://"))
                .replace("{grpc}", &url.replace("http://", "grpc://"))
                .replace("{file}", &file)
        })
        .collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, _) = run(&refs);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "pelt {args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "stdout not empty for {args:?}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "not one line for {args:?}: {stderr:?}"
    );
    assert!(stderr.starts_with("pelt: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        watch.accepted.load(Ordering::Relaxed),
        0,
        "traffic sent for {args:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    stderr
}

#[test]
fn bad_urls() {
    assert!(rejected(&["not a url"]).contains("invalid URL"));
    // Without a scheme it is http:// (tests/manners.rs), still checked as one.
    assert!(rejected(&["127.0.0.1:70000/"]).contains("port out of range"));
    assert!(rejected(&["no-such-host.invalid:1/x"]).contains("cannot resolve"));
    assert!(rejected(&["http://"]).contains("invalid URL"));
    assert!(rejected(&["http://127.0.0.1:70000/"]).contains("port out of range"));
    assert!(rejected(&["ftp://127.0.0.1/"]).contains("unsupported scheme 'ftp'"));
    assert!(rejected(&["gopher://127.0.0.1/"])
        .contains("(supported: http, https, ws, wss, grpc, grpcs)"));
    assert!(rejected(&["http://no-such-host.invalid/"]).contains("cannot resolve"));
    assert!(rejected(&[]).contains("no target URL"));
}

#[test]
fn bad_numbers_and_durations() {
    for (flag, value) in [
        ("-c", "0"),
        ("-c", "-5"),
        ("-c", "many"),
        ("-n", "0"),
        ("-n", "1.5"),
        ("-t", "0"),
        ("--timeout", "0"),
        ("-d", "0"),
        ("-d", "10x"),
        ("-d", "-1s"),
        ("--connect-timeout", "soon"),
    ] {
        let line = rejected(&["{url}", flag, value]);
        assert!(line.contains(value), "{flag} {value}: {line}");
    }
}

#[test]
fn bad_headers_and_methods() {
    assert!(rejected(&["{url}", "-H", "NoColon"]).contains("no colon"));
    assert!(rejected(&["{url}", "-H", ": v"]).contains("empty"));
    assert!(rejected(&["{url}", "-H", "Bad Name: v"]).contains("not allowed"));
    let line = rejected(&["{url}", "-H", "X: a\r\nEvil: 1"]);
    assert!(line.contains("\\r\\n"), "value not escaped: {line}");
    // NUL cannot travel through argv; the codec's unit tests cover it. Other controls can.
    let line = rejected(&["{url}", "-H", "X: a\x01b"]);
    assert!(line.contains("\\u{1}"), "value not escaped: {line}");
    assert!(rejected(&["{url}", "-m", "GE T"]).contains("method"));
    // A secret header's value is never echoed, even in an error.
    let line = rejected(&["{url}", "-H", "Authorization: Bearer s3cret\x01"]);
    assert!(
        line.contains("Authorization: ***") && !line.contains("s3cret"),
        "{line}"
    );
    assert!(rejected(&["{url}", "-b", "abc", "-H", "Content-Length: 9"]).contains("disagrees"));
}

#[test]
fn bad_files() {
    let dir = std::env::temp_dir().join(format!("pelt-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    assert!(
        rejected(&["{url}", "--body-file", &format!("{d}/missing.json")]).contains("cannot read")
    );
    assert!(rejected(&["{url}", "--body-file", d]).contains("directory"));
    assert!(
        rejected(&["{url}", "--json", &format!("{d}/no/such/dir/r.json")])
            .contains("does not exist")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--targets` and `--bodies`: every problem names the file (and the line), before traffic.
#[test]
fn bad_targets_and_bodies() {
    let t = |contents: &str| rejected_with_file(contents, &["--targets", "{file}"]);
    let line = t("GET {url}a\nnot a header\n");
    assert!(line.contains("input.txt line 2: invalid header"), "{line}");
    let line = t("GET {url}a HTTP/1.1\n");
    assert!(
        line.contains("line 1: expected \"METHOD URL\" or a URL"),
        "{line}"
    );
    let line = t("POST {url}a\n@/nonexistent/pelt-body.json\n");
    assert!(
        line.contains("line 2: cannot read body file /nonexistent/pelt-body.json"),
        "{line}"
    );
    assert!(t("# nothing\n\n").contains("no targets in it"));
    let line = t("GET {url}a\n\nGET http://127.0.0.2:9/b\n");
    assert!(
        line.contains("line 3:") && line.contains("share one origin"),
        "{line}"
    );
    let line = t("G@T {url}a\n");
    assert!(line.contains("line 1: invalid method"), "{line}");
    let line = t("{\"url\":\"{url}\",\"headerz\":{}}\n");
    assert!(line.contains("line 1: unknown field `headerz`"), "{line}");
    let line = t("{\"url\":\"{url}\"}\n{\"url\": 5}\n");
    assert!(line.contains("line 2:"), "{line}");
    let line = rejected(&["--targets", "/nonexistent/pelt-targets.txt"]);
    assert!(
        line.contains("cannot read --targets /nonexistent/pelt-targets.txt"),
        "{line}"
    );
    // A URL on the command line must be the targets' origin.
    let line = rejected_with_file(
        "GET {url}a\n",
        &["http://127.0.0.2:9/", "--targets", "{file}"],
    );
    assert!(line.contains("share one origin"), "{line}");
    let b = |contents: &str| rejected_with_file(contents, &["{url}", "--bodies", "{file}"]);
    assert!(b("\n\n").contains("no bodies in it"));
    assert!(rejected(&["--bodies", "/etc/hostname"]).contains("no target URL"));
    assert!(rejected(&["{url}", "--bodies", "/nonexistent/b"]).contains("cannot read --bodies"));
    rejected(&["{url}", "--bodies", "/etc/hostname", "--body", "x"]);
    rejected(&["{url}", "--targets-format", "json"]);
}

/// Templates: unknown functions, unclosed braces, bad ranges and missing files, in the URL,
/// a header or the body, of the command line's request or of a target.
#[test]
fn bad_templates() {
    let line = rejected(&["{url}x/{{nope}}"]);
    assert!(line.contains("URL: unknown template {{nope}}"), "{line}");
    assert!(rejected(&["{url}", "-H", "X-Id: {{seq"]).contains("header: an unclosed {{"));
    assert!(rejected(&["{url}", "-b", "{{rand:9:1}}"]).contains("body: {{rand:9:1}}"));
    let line = rejected(&["{url}", "-b", "{{line:/nonexistent/pelt-lines}}"]);
    assert!(
        line.contains("cannot read {{line:/nonexistent/pelt-lines}}"),
        "{line}"
    );
    let line = rejected(&["{url}", "-b", "{{seq}}", "-H", "Content-Length: 7"]);
    assert!(line.contains("Content-Length"), "{line}");
    let line = rejected_with_file("GET {url}a/{{uuid:1}}\n", &["--targets", "{file}"]);
    assert!(
        line.contains("input.txt line 1, URL: {{uuid:1}} takes no arguments"),
        "{line}"
    );
}

#[test]
fn bad_unix_sockets() {
    let line = rejected(&[
        "http://localhost/",
        "--unix-socket",
        "/nonexistent/pelt.sock",
    ]);
    assert!(
        line.contains("--unix-socket /nonexistent/pelt.sock: No such file"),
        "{line}"
    );
    let line = rejected(&["http://localhost/", "--unix-socket", "/etc/hostname"]);
    assert!(line.contains("not a socket"), "{line}");
}

#[test]
fn too_many_connections_for_the_fd_limit() {
    let line = rejected(&["{url}", "-c", "9000000"]);
    assert!(
        line.contains("ulimit") && line.contains("open files"),
        "{line}"
    );
}

#[test]
fn unknown_flags_and_conflicts_are_one_line() {
    rejected(&["{url}", "--no-such-flag"]);
    rejected(&["{url}", "-b", "x", "--body-file", "y"]);
    rejected(&["{url}", "-c"]);
}

#[test]
fn bad_rates_and_open_loop_flags() {
    for value in ["-5", "abc", "inf", "NaN", "1e3", "0.0001"] {
        let line = rejected(&["{url}", "--rate", value]);
        assert!(line.contains(value), "--rate {value}: {line}");
    }
    for zero in ["0", "0.0", "0/s"] {
        let line = rejected(&["{url}", "--rate", zero]);
        assert!(
            line.contains("--rate 0: must be greater than zero"),
            "{line}"
        );
    }
    assert!(rejected(&["{url}", "--max-connections", "100"]).contains("--rate"));
    assert!(rejected(&["{url}", "--arrival", "poisson"]).contains("--rate"));
    assert!(rejected(&["{url}", "--rate", "10", "--arrival", "burst"]).contains("burst"));
    let line = rejected(&["{url}", "--rate", "10", "-c", "8", "--max-connections", "4"]);
    assert!(line.contains("below -c"), "{line}");
    assert!(rejected(&["{url}", "--warmup", "0"]).contains("'0'"));
    assert!(rejected(&["{url}", "--grace", "later"]).contains("later"));
    assert!(rejected(&["{url}", "--batch-window", "1ms"]).contains("--rate"));
    let line = rejected(&["{url}", "--rate", "10", "--batch-window", "20ms"]);
    assert!(line.contains("at most 10ms"), "{line}");
    assert!(rejected(&["{url}", "--rate", "10", "--batch-window", "soon"]).contains("soon"));
}

#[test]
fn bad_stages() {
    for (args, says) in [
        (&["--stages", "30x:1k"][..], "stage 1 ('30x:1k'): duration"),
        (
            &["--stages", "30s:1k,1m"],
            "stage 2 ('1m'): expected DURATION:TARGET",
        ),
        (&["--stages", "30s:lots"], "expected a target"),
        (&["--stages", ""], "expected DURATION:TARGET"),
        (
            &["--stages", "1s:10", "--warmup", "1s"],
            "--warmup and --stages",
        ),
        (
            &["--rate", "0", "--stages", "1s:0,2s:0"],
            "nothing would be sent",
        ),
        (&["--stages", "1s:0"], "every stage's connections is 0"),
        (
            &["--stages", "1s:2.5"],
            "stage 1's target 2.5 is not a number of connections",
        ),
        (&["--stages", "0s:5"], "every stage lasts 0s"),
        (
            &["--rate", "10", "--stages", "1s:2g"],
            "stage 1's target 2000000000 is out of range",
        ),
        (
            &["--stages", "1s:9000000"],
            "whole number from 0 to 1000000",
        ),
    ] {
        let mut all = vec!["{url}"];
        all.extend_from_slice(args);
        let line = rejected(&all);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    let line = rejected(&["find-max", "{url}", "--slo", "p99<1s", "--stages", "1s:10"]);
    assert!(line.contains("--stages is for plain runs"), "{line}");
}

/// The library's options (the Node.js package's `run({...})`) say what the CLI says: the same
/// mistake gives the same line, word for word.
#[test]
fn options_by_name_read_as_the_cli() {
    for (args, options) in [
        (&["--rate", "abc"][..], r#"{"rate": "abc"}"#),
        (&["-c", "0"], r#"{"connections": 0}"#),
        (
            &["--rate", "10", "--arrival", "burst"],
            r#"{"rate": 10, "arrival": "burst"}"#,
        ),
        (&["--arrival", "poisson"], r#"{"arrival": "poisson"}"#),
        (
            &["--body", "a", "--body-file", "b"],
            r#"{"body": "a", "bodyFile": "b"}"#,
        ),
        (
            &["--http2", "--pipeline", "4"],
            r#"{"http2": true, "pipeline": 4}"#,
        ),
        (&["--expect", "p99"], r#"{"expect": ["p99"]}"#),
        (&["--stages", "30x:1k"], r#"{"stages": "30x:1k"}"#),
        (&["--tls-version", "1.1"], r#"{"tlsVersion": "1.1"}"#),
        (&["-d", "10x"], r#"{"duration": "10x"}"#),
        (&["--seed", "x"], r#"{"seed": "x"}"#),
    ] {
        let mut all = vec!["{url}"];
        all.extend_from_slice(args);
        let cli = rejected(&all);
        let mut map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(options).unwrap();
        map.insert("url".into(), "http://127.0.0.1:1/".into());
        let lib = pelt_load::options::spec(&map).unwrap_err();
        assert_eq!(cli.trim_end(), format!("pelt: {lib}"), "{args:?}");
    }
}

/// A huge mistake gives a short line: the value quoted by its first characters, with its
/// length said.
#[test]
fn huge_values_are_quoted_short() {
    let huge = "a".repeat(100_000);
    let path = format!("{{url}}{huge}");
    let targets = format!("GET {}\n", "\u{1}".repeat(2_000_000));
    for line in [
        rejected(&[&huge]),
        rejected(&[&path, "-c", &huge]),
        rejected(&["{url}", "--rate", &huge]),
        rejected_with_file(&targets, &["--targets", "{file}", "-n", "1"]),
    ] {
        assert!(line.len() < 1000, "{} bytes: {}", line.len(), &line[..200]);
        assert!(line.contains(" bytes)"), "{line}");
    }
}

#[test]
fn bad_expectations() {
    for (expr, says) in [
        ("p99", "expected METRIC<VALUE"),
        ("p99<20", "latency needs a unit"),
        ("p42<1ms", "unknown metric"),
        ("errors<lots", "not a number"),
        ("rps>5%", "rps is a rate"),
    ] {
        let line = rejected(&["{url}", "--expect", expr]);
        assert!(line.contains(says) && line.contains(expr), "{expr}: {line}");
    }
}

#[test]
fn bad_stream_outputs() {
    let line = rejected(&["{url}", "--json", "-", "--jsonl", "-"]);
    assert!(line.contains("stdout"), "{line}");
    let missing = std::env::temp_dir().join(format!("pelt-nodir-{}/t.jsonl", std::process::id()));
    let line = rejected(&["{url}", "--jsonl", missing.to_str().unwrap()]);
    assert!(
        line.contains("--jsonl") && line.contains("does not exist"),
        "{line}"
    );
}

#[test]
fn bad_event_stream_limits() {
    for (args, says) in [
        (&["--stream-limit", "0"][..], "--stream-limit"),
        (
            &["--stream-limit", "5,6"],
            "expected events (100), a time (30s) or both",
        ),
        (
            &["--stream-limit", "1s,2s"],
            "expected events (100), a time (30s) or both",
        ),
        (&["--stream-limit", "soon"], "--stream-limit"),
        (&["--stream-end", ""], "--stream-end"),
        (
            &["--expect", "ttft.p98<1s"],
            "unknown figure 'p98' for ttft",
        ),
    ] {
        let mut all = vec!["{url}"];
        all.extend_from_slice(args);
        let line = rejected(&all);
        assert!(line.contains(says), "{args:?}: {line}");
    }
}

#[test]
fn websocket_urls_refuse_what_is_http_s() {
    for (args, says) in [
        (&["{ws}", "--pipeline", "4"][..], "--pipeline is HTTP's"),
        (&["{ws}", "--http2"], "--http2 is HTTP's"),
        (&["{ws}", "--no-keepalive"], "--no-keepalive is HTTP's"),
        (&["{ws}", "-m", "POST"], "the upgrade is a GET"),
        (&["{ws}", "--stream"], "--stream"),
        (
            &["{ws}", "--ws-protocol", "a b"],
            "which a name (an HTTP token) may not",
        ),
        (
            &["{ws}", "--ws-protocol", "chat,,x"],
            "expected subprotocol names",
        ),
        (&["{ws}", "--ws-max-message", "0"], "at least 1 byte"),
        (&["{ws}", "-n", "10"], "-n counts messages"),
        (&["{ws}", "--rate", "10"], "--rate sends messages"),
        (
            &["{url}", "--ws-ping", "1s"],
            "are for ws:// and wss:// URLs",
        ),
        (&["{url}", "--ws-binary"], "are for ws:// and wss:// URLs"),
    ] {
        let line = rejected(args);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    let line = rejected_with_file("GET {url}\n", &["{ws}", "--targets", "{file}"]);
    assert!(line.contains("give the messages with --body"), "{line}");
}

#[test]
fn bad_pipeline_connect_rate_and_backend() {
    let line = rejected(&["{url}", "--pipeline", "0"]);
    assert!(
        line.contains("--pipeline") && line.contains("'0'"),
        "{line}"
    );
    let line = rejected(&["{url}", "--pipeline", "5000"]);
    assert!(line.contains("5000"), "{line}");
    let line = rejected(&["{url}", "--pipeline", "4", "--no-keepalive"]);
    assert!(line.contains("--no-keepalive"), "{line}");
    let line = rejected(&["{url}", "--connect-rate", "0"]);
    assert!(line.contains("--connect-rate"), "{line}");
    let line = rejected(&["{url}", "--io", "kqueue"]);
    assert!(line.contains("kqueue") && line.contains("epoll"), "{line}");
}

#[test]
fn absurd_values_are_rejected_with_their_limit() {
    for (flag, value, says) in [
        ("-c", "99999999999", "at most"),
        ("-d", "9999h", "at most a year"),
        ("--timeout", "99999h", "at most a year"),
        ("-n", "99999999999999999999999", "too large"),
        ("--rate", "100000000000", "out of range"),
        ("-t", "100000", "at most"),
        ("--pipeline", "99999999999999999999", "too large"),
    ] {
        let line = rejected(&["{url}", flag, value]);
        assert!(
            line.contains(value) && line.contains(says),
            "{flag} {value}: {line}"
        );
    }
}

#[test]
fn bad_replays() {
    let timed = "{\"url\": \"{url}a\", \"t\": 0}\n{\"url\": \"{url}b\", \"t\": 100}\n";
    for (contents, args, says) in [
        (timed, &["--replay", "{url}"][..], "--targets"),
        (timed, &["--targets", "{file}", "--replay-speed", "2x"], "--replay"),
        (timed, &["--targets", "{file}", "--replay-loop"], "go with --replay"),
        (timed, &["--targets", "{file}", "--replay", "--replay-speed", "0"], "speed"),
        (timed, &["--targets", "{file}", "--replay", "--replay-speed", "fast"], "speed"),
        (timed, &["--targets", "{file}", "--replay", "--rate", "10"], "rate"),
        (timed, &["--targets", "{file}", "--replay", "--warmup", "1s"], "--warmup"),
        (timed, &["--targets", "{file}", "--replay", "--order", "random"], "in its order"),
        (timed, &["--targets", "{file}", "--replay", "--arrival", "poisson"], "--rate"),
        // The open loop's options want --rate or --replay.
        (timed, &["{url}", "--max-connections", "8"], "is for the open loop"),
        (timed, &["{url}", "--batch-window", "1ms"], "is for the open loop"),
        (
            "{\"url\": \"{url}a\", \"t\": 0}\n{\"url\": \"{url}b\"}\n",
            &["--targets", "{file}", "--replay"],
            "line 2: no \"t\"",
        ),
        (
            "{\"url\": \"{url}a\", \"t\": 0}\n{\"url\": \"{url}b\", \"t\": \"2026-11-27T10:00:00Z\"}\n",
            &["--targets", "{file}", "--replay"],
            "mixes offsets",
        ),
        (
            "{\"url\": \"{url}a\", \"t\": \"yesterday\"}\n",
            &["--targets", "{file}", "--replay"],
            "line 1: \"t\" \"yesterday\" is not an RFC 3339 time",
        ),
        (
            "{\"url\": \"{url}a\", \"t\": -5}\n",
            &["--targets", "{file}", "--replay"],
            "line 1: \"t\" -5 is not a time in milliseconds",
        ),
        (
            "1.2.3.4 - - [27/Nov/2026:09:00:01 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"\n",
            &["--targets", "{file}", "--targets-format", "nginx"],
            "give the URL of the server",
        ),
        (
            "1.2.3.4 - - [27/Nov/2026:09:00:01 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"\nnot a log line\n",
            &["{url}", "--targets", "{file}", "--targets-format", "apache", "--replay"],
            "line 2: the line does not match the log format",
        ),
        (
            timed,
            &["--targets", "{file}", "--log-format", "$msec \"$request\""],
            "--targets-format nginx",
        ),
        (
            "1 GET /\n",
            &["{url}", "--targets", "{file}", "--targets-format", "nginx", "--log-format", "$msec $status"],
            "needs $request",
        ),
        // HAR files: not one, no request to replay, an entry that does not parse (by the
        // line it starts on), and --skip-bad-lines where a line is not a target.
        (
            "{\"log\": {\"version\": \"1.2\"}}\n",
            &["{url}", "--targets", "{file}", "--targets-format", "har"],
            "is not a HAR file",
        ),
        (
            "{\n\"log\": {\"entries\": [\n{\"startedDateTime\": \"2026-11-27T10:00:00Z\", \
             \"request\": {\"method\": \"GET\", \"url\": \"data:,x\"}}\n]}}\n",
            &["{url}", "--targets", "{file}", "--replay"],
            "no http or https request in it",
        ),
        (
            "{\n\"log\": {\"entries\": [\n{\"startedDateTime\": \"2026-11-27T10:00:00Z\", \
             \"request\": {\"method\": \"GET\", \"url\": \"{url}a\"}},\n{\"startedDateTime\": \
             \"noon\", \"request\": {\"method\": \"GET\", \"url\": \"{url}b\"}}\n]}}\n",
            &["--targets", "{file}", "--replay"],
            "line 4: startedDateTime \"noon\" is not an RFC 3339 time",
        ),
        (
            "GET {url}a\n",
            &["--targets", "{file}", "--skip-bad-lines"],
            "--skip-bad-lines is for JSON lines",
        ),
        (
            "not json\n{\"url\": 5}\n",
            &["--targets", "{file}", "--targets-format", "json", "--skip-bad-lines"],
            "no targets in it",
        ),
    ] {
        let line = rejected_with_file(contents, args);
        assert!(line.contains(says), "{args:?}: {line}");
    }
}

/// A targets file read as the run goes (replayed or not) is checked whole by a first pass,
/// before any traffic: the same lines as a file read whole; and where it cannot be streamed,
/// one line says why.
#[test]
fn bad_streamed_targets() {
    let timed = "{\"url\": \"{url}a\", \"t\": 0}\n{\"url\": \"{url}b\", \"t\": 100}\n";
    let stream = ["--replay", "--targets-read", "stream"];
    for (contents, args, says) in [
        (
            "{\"url\": \"{url}a\", \"t\": 0}\n{\"url\": \"{url}b\"}\n",
            &["--targets", "{file}"][..],
            "line 2: no \"t\"",
        ),
        (
            "{\"url\": \"{url}a\", \"t\": 0}\n{\"url\": \"{url}b\", \"t\": \"2026-11-27T10:00:00Z\"}\n",
            &["--targets", "{file}"],
            "mixes offsets",
        ),
        (
            "{\"url\": \"{url}a\", \"t\": 0}\n\n{\"url\": \"{url}a\", \"t\": \"yesterday\"}\n",
            &["--targets", "{file}"],
            "line 3: \"t\" \"yesterday\" is not an RFC 3339 time",
        ),
        (
            "{\"url\": \"{url}a\", \"t\": 0}\n{\"url\": \"http://127.0.0.2:1/b\", \"t\": 5}\n",
            &["--targets", "{file}"],
            "line 2: 'http://127.0.0.2:1/b' is not on",
        ),
        ("\n# nothing\n", &["--targets", "{file}", "--targets-format", "json"], "no targets in it"),
        (
            "1.2.3.4 - - [27/Nov/2026:09:00:01 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"\nnot a log line\n",
            &["{url}", "--targets", "{file}", "--targets-format", "apache"],
            "line 2: the line does not match the log format",
        ),
        (timed, &["--targets", "{file}", "--http2"], "drop --http2"),
        (
            "{\n\"log\": {\"entries\": []}}\n",
            &["{url}", "--targets", "{file}", "--targets-format", "har"],
            "a HAR file, or vegeta's format, is read whole",
        ),
        (timed, &["--targets", "{file}", "-H", "X-Id: {{seq}}"], "templates"),
    ] {
        let all: Vec<&str> = args.iter().copied().chain(stream).collect();
        let line = rejected_with_file(contents, &all);
        assert!(line.contains(says), "{all:?}: {line}");
    }
    // Plain targets (no --replay) read as the run goes: the same first pass, and what needs
    // the whole file says so.
    let plain = ["--targets-read", "stream", "-n", "5"];
    for (contents, args, says) in [
        (
            "{\"url\": \"{url}a\"}\n{\"url\": \"{url}b\", \"method\": 7}\n",
            &["--targets", "{file}"][..],
            "line 2",
        ),
        (
            "{\"url\": \"{url}a\"}\n{\"url\": \"http://127.0.0.2:1/b\"}\n",
            &["--targets", "{file}"],
            "line 2: 'http://127.0.0.2:1/b' is not on",
        ),
        (timed, &["--targets", "{file}", "--warmup", "1s"], "warm-up"),
        (
            timed,
            &["--targets", "{file}", "--order", "random"],
            "--order random",
        ),
        ("GET {url}a\n", &["--targets", "{file}"], "vegeta's format"),
    ] {
        let all: Vec<&str> = args.iter().copied().chain(plain).collect();
        let line = rejected_with_file(contents, &all);
        assert!(line.contains(says), "{all:?}: {line}");
        assert!(line.contains("--targets"), "{all:?}: {line}");
    }
}

#[test]
fn bad_grpc_calls() {
    const GREETER: &str = "syntax = \"proto3\";\npackage pelt.test;\n\
        service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }\n\
        message HelloRequest { string name = 1; }\nmessage HelloReply { string message = 1; }\n";
    let call = "{grpc}pelt.test.Greeter/SayHello";
    let with = |args: &[&str]| rejected_with_file(GREETER, args);
    let e = with(&["{grpc}pelt.test.Greeter/SayHi", "--proto", "{file}"]);
    assert!(
        e.contains("pelt.test.Greeter has no method SayHi (it has SayHello)"),
        "{e}"
    );
    let e = with(&["{grpc}pelt.Nope/SayHello", "--proto", "{file}"]);
    assert!(e.contains("no service pelt.Nope"), "{e}");
    let e = with(&[call, "--proto", "{file}", "-b", r#"{"nom": "x"}"#]);
    assert!(
        e.contains("pelt.test.HelloRequest") && e.contains("nom"),
        "{e}"
    );
    let e = with(&[call, "--proto", "{file}", "-b", "xx"]);
    assert!(e.contains("message from JSON"), "{e}");
    let e = with(&[call, "--proto", "{file}", "--pipeline", "2"]);
    assert!(
        e.contains("--pipeline is HTTP's; a grpc:// URL cannot take it"),
        "{e}"
    );
    let e = with(&[call, "--proto", "{file}", "--no-keepalive"]);
    assert!(e.contains("--no-keepalive is HTTP's"), "{e}");
    let e = with(&[call, "--proto", "{file}", "-H", "token-bin: not base64!"]);
    assert!(e.contains("a -bin metadata value is base64"), "{e}");
    let e = with(&[call, "--proto", "{file}", "-b", r#"{"name": {{seq}"}"#]);
    assert!(e.contains("without its }}"), "{e}");
    let e = with(&[call]);
    assert!(e.contains("needs the service's descriptors"), "{e}");
    let e = with(&["{url}", "--proto", "{file}"]);
    assert!(e.contains("are for grpc:// and grpcs:// URLs"), "{e}");
    let e = with(&["{url}", "--streams", "4"]);
    assert!(e.contains("--streams is HTTP/2's"), "{e}");
    // A proto that does not compile: where, as protox says it.
    let e = rejected_with_file(
        "syntax = \"proto3\";\nmessage A {\n  strin x = 1;\n}\n",
        &[call, "--proto", "{file}"],
    );
    assert!(e.contains("input.txt:3:"), "{e}");
    let e = rejected_with_file("not a descriptor set", &[call, "--protoset", "{file}"]);
    assert!(e.contains("--protoset"), "{e}");
}

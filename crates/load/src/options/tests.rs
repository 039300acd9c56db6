use super::*;
use crate::sources::TargetsSource;
use crate::spec::{Body, IoChoice, Requests};
use crate::study::{CompareSettings, FindMaxSettings};
use pelt_engine::Arrival;
use serde_json::json;
use std::time::Duration;

fn spec_of(v: Value) -> Result<LoadSpec, OptionError> {
    spec(v.as_object().unwrap())
}

fn err(v: Value) -> OptionError {
    spec_of(v).unwrap_err()
}

#[test]
fn names_and_values_become_the_spec() {
    let s = spec_of(json!({
        "url": "http://127.0.0.1:1/", "connections": 8, "duration": "2s", "requests": "10k",
        "threads": 2, "method": "POST", "headers": {"X-A": "1", "X-N": 2},
        "body": "{}", "keepAlive": true, "timeout": 3, "rate": "20k",
        "stages": [{"duration": "1s", "target": 100}, {"duration": 0, "target": "1k"}],
        "arrival": "poisson", "maxConnections": 64, "expect": ["p99<20ms", "errors<1%"],
        "io": "epoll", "seed": 7, "grace": 0, "connectRate": "1k", "batchWindow": "250us",
    }))
    .unwrap();
    assert_eq!(s.connections, 8);
    assert_eq!(s.duration, Some(Duration::from_secs(2)));
    assert_eq!(s.requests, Some(10_000));
    assert_eq!(s.threads, Some(2));
    assert_eq!(s.headers, ["X-A: 1", "X-N: 2"]);
    assert_eq!(s.timeout, Duration::from_secs(3));
    assert_eq!(s.rate, Some(20_000.0));
    assert_eq!(s.stages.len(), 2);
    assert_eq!(s.stages[1].target, 1000.0);
    assert_eq!(s.arrival, Arrival::Poisson);
    assert_eq!(s.expect.len(), 2);
    assert_eq!((s.seed, s.grace), (Some(7), Duration::ZERO));
    assert_eq!(s.io, IoChoice::Epoll);
    assert_eq!(s.batch_window, Duration::from_micros(250));
    assert!(matches!(s.body, Body::Bytes(ref b) if b == b"{}"));
    let s = spec_of(json!({"url": "http://x/", "keepAlive": false, "stages": "1s:5"})).unwrap();
    assert!(!s.keep_alive);
    assert_eq!(s.stages.len(), 1);
    // Targets in the options themselves.
    let s = spec_of(
        json!({"targets": [{"url": "http://x/a"}, {"method": "POST", "url": "http://x/b"}]}),
    )
    .unwrap();
    assert!(matches!(
        s.requests_from,
        Requests::Targets { source: TargetsSource::List(ref l), .. } if l.len() == 2
    ));
}

#[test]
fn mistakes_read_as_the_cli_says_them() {
    let url = "http://127.0.0.1:1/";
    for (v, kind, says) in [
        (json!({"url": url, "bogus": 1}), Kind::Type, "unknown option 'bogus'"),
        (json!({"connections": 2}), Kind::Type, "option 'url' is required"),
        (json!({"url": url, "connections": true}), Kind::Type, "option 'connections' must be a string or a number, not a boolean"),
        (json!({"url": url, "rate": "abc"}), Kind::Range, "invalid value 'abc' for '--rate <RATE>': expected requests per second like 500, 20k or 0.5"),
        (json!({"url": url, "connections": 0}), Kind::Range, "invalid value '0' for '--connections <N>': must be greater than zero"),
        (json!({"url": url, "arrival": "burst", "rate": 1}), Kind::Range, "invalid value 'burst' for '--arrival <KIND>' [possible values: constant, poisson]"),
        (json!({"url": url, "body": "a", "bodyFile": "b"}), Kind::Range, "the argument '--body <TEXT>' cannot be used with '--body-file <PATH>'"),
        (json!({"url": url, "arrival": "poisson"}), Kind::Range, "the following required arguments were not provided: --rate <RATE>"),
        (json!({"url": url, "http2": true, "pipeline": 4}), Kind::Range, "the argument '--http2' cannot be used with '--pipeline <D>'"),
        (json!({"url": url, "headers": 5}), Kind::Type, "option 'headers' must be an object"),
        (json!({"url": url, "stages": [{"duration": "1s"}]}), Kind::Type, "an array of {duration, target} objects"),
        (json!({"url": url, "expect": "p99"}), Kind::Range, "invalid value 'p99' for '--expect <EXPR>'"),
        (json!({"url": url, "duration": "10x"}), Kind::Range, "invalid value '10x' for '--duration <TIME>'"),
    ] {
        let e = err(v.clone());
        assert_eq!(e.kind, kind, "{v}: {e}");
        assert!(e.message.contains(says), "{v}: {e}");
        assert!(!e.message.contains('\n'));
    }
}

/// The spec as a comparable text (Expectation has no equality; thresholds are not
/// inlined anyway).
fn shape(s: &LoadSpec) -> String {
    let mut s = s.clone();
    s.expect.clear();
    // A target's line is where it was read (a list given back numbers them afresh).
    if let Requests::Targets {
        source: TargetsSource::List(list),
        ..
    } = &mut s.requests_from
    {
        list.iter_mut().for_each(|t| t.line = 0);
    }
    format!("{s:?}")
}

#[test]
fn inlined_options_give_back_the_same_spec() {
    let url = "http://127.0.0.1:1/x";
    for v in [
        json!({"url": url}),
        json!({"url": url, "connections": 7, "threads": 3, "duration": "1500ms",
               "requests": "20k", "method": "PUT", "headers": ["A: b", "C: d"],
               "body": "hello", "keepAlive": false, "timeout": "3s",
               "connectTimeout": "250ms", "warmup": "2s", "grace": "0", "io": "epoll"}),
        json!({"url": url, "rate": 1234.5, "arrival": "poisson", "maxConnections": 50,
               "batchWindow": "1ms", "stages": "10s:2k,5s:0", "connectRate": 100,
               "order": "random", "seed": 42, "sampleEvery": 10,
               "targets": [{"url": url, "method": "POST", "body": "b", "name": "n"}, {"url": url}]}),
        json!({"url": "https://127.0.0.1:1/", "http2": true, "streams": 20, "insecure": true,
               "tlsVersion": "1.3", "sni": "example.com", "tlsFullHandshake": true}),
        json!({"url": url, "pipeline": 8, "unixSocket": "/tmp/x.sock"}),
    ] {
        let given = spec_of(v.clone()).unwrap();
        let back = spec(&inline(&given, None).unwrap()).unwrap();
        assert_eq!(shape(&back), shape(&given), "{v}");
    }
}

#[test]
fn inlining_reads_the_files_another_machine_lacks() {
    let dir = std::env::temp_dir().join(format!("pelt-inline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = "http://127.0.0.1:1/";
    // A binary body file travels as base64.
    let body = dir.join("body.bin");
    std::fs::write(&body, [0u8, 159, 146, 150, 10]).unwrap();
    let s = spec_of(json!({"url": url, "bodyFile": body.display().to_string()})).unwrap();
    let o = inline(&s, None).unwrap();
    assert_eq!(o["bodyBase64"], "AJ+Slgo=");
    assert!(matches!(spec(&o).unwrap().body, Body::Bytes(ref b) if b == &[0, 159, 146, 150, 10]));
    // A targets file and a bodies file travel as the targets they hold.
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("GET {url}a\n\nPOST {url}b\nX-Y: z\n")).unwrap();
    let s = spec_of(json!({"url": url, "targets": targets.display().to_string()})).unwrap();
    let o = inline(&s, Some(7)).unwrap();
    assert_eq!(o["seed"], 7);
    assert_eq!(
        o["targets"],
        json!([{"url": format!("{url}a"), "method": "GET"},
               {"url": format!("{url}b"), "method": "POST", "headers": ["X-Y: z"]}])
    );
    let bodies = dir.join("bodies.txt");
    std::fs::write(&bodies, "{\"a\":1}\n{\"a\":2}\n").unwrap();
    let s = spec_of(json!({"url": url, "bodies": bodies.display().to_string()})).unwrap();
    let o = inline(&s, None).unwrap();
    assert_eq!(o["targets"][1]["body_base64"], "eyJhIjoyfQ==");
    assert!(o.get("body").is_none() && o.get("bodies").is_none());
    // A file that cannot be read is the CLI's one line.
    let s =
        spec_of(json!({"url": url, "bodyFile": dir.join("nope").display().to_string()})).unwrap();
    assert!(inline(&s, None)
        .unwrap_err()
        .0
        .starts_with("cannot read --body-file"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A row's example as a JSON value.
fn example<S>(f: &Flag<S>) -> Value {
    serde_json::from_str(f.example).unwrap_or_else(|e| panic!("{}'s example: {e}", f.name))
}

/// Options that give `f` with its example, and whatever its rules require.
fn with_example<S>(table: &[Flag<S>], f: &Flag<S>) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert(f.name.into(), example(f));
    for rule in f.rules {
        if let Rule::Requires(other) = rule {
            let other = find(table, other).unwrap();
            o.insert(other.name.into(), example(other));
        }
    }
    o
}

fn check_table<S>(table: &[Flag<S>], read: impl Fn(&Map<String, Value>) -> Result<S, OptionError>) {
    let mut names = std::collections::HashSet::new();
    let mut longs = std::collections::HashSet::new();
    let mut shorts = std::collections::HashSet::new();
    for f in table {
        assert!(names.insert(f.name), "{} twice", f.name);
        assert!(
            f.long.is_empty() || longs.insert(f.long),
            "--{} twice",
            f.long
        );
        assert!(
            f.short.is_none() || shorts.insert(f.short),
            "-{:?} twice",
            f.short
        );
        assert!(!f.help.is_empty(), "{} has no help", f.name);
        assert_eq!(
            f.long.is_empty(),
            matches!(f.form, Form::Library | Form::Positional | Form::Trailing),
            "{}",
            f.name
        );
        assert_eq!(
            f.value.is_empty(),
            matches!(f.form, Form::Switch | Form::Negated),
            "{}",
            f.name
        );
        // Its example reads, with what its rules require.
        let o = with_example(table, f);
        if let Err(e) = read(&o) {
            panic!("{}'s example {}: {e}", f.name, f.example);
        }
        // A value of the wrong type is a TypeError that names the option.
        let mut o = with_example(table, f);
        let wrong = match example(f) {
            Value::Bool(_) => json!({"an": "object"}),
            _ => json!(true),
        };
        o.insert(f.name.into(), wrong);
        let e = read(&o)
            .err()
            .unwrap_or_else(|| panic!("{} took a wrong type", f.name));
        assert_eq!(e.kind, Kind::Type, "{}: {e}", f.name);
        assert!(e.message.contains(f.name), "{}: {e}", f.name);
    }
}

#[test]
fn every_row_reads_its_example_and_refuses_a_wrong_type() {
    check_table(RUN, |o| {
        let mut o = o.clone();
        o.entry("url").or_insert("http://127.0.0.1:1/".into());
        // --output-tokens and --model shape made prompts (or a file's).
        if ["outputTokens", "model"].iter().any(|k| o.contains_key(*k))
            && !o.contains_key("prompts")
        {
            o.entry("inputTokens").or_insert(json!(10));
        }
        spec(&o)
    });
    check_table(SERVE, serve);
    check_table(COMPARE, compare);
    check_table(FIND_MAX, |o| {
        let mut o = o.clone();
        o.entry("slo").or_insert(json!(["p99<1s"]));
        find_max(&o)
    });
}

/// Every rule of a table, broken, gives clap's message naming both flags, in the table's
/// order; the messages are the ones the CLI prints (the CLI reads what was typed with this
/// reader: tests/bad_input.rs checks the CLI's lines against it).
fn check_rules<S>(
    table: &[Flag<S>],
    read: impl Fn(&Map<String, Value>) -> Result<S, OptionError>,
) -> usize {
    let mut checked = 0;
    for f in table {
        for rule in f.rules {
            let (other, conflicts) = match rule {
                Rule::Conflicts(o) => (find(table, o).unwrap(), true),
                Rule::Requires(o) => (find(table, o).unwrap(), false),
            };
            let mut o = with_example(table, f);
            if conflicts {
                o.extend(with_example(table, other));
            } else {
                o.remove(other.name);
            }
            let e = read(&o)
                .err()
                .unwrap_or_else(|| panic!("{} {rule:?} held", f.name));
            let says = if conflicts {
                format!(
                    "the argument '{}' cannot be used with '{}'",
                    f.shown(),
                    other.shown()
                )
            } else {
                format!(
                    "the following required arguments were not provided: {}",
                    other.shown()
                )
            };
            assert_eq!(
                (e.kind, e.message.as_str()),
                (Kind::Range, says.as_str()),
                "{} {rule:?}",
                f.name
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn every_rule_is_enforced_with_the_clis_words() {
    let run = check_rules(RUN, |o| {
        let mut o = o.clone();
        o.insert("url".into(), "http://127.0.0.1:1/".into());
        spec(&o)
    });
    assert!(run >= 15, "{run} rules");
    assert!(check_rules(SERVE, serve) >= 6);
    // The Node.js run of issue 27: refused as the CLI refuses it.
    let e = err(
        json!({"url": "http://127.0.0.1:1/", "requests": 200, "connections": 2, "pipeline": 4, "keepAlive": false}),
    );
    assert_eq!(
        e.message,
        "the argument '--pipeline <D>' cannot be used with '--no-keepalive'"
    );
    // keepAlive: true is the default, not a conflict.
    spec_of(json!({"url": "http://127.0.0.1:1/", "pipeline": 4, "keepAlive": true})).unwrap();
}

#[test]
fn a_long_bad_value_is_quoted_short() {
    let long = "x".repeat(100_000);
    let e = err(json!({"url": "http://127.0.0.1:1/", "rate": long}));
    assert!(e.message.len() < 400, "{}", e.message.len());
    assert!(e.message.contains("(100000 bytes)"), "{}", e.message);
}

/// A generated file's block, checked against the tables; `PELT_BLESS=1` writes it.
fn check_generated(file: &str, begin: &str, end: &str, block: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let want = splice(&text, begin, end, block).unwrap_or_else(|| panic!("{file} lacks {begin}"));
    if want == text {
        return;
    }
    if std::env::var_os("PELT_BLESS").is_some() {
        std::fs::write(&path, want).unwrap();
        return;
    }
    panic!("{file} is not what pelt_load::options makes of its tables: run PELT_BLESS=1 cargo test -p pelt-load options, and commit it");
}

#[test]
fn node_types_are_the_tables() {
    let file = "bindings/node/pelt.d.ts";
    check_generated(
        file,
        "// BEGIN RunOptions",
        "// END RunOptions",
        &typescript("RunOptions", RUN, &LoadSpec::new("")),
    );
    check_generated(
        file,
        "// BEGIN CompareSettings",
        "// END CompareSettings",
        &typescript("CompareSettings", COMPARE, &CompareSettings::default()),
    );
    check_generated(
        file,
        "// BEGIN FindMaxSettings",
        "// END FindMaxSettings",
        &typescript("FindMaxSettings", FIND_MAX, &FindMaxSettings::default()),
    );
    check_generated(
        file,
        "// BEGIN ServerOptions",
        "// END ServerOptions",
        &typescript(
            "ServerOptions",
            SERVE,
            &ServeSpec {
                port: 0,
                ..ServeSpec::default()
            },
        ),
    );
}

#[test]
fn the_flag_reference_is_the_tables() {
    let file = "docs/OPTIONS.md";
    check_generated(
        file,
        "<!-- BEGIN run -->",
        "<!-- END run -->",
        &markdown(RUN, &LoadSpec::new("")),
    );
    check_generated(
        file,
        "<!-- BEGIN compare -->",
        "<!-- END compare -->",
        &markdown(COMPARE, &CompareSettings::default()),
    );
    check_generated(
        file,
        "<!-- BEGIN find-max -->",
        "<!-- END find-max -->",
        &markdown(FIND_MAX, &FindMaxSettings::default()),
    );
    check_generated(
        file,
        "<!-- BEGIN serve -->",
        "<!-- END serve -->",
        &markdown(SERVE, &ServeSpec::default()),
    );
}

#[test]
fn served_options_become_the_servers_config() {
    let s = serve(json!({"port": 0, "host": "::1", "delay": "5ms", "errorRate": "1%", "h2": true, "maxStreams": 10, "stall": "1s", "stallAt": 0}).as_object().unwrap()).unwrap();
    let c = s.config().unwrap();
    assert_eq!(c.addr.to_string(), "[::1]:0");
    assert_eq!(
        (c.delay, c.error_rate, c.max_streams),
        (Duration::from_millis(5), 0.01, Some(10))
    );
    assert_eq!(c.stall, Some((Duration::ZERO, Duration::from_secs(1))));
    let e = serve(json!({"host": "localhost"}).as_object().unwrap()).unwrap_err();
    assert_eq!(e.message, "invalid value 'localhost' for '--host <HOST>': expected an IP address, like 127.0.0.1 or ::1");
}

/// `pelt find-max` and `pelt compare` take a run's options beside their own: no name, flag or
/// short flag may be in both (a run's `--slo` once shadowed find-max's).
#[test]
fn a_studys_own_options_are_not_a_runs() {
    fn keys<S>(t: &[Flag<S>]) -> Vec<String> {
        t.iter()
            .flat_map(|f| {
                let short = f.short.map(|c| format!("-{c}"));
                [
                    Some(f.name.to_string()),
                    Some(format!("--{}", f.long)),
                    short,
                ]
            })
            .flatten()
            .filter(|k| k != "--")
            .collect()
    }
    let run = keys(RUN);
    for own in [keys(FIND_MAX), keys(COMPARE)] {
        for k in own {
            assert!(!run.contains(&k), "{k} is a run's option and a study's");
        }
    }
}

//! The run's options: one row each, in the order `pelt --help` lists them. Adding an option
//! is a row here and its field in [`LoadSpec`] (plus what uses it).

use super::{duration_text, range_error, Flag, Form, Given, OptionError, Rule};
use crate::sources::{Recorded, TargetEntry, TargetsFormat, TargetsSource};
use crate::spec::{Body, IoChoice, LoadSpec, Requests, TargetOrder, TargetsRead, TlsVersion};
use crate::values;
use pelt_engine::{Arrival, Stage};
use serde_json::{json, Value};

type Row = Flag<LoadSpec>;
type Write = Result<Option<Value>, String>;

const BASE: Row = Flag::BASE;

fn dur(d: std::time::Duration) -> Value {
    Value::String(duration_text(d))
}

fn path(p: &Option<std::path::PathBuf>) -> Write {
    Ok(p.as_ref().map(|p| p.display().to_string().into()))
}

fn on(b: bool) -> Write {
    Ok(b.then_some(Value::Bool(true)))
}

/// `headers`: `{"Name": "value"}`, or `["Name: value", ...]`, or one `"Name: value"`.
fn headers(g: &Given) -> Result<Vec<String>, OptionError> {
    match g.value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok(format!("{k}: {s}")),
                Value::Number(n) => Ok(format!("{k}: {n}")),
                _ => Err(super::type_error(format!(
                    "header '{k}' must be a string or a number, not {}",
                    super::type_of(v)
                ))),
            })
            .collect(),
        _ => g
            .list()
            .map_err(|_| g.wrong("an object of names and values, or an array of 'Name: value'")),
    }
}

/// `stages`: `"30s:1k,1m:10k"`, or `[{"duration": "30s", "target": 1000}, ...]`.
fn stages(g: &Given) -> Result<Vec<Stage>, OptionError> {
    let Value::Array(items) = g.value else {
        return g.parse(values::stages);
    };
    let text: Vec<String> = items
        .iter()
        .map(|item| {
            let field = |k: &str| item.get(k).map(|v| g.with(v).text());
            match (field("duration"), field("target")) {
                (Some(Ok(d)), Some(Ok(t))) => Ok(format!("{d}:{t}")),
                _ => Err(g.wrong("an array of {duration, target} objects")),
            }
        })
        .collect::<Result<_, _>>()?;
    g.with(&Value::String(text.join(","))).parse(values::stages)
}

/// `targets`: a file's path, or the targets themselves as JSON-lines objects.
fn targets(g: &Given) -> Result<TargetsSource, OptionError> {
    match g.value {
        Value::String(path) => Ok(TargetsSource::File(path.into())),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(k, item)| {
                let at = format!("option 'targets' entry {}", k + 1);
                crate::sources::json_entry(item, &at, k + 1).map_err(range_error)
            })
            .collect::<Result<Vec<TargetEntry>, _>>()
            .map(TargetsSource::List),
        _ => Err(g.wrong("a file's path or an array of targets")),
    }
}

/// The body's bytes, read from its file if it has one.
fn body_bytes(s: &LoadSpec) -> Result<Vec<u8>, String> {
    match &s.body {
        Body::None => Ok(Vec::new()),
        Body::Bytes(b) => Ok(b.clone()),
        Body::File(p) => {
            std::fs::read(p).map_err(|e| format!("cannot read --body-file {}: {e}", p.display()))
        }
    }
}

/// The body a spec sends, as `body` (text) or `bodyBase64`; a bodies file's entries carry
/// theirs (the command line's is for targets that have none).
fn body_as(s: &LoadSpec, text: bool) -> Write {
    if matches!(s.requests_from, Requests::Bodies(_)) {
        return Ok(None);
    }
    let b = body_bytes(s)?;
    use base64::Engine as _;
    Ok(match std::str::from_utf8(&b) {
        _ if b.is_empty() => None,
        Ok(t) if text => Some(t.into()),
        Err(_) if !text => Some(base64::engine::general_purpose::STANDARD.encode(&b).into()),
        _ => None,
    })
}

/// Many requests (targets or bodies) as the list of targets they are.
fn targets_list(s: &LoadSpec) -> Write {
    // A scenario is written whole, by its own row.
    if matches!(s.requests_from, Requests::One | Requests::Scenario(_)) {
        return Ok(None);
    }
    use base64::Engine as _;
    let b64 = |b: &[u8]| Value::String(base64::engine::general_purpose::STANDARD.encode(b));
    let body = body_bytes(s)?;
    let list = crate::prepare::entries(s, &body)
        .map_err(|e| e.0)?
        .map(|e| e.list)
        .unwrap_or_default();
    let targets = list
        .iter()
        .map(|t| {
            let mut e = serde_json::Map::new();
            e.insert("url".into(), Value::String(t.url.clone()));
            if let Some(m) = &t.method {
                e.insert("method".into(), Value::String(m.clone()));
            }
            if !t.headers.is_empty() {
                e.insert("headers".into(), json!(t.headers));
            }
            if let Some(b) = &t.body {
                e.insert("body_base64".into(), b64(b));
            }
            if let Some(n) = &t.name {
                e.insert("name".into(), Value::String(n.clone()));
            }
            match t.time {
                Some(Recorded::Offset(ns)) => {
                    e.insert("t".into(), json!(ns as f64 / 1e6));
                }
                Some(Recorded::At(ns)) => {
                    e.insert("t".into(), Value::String(crate::sources::rfc3339(ns)));
                }
                None => {}
            }
            if let Some(us) = t.recorded_us {
                e.insert("recorded_ms".into(), json!(us as f64 / 1e3));
            }
            Value::Object(e)
        })
        .collect();
    Ok(Some(Value::Array(targets)))
}

/// What --input-tokens conflicts with: a prompts file, the other sources of many requests,
/// and a body.
const MADE_PROMPT_CONFLICTS: &[Rule] = &[
    Rule::Conflicts("prompts"),
    Rule::Conflicts("targets"),
    Rule::Conflicts("bodies"),
    Rule::Conflicts("scenario"),
    Rule::Conflicts("body"),
    Rule::Conflicts("bodyFile"),
    Rule::Conflicts("bodyBase64"),
];

/// What --prompts conflicts with: the same, but itself.
const PROMPT_CONFLICTS: &[Rule] = MADE_PROMPT_CONFLICTS.split_at(1).1;

/// The run's prompts, made its requests' source by the first prompt option read; their streams
/// end at OpenAI's `[DONE]` unless `--stream-end` says otherwise.
fn prompts(s: &mut LoadSpec) -> &mut crate::prompts::Prompts {
    if !matches!(s.requests_from, Requests::Prompts(_)) {
        s.requests_from = Requests::Prompts(Default::default());
    }
    s.event_streams
        .end_marker
        .get_or_insert_with(|| b"[DONE]".to_vec());
    match &mut s.requests_from {
        Requests::Prompts(p) => p,
        _ => unreachable!("made prompts above"),
    }
}

const TARGETS_READS: [&str; 3] = ["auto", "stream", "whole"];
const TARGETS_FORMATS: [&str; 6] = ["auto", "http", "json", "nginx", "apache", "har"];
const ORDERS: [&str; 2] = ["sequential", "random"];
const ARRIVALS: [&str; 2] = ["constant", "poisson"];
const TLS_VERSIONS: [&str; 2] = ["1.2", "1.3"];
const IOS: [&str; 3] = ["auto", "uring", "epoll"];

fn name_of<T: PartialEq>(names: &[&'static str], all: &[T], v: &T) -> Write {
    Ok(all
        .iter()
        .position(|x| x == v)
        .map(|i| Value::String(names[i].into())))
}

/// Every run option, in `pelt --help`'s order.
pub static RUN: &[Row] = &[
    Row {
        name: "url",
        value: "URL",
        form: Form::Positional,
        help: "Target URL, e.g. http://127.0.0.1:8080/path (optional with --targets).",
        example: r#""http://127.0.0.1:8080/""#,
        read: |s, g| {
            s.url = g.string()?;
            Ok(())
        },
        write: |s| Ok(Some(s.url.clone().into())),
        ..BASE
    },
    Row {
        name: "connections",
        long: "connections",
        short: Some('c'),
        value: "N",
        hyphen: true,
        help: "Concurrent connections (spread over the threads).",
        ts: "Count",
        example: "8",
        read: |s, g| {
            s.connections = g.parse(values::connections)?;
            Ok(())
        },
        write: |s| Ok(Some(s.connections.into())),
        ..BASE
    },
    Row {
        name: "duration",
        long: "duration",
        short: Some('d'),
        value: "TIME",
        hyphen: true,
        help: "Run for this long: 500ms, 10s, 2m [default: 10s unless -n is given].",
        ts: "Duration",
        example: r#""2s""#,
        read: |s, g| {
            s.duration = Some(g.parse(values::duration)?);
            Ok(())
        },
        write: |s| Ok(s.duration.map(dur)),
        ..BASE
    },
    Row {
        name: "requests",
        long: "requests",
        short: Some('n'),
        value: "N",
        hyphen: true,
        help: "Send exactly this many requests: 1000, 10k, 1m. With -d, stop at whichever comes \
               first.",
        ts: "Count",
        example: r#""10k""#,
        read: |s, g| {
            s.requests = Some(g.parse(values::count)?);
            Ok(())
        },
        write: |s| Ok(s.requests.map(Value::from)),
        ..BASE
    },
    Row {
        name: "threads",
        long: "threads",
        short: Some('t'),
        value: "N",
        hyphen: true,
        help: "Worker threads [default: the CPUs pelt may run on].",
        ts: "Count",
        example: "2",
        read: |s, g| {
            s.threads = Some(g.parse(values::threads)?);
            Ok(())
        },
        write: |s| Ok(s.threads.map(Value::from)),
        ..BASE
    },
    Row {
        name: "method",
        long: "method",
        short: Some('m'),
        value: "METHOD",
        help: "Request method.",
        example: r#""POST""#,
        read: |s, g| {
            s.method = g.string()?;
            Ok(())
        },
        write: |s| Ok(Some(s.method.clone().into())),
        ..BASE
    },
    Row {
        name: "headers",
        long: "header",
        short: Some('H'),
        value: "HEADER",
        form: Form::Many,
        help: "Add a request header, 'Name: value' (repeatable).",
        ts: "Record<string, string | number> | string[] | string",
        example: r#"["X-A: 1"]"#,
        read: |s, g| {
            s.headers = headers(g)?;
            Ok(())
        },
        write: |s| Ok((!s.headers.is_empty()).then(|| json!(s.headers))),
        ..BASE
    },
    Row {
        name: "body",
        long: "body",
        short: Some('b'),
        value: "TEXT",
        help: "Request body (Content-Length added).",
        example: r#""{}""#,
        rules: &[Rule::Conflicts("bodyFile"), Rule::Conflicts("bodyBase64")],
        read: |s, g| {
            s.body = Body::Bytes(g.string()?.into_bytes());
            Ok(())
        },
        write: |s| body_as(s, true),
        ..BASE
    },
    Row {
        name: "bodyFile",
        long: "body-file",
        value: "PATH",
        help: "Read the request body from a file.",
        example: r#""body.json""#,
        read: |s, g| {
            s.body = Body::File(g.path()?);
            Ok(())
        },
        ..BASE
    },
    Row {
        name: "bodyBase64",
        value: "BASE64",
        form: Form::Library,
        help: "A request body that is not text, base64-encoded.",
        example: r#""AJ+Slgo=""#,
        rules: &[Rule::Conflicts("bodyFile")],
        read: |s, g| {
            use base64::Engine as _;
            let text = g.string()?;
            s.body = Body::Bytes(
                base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .map_err(|e| range_error(format!("option 'bodyBase64': {e}")))?,
            );
            Ok(())
        },
        write: |s| body_as(s, false),
        ..BASE
    },
    Row {
        name: "targets",
        long: "targets",
        value: "FILE",
        help: "Send many requests: targets from FILE (- for standard input), in vegeta's http \
               format (METHOD URL, header lines, @body-file; blank lines between) or JSON lines \
               ({\"method\", \"url\", \"headers\", \"body\" or \"body_base64\", \"name\", \
               \"t\" for --replay}), or an access log or HAR file (--targets-format). All on \
               one origin; the URL argument is then optional. -H, -m and --body apply to every \
               target. Node.js also takes the targets themselves, as a list.",
        ts: "string | Target[]",
        example: r#""targets.txt""#,
        rules: &[Rule::Conflicts("bodies")],
        read: |s, g| {
            s.requests_from = Requests::Targets {
                source: targets(g)?,
                format: TargetsFormat::Auto,
            };
            Ok(())
        },
        write: targets_list,
        ..BASE
    },
    Row {
        name: "targetsRead",
        long: "targets-read",
        value: "MODE",
        help: "Read the --targets file as the run goes (stream: memory bounded by a look-ahead \
               of 262,144 requests, whatever its length; after a first pass that checks every \
               line), or whole before it. Replayed or not; plain targets loop, and -n sends \
               the file's first n.",
        example: r#""stream""#,
        choices: &[
            (
                "auto",
                "stream a JSON-lines file or an access log of 64 MiB or more where it can be, \
                 else whole",
            ),
            (
                "stream",
                "as the run goes (JSON lines or an access log, from a file, over HTTP/1.1, \
                 without templates; plain targets also in order, without --warmup)",
            ),
            ("whole", "read whole before the run"),
        ],
        rules: &[Rule::Requires("targets")],
        read: |s, g| {
            let all = [TargetsRead::Auto, TargetsRead::Stream, TargetsRead::Whole];
            s.targets_read = g.choice(&TARGETS_READS, &all)?;
            Ok(())
        },
        // Not passed on: a fleet's agents get the targets inline (read whole there).
        write: |_| Ok(None),
        ..BASE
    },
    Row {
        name: "targetsFormat",
        long: "targets-format",
        value: "FORMAT",
        help: "The format of --targets.",
        example: r#""json""#,
        choices: &[
            (
                "auto",
                "JSON lines when the first line that is not blank or a comment starts with {, \
                 else http",
            ),
            ("http", "vegeta's http format"),
            ("json", "one JSON object per line"),
            (
                "nginx",
                "an nginx access log: each line a request at its logged time, on the URL's \
                 origin (the combined format unless --log-format says)",
            ),
            ("apache", "an Apache access log (its combined format)"),
            (
                "har",
                "a HAR 1.2 file (a browser's recording): each entry at its startedDateTime, \
                 those of one origin (the URL's, else the most frequent; the others skipped \
                 and counted), sent to the URL's origin when given",
            ),
        ],
        rules: &[Rule::Requires("targets")],
        read: |s, g| {
            let all = [
                TargetsFormat::Auto,
                TargetsFormat::Http,
                TargetsFormat::Json,
                TargetsFormat::Nginx,
                TargetsFormat::Apache,
                TargetsFormat::Har,
            ];
            let f = g.choice(&TARGETS_FORMATS, &all)?;
            if let Requests::Targets { format, .. } = &mut s.requests_from {
                *format = f;
            }
            Ok(())
        },
        write: |_| Ok(Some("auto".into())),
        ..BASE
    },
    Row {
        name: "replay",
        long: "replay",
        form: Form::Switch,
        help: "Replay a recording: send each target at its recorded time (\"t\" in JSON-lines \
               targets: milliseconds from the start, or an RFC 3339 time), in time order, \
               latency from that time (open loop). Ends after the last one unless -n, -d or \
               --replay-loop.",
        example: "true",
        rules: &[
            Rule::Requires("targets"),
            Rule::Conflicts("rate"),
            Rule::Conflicts("stages"),
        ],
        read: |s, g| {
            s.replay.on = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.replay.on),
        ..BASE
    },
    Row {
        name: "replaySpeed",
        long: "replay-speed",
        value: "SPEED",
        help: "With --replay: play the recording this many times as fast (2x, 0.5x; 1x unless \
               told).",
        ts: "number | string",
        example: r#""2x""#,
        read: |s, g| {
            s.replay.speed = g.parse(values::speed)?;
            Ok(())
        },
        write: |s| Ok((s.replay.speed != 1.0).then(|| Value::from(s.replay.speed))),
        ..BASE
    },
    Row {
        name: "replayLoop",
        long: "replay-loop",
        form: Form::Switch,
        help: "With --replay: start the recording again at its end (a mean gap later), until \
               -n or -d (10s unless told) ends the run.",
        example: "true",
        read: |s, g| {
            s.replay.laps = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.replay.laps),
        ..BASE
    },
    Row {
        name: "skipBadLines",
        long: "skip-bad-lines",
        form: Form::Switch,
        help: "With --targets (JSON lines, an access log or a HAR file): count and skip the \
               lines (HAR entries) that do not parse, instead of refusing the run; the result \
               says how many, and the first one.",
        example: "true",
        rules: &[Rule::Requires("targets")],
        read: |s, g| {
            s.skip_bad_lines = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.skip_bad_lines),
        ..BASE
    },
    Row {
        name: "logFormat",
        long: "log-format",
        value: "FORMAT",
        help: "With --targets-format nginx or apache: the log's line layout in nginx's \
               log_format syntax ($msec, $time_iso8601 or $time_local for the time; $request, \
               or $request_method and $request_uri); the combined format unless told.",
        example: r#""$msec \"$request\" $status""#,
        read: |s, g| {
            s.log_format = Some(g.string()?);
            Ok(())
        },
        ..BASE
    },
    Row {
        name: "bodies",
        long: "bodies",
        value: "FILE",
        help: "Send many bodies: one per line of FILE (- for standard input), each a request to \
               the URL with -m and -H, in turn.",
        example: r#""bodies.jsonl""#,
        rules: &[
            Rule::Conflicts("body"),
            Rule::Conflicts("bodyFile"),
            Rule::Conflicts("bodyBase64"),
        ],
        read: |s, g| {
            s.requests_from = Requests::Bodies(g.path()?);
            Ok(())
        },
        ..BASE
    },
    Row {
        name: "scenario",
        long: "scenario",
        value: "FILE",
        help: "Run user journeys from a scenario file (YAML or JSON; docs/SCENARIOS.md): each \
               connection is a virtual user with its own variables and cookie jar, running the \
               file's once steps, then its flow again and again; per-step figures, checks and \
               iterations in the report. Closed loop: -c users; open loop: --rate iterations \
               per second, each given to an idle user (up to --max-users). Over --http2 each \
               connection seats --streams users, one stream each. \
               The URL argument (or the file's config.target) gives the origin.",
        ts: "string | Record<string, unknown>",
        example: r#""shop.yaml""#,
        rules: &[
            Rule::Conflicts("targets"),
            Rule::Conflicts("bodies"),
            Rule::Conflicts("body"),
            Rule::Conflicts("bodyFile"),
            Rule::Conflicts("bodyBase64"),
        ],
        read: |s, g| {
            s.requests_from = Requests::Scenario(scenario_source(g)?);
            Ok(())
        },
        write: |s| match &s.requests_from {
            Requests::Scenario(source) => crate::scenario::inline(source).map(Some),
            _ => Ok(None),
        },
        ..BASE
    },
    Row {
        name: "prompts",
        long: "prompts",
        value: "FILE",
        help: "An LLM serving benchmark: each request a streamed OpenAI-style POST of a prompt \
               from FILE (JSON lines with prompt, text or messages, and optionally max_tokens; \
               or a ShareGPT JSON array), a chat completion to a URL ending in \
               /chat/completions, a text completion otherwise, asking for usage at its end; \
               in --order. Streams end at [DONE] unless --stream-end says.",
        example: r#""prompts.jsonl""#,
        rules: PROMPT_CONFLICTS,
        read: |s, g| {
            prompts(s).file = Some(g.path()?);
            Ok(())
        },
        ..BASE
    },
    Row {
        name: "inputTokens",
        long: "input-tokens",
        value: "N[,SPREAD]",
        help: "Made prompts of N words (a word a token; a model's tokenizer counts its own), \
               N-SPREAD to N+SPREAD uniformly from --seed, up to 1,000 of them, sent as \
               --prompts' are.",
        ts: "number | string",
        example: r#""512,128""#,
        rules: MADE_PROMPT_CONFLICTS,
        read: |s, g| {
            prompts(s).input = Some(g.parse(crate::prompts::Spread::parse_input)?);
            Ok(())
        },
        ..BASE
    },
    Row {
        name: "outputTokens",
        long: "output-tokens",
        value: "N[,SPREAD]",
        help: "With --prompts or --input-tokens: ask each request for N tokens (max_tokens), \
               N-SPREAD to N+SPREAD uniformly from --seed; a --prompts line that says its own \
               keeps it.",
        ts: "number | string",
        example: r#""128""#,
        read: |s, g| {
            prompts(s).output = Some(g.parse(crate::prompts::Spread::parse)?);
            Ok(())
        },
        ..BASE
    },
    Row {
        name: "model",
        long: "model",
        value: "NAME",
        help: "With --prompts or --input-tokens: the requests' model field (absent: the \
               server's own).",
        example: r#""meta-llama/Llama-3.1-8B-Instruct""#,
        read: |s, g| {
            prompts(s).model = Some(g.string()?);
            Ok(())
        },
        ..BASE
    },
    Row {
        name: "script",
        long: "script",
        short: Some('s'),
        value: "FILE",
        help: "Run a wrk Lua script (wrk's scripting API: the wrk table, wrk.format, \
               wrk.lookup, wrk.connect, setup(thread), init(args), done(summary, latency, \
               requests)); its arguments follow --. The request it leaves in the wrk table is \
               the run's (with --targets, it sets what -m, -H and --body would); request() may \
               read the request the run would send (pelt.next()); done() gets the figures of \
               every thread.",
        example: r#""post.lua""#,
        rules: &[Rule::Conflicts("scenario")],
        ts: "string | { file: string; text: string }",
        read: |s, g| {
            s.script = Some(match g.value {
                Value::Object(o) => {
                    let text = o.get("text").and_then(Value::as_str);
                    let text = text.ok_or_else(|| g.wrong("a path or { file, text }"))?;
                    let name = o.get("file").and_then(Value::as_str).unwrap_or("script");
                    crate::ScriptSource::Inline {
                        name: name.to_string(),
                        text: text.to_string(),
                    }
                }
                _ => crate::ScriptSource::File(g.path()?),
            });
            Ok(())
        },
        // Inlined, as a scenario is: a fleet's agents read no file.
        write: |s| match &s.script {
            None => Ok(None),
            Some(source) => {
                let text = String::from_utf8(source.read()?)
                    .map_err(|_| format!("the script {} is not UTF-8 text", source.name()))?;
                Ok(Some(json!({"file": source.name(), "text": text})))
            }
        },
        ..BASE
    },
    Row {
        name: "scriptArgs",
        value: "ARGS",
        form: Form::Trailing,
        help: "The script's arguments (init(args)), after -- as wrk takes them.",
        example: r#"["a", "b"]"#,
        rules: &[Rule::Requires("script")],
        read: |s, g| {
            s.script_args = g.list()?;
            Ok(())
        },
        write: |s| Ok((!s.script_args.is_empty()).then(|| json!(s.script_args))),
        ..BASE
    },
    Row {
        name: "order",
        long: "order",
        value: "ORDER",
        help: "With --targets or --bodies: the order requests take their entries.",
        example: r#""random""#,
        choices: &[
            (
                "sequential",
                "request i of the run sends entry i mod N, so -n k*N sends each exactly k times",
            ),
            ("random", "a reproducible draw per request (see --seed)"),
        ],
        read: |s, g| {
            s.order = g.choice(&ORDERS, &[TargetOrder::Sequential, TargetOrder::Random])?;
            Ok(())
        },
        write: |s| {
            name_of(
                &ORDERS,
                &[TargetOrder::Sequential, TargetOrder::Random],
                &s.order,
            )
        },
        ..BASE
    },
    Row {
        name: "seed",
        long: "seed",
        value: "N",
        help: "Seed for random choices (--order random); without it one is chosen and reported.",
        ts: "number | string",
        example: "7",
        read: |s, g| {
            s.seed = Some(g.parse(|t| t.parse::<u64>().map_err(|e| e.to_string()))?);
            Ok(())
        },
        write: |s| Ok(s.seed.map(Value::from)),
        ..BASE
    },
    Row {
        name: "unixSocket",
        long: "unix-socket",
        value: "PATH",
        help: "Connect to this Unix socket instead of the URL's host and port (curl's flag); the \
               URL still gives the Host header and the path. HTTP/1.1 and h2c.",
        example: r#""/run/app.sock""#,
        read: |s, g| {
            s.unix_socket = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.unix_socket),
        ..BASE
    },
    Row {
        name: "keepAlive",
        long: "no-keepalive",
        form: Form::Negated,
        help: "Open a new connection for every request (sends Connection: close); \
               keepAlive: false in Node.js.",
        example: "false",
        read: |s, g| {
            s.keep_alive = g.boolean()?;
            Ok(())
        },
        write: |s| Ok(Some(s.keep_alive.into())),
        ..BASE
    },
    Row {
        name: "timeout",
        long: "timeout",
        value: "TIME",
        hyphen: true,
        help: "Whole-request timeout, from the first byte written to the last byte read; a \
               stream (server-sent events) times out when it sends nothing for this long.",
        ts: "Duration",
        example: r#""3s""#,
        read: |s, g| {
            s.timeout = g.parse(values::duration)?;
            Ok(())
        },
        write: |s| Ok(Some(dur(s.timeout))),
        ..BASE
    },
    Row {
        name: "connectTimeout",
        long: "connect-timeout",
        value: "TIME",
        hyphen: true,
        help: "Connect timeout.",
        ts: "Duration",
        example: r#""250ms""#,
        read: |s, g| {
            s.connect_timeout = g.parse(values::duration)?;
            Ok(())
        },
        write: |s| Ok(Some(dur(s.connect_timeout))),
        ..BASE
    },
    Row {
        name: "stream",
        long: "stream",
        form: Form::Switch,
        help: "Read every response's body as a stream of events, whatever its Content-Type: \
               one event per line (JSON lines, as Ollama streams); text/event-stream responses \
               are always read as server-sent events. Each event is timed: time to first event, \
               the gaps between events, events/s (tokens, for an LLM).",
        example: "true",
        read: |s, g| {
            s.event_streams.all = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.event_streams.all),
        ..BASE
    },
    Row {
        name: "streamLimit",
        long: "stream-limit",
        value: "LIMIT",
        help: "End each stream after this many events (100), this long after its request \
               (30s), or at whichever comes first (100,30s): pelt closes it (HTTP/2: resets the \
               stream; HTTP/1.1: closes the connection) and counts it as cut, not as an error. \
               Every stream has a time limit.",
        ts: "number | string",
        example: r#""100,30s""#,
        read: |s, g| {
            let (events, time) = g.parse(values::stream_limit)?;
            s.event_streams.max_events = events;
            s.event_streams.max_time = Some(time.unwrap_or(pelt_engine::DEFAULT_STREAM_TIME));
            Ok(())
        },
        write: |s| {
            let l = &s.event_streams;
            let parts: Vec<String> = l
                .max_events
                .map(|n| n.to_string())
                .into_iter()
                .chain(l.max_time.map(duration_text))
                .collect();
            Ok((!parts.is_empty()).then(|| Value::String(parts.join(","))))
        },
        ..BASE
    },
    Row {
        name: "streamEnd",
        long: "stream-end",
        value: "DATA",
        help: "An event whose data is exactly this ends its stream normally, and is not counted \
               as an event ('[DONE]', as OpenAI-style servers send).",
        example: r#""[DONE]""#,
        read: |s, g| {
            let marker = g.parse(|v| match v {
                "" => Err("must not be empty (an event's data to end its stream at)".to_string()),
                v => Ok(v.as_bytes().to_vec()),
            })?;
            s.event_streams.end_marker = Some(marker);
            Ok(())
        },
        write: |s| {
            let marker = s.event_streams.end_marker.as_deref();
            Ok(marker.map(|m| Value::String(String::from_utf8_lossy(m).into_owned())))
        },
        ..BASE
    },
    Row {
        name: "goodput",
        long: "goodput",
        value: "TARGETS",
        form: Form::Many,
        hyphen: true,
        help: "Goodput: latency targets every good request meets, ttft<500ms, tpot<50ms (or \
               itl<50ms) and e2e<10s (comma-separated, or repeated). Each stream is judged at \
               its end; the result counts the requests that met every target, their share of \
               the requests that ended and their rate (--expect goodput>99%; pelt find-max \
               --slo goodput>99%). Needs streams read: --stream, --stream-end or --prompts.",
        example: r#"["ttft<500ms", "tpot<50ms"]"#,
        read: |s, g| {
            let texts: Vec<String> = g
                .list()?
                .iter()
                .flat_map(|t| t.split(','))
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            let slo = g
                .with(&Value::String(texts.join(",")))
                .parse(|_| crate::expect::slo(&texts))?;
            s.event_streams.slo = Some(slo);
            s.slo = texts;
            Ok(())
        },
        write: |s| Ok((!s.slo.is_empty()).then(|| json!(s.slo))),
        ..BASE
    },
    Row {
        name: "wsProtocol",
        long: "ws-protocol",
        value: "NAMES",
        help: "ws://: ask for these subprotocols (Sec-WebSocket-Protocol, comma-separated); a \
               server that picks one not asked for fails the upgrade.",
        example: r#""chat""#,
        read: |s, g| {
            s.websocket.protocols = g.parse(values::ws_protocols)?;
            Ok(())
        },
        write: |s| {
            let p = &s.websocket.protocols;
            Ok((!p.is_empty()).then(|| Value::String(p.clone())))
        },
        ..BASE
    },
    Row {
        name: "wsPing",
        long: "ws-ping",
        value: "TIME",
        help: "ws://: ping each upgraded socket this often (pongs are counted).",
        ts: "Duration",
        example: r#""30s""#,
        read: |s, g| {
            s.websocket.ping = Some(g.parse(values::duration)?);
            Ok(())
        },
        write: |s| Ok(s.websocket.ping.map(dur)),
        ..BASE
    },
    Row {
        name: "wsBinary",
        long: "ws-binary",
        form: Form::Switch,
        help: "ws://: send messages as binary frames (text unless told).",
        example: "true",
        read: |s, g| {
            s.websocket.binary = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.websocket.binary),
        ..BASE
    },
    Row {
        name: "wsExpectReply",
        long: "ws-no-reply",
        form: Form::Negated,
        help: "ws://: messages expect no reply (a server that pushes instead of echoing): each \
               is done when written, its latency the time to write it, and every message \
               received counts as pushed; wsExpectReply: false in Node.js. Without it each \
               message awaits the next message the socket receives (replies in order).",
        example: "false",
        read: |s, g| {
            s.websocket.no_reply = !g.boolean()?;
            Ok(())
        },
        write: |s| Ok(Some((!s.websocket.no_reply).into())),
        ..BASE
    },
    Row {
        name: "wsMaxMessage",
        long: "ws-max-message",
        value: "SIZE",
        help: "ws://: the longest message the server may send; a longer one fails the socket \
               (ws_too_big). [default: 64 MiB]",
        ts: "number | string",
        example: r#""1m""#,
        read: |s, g| {
            s.websocket.max_message = Some(g.parse(|v| match values::size(v)? {
                0 => Err("must be at least 1 byte".to_string()),
                n => Ok(n as u64),
            })?);
            Ok(())
        },
        write: |s| Ok(s.websocket.max_message.map(Value::from)),
        ..BASE
    },
    Row {
        name: "proto",
        long: "proto",
        value: "FILE",
        help: "grpc://: the service's .proto file (compiled by pelt, no protoc needed); the \
               URL's path names the method, grpc://HOST:PORT/package.Service/Method.",
        example: r#""greeter.proto""#,
        rules: &[Rule::Conflicts("protoset")],
        read: |s, g| {
            s.grpc.proto = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.grpc.proto),
        ..BASE
    },
    Row {
        name: "protoset",
        long: "protoset",
        value: "FILE",
        help: "grpc://: the service's compiled descriptors, a FileDescriptorSet (protoc \
               --descriptor_set_out --include_imports, buf build -o), as ghz and grpcurl take.",
        example: r#""greeter.protoset""#,
        read: |s, g| {
            s.grpc.protoset = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.grpc.protoset),
        ..BASE
    },
    Row {
        name: "reflect",
        long: "reflect",
        form: Form::Switch,
        help: "grpc://: take the service's descriptors from the server's reflection service \
               (grpc.reflection.v1, or v1alpha), asked once before the run, instead of --proto.",
        example: "true",
        rules: &[Rule::Conflicts("proto"), Rule::Conflicts("protoset")],
        read: |s, g| {
            s.grpc.reflect = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.grpc.reflect),
        ..BASE
    },
    Row {
        name: "grpcSendAll",
        long: "grpc-send-all",
        form: Form::Switch,
        help: "grpc:// bidirectional methods: send every message of the call at once, then \
               half-close (as ghz does); by default each message goes once the one before is \
               answered, so each gap between replies is a message's round trip.",
        example: "true",
        read: |s, g| {
            s.grpc.send_all = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.grpc.send_all),
        ..BASE
    },
    Row {
        name: "importPaths",
        long: "import-path",
        short: Some('I'),
        value: "DIR",
        form: Form::Many,
        help: "grpc://: a folder --proto's imports are found in, as protoc's -I (repeatable; \
               the proto's own folder is always one).",
        ts: "string[] | string",
        example: r#"["protos"]"#,
        read: |s, g| {
            s.grpc.import_paths = g.list()?.into_iter().map(Into::into).collect();
            Ok(())
        },
        write: |s| {
            let p = &s.grpc.import_paths;
            let shown: Vec<String> = p.iter().map(|p| p.display().to_string()).collect();
            Ok((!p.is_empty()).then(|| json!(shown)))
        },
        ..BASE
    },
    Row {
        name: "rate",
        long: "rate",
        short: Some('R'),
        value: "RATE",
        hyphen: true,
        help: "Open loop: send requests on a fixed schedule at this rate (per second: 500, 20k, \
               0.5), whatever the server does; latency counts from each request's due time. \
               With --stages, the rate they start from (0 allowed).",
        ts: "number | string",
        example: r#""20k""#,
        read: |s, g| {
            s.rate = Some(g.parse(values::rate_or_zero)?);
            Ok(())
        },
        write: |s| Ok(s.rate.map(Value::from)),
        ..BASE
    },
    Row {
        name: "stages",
        long: "stages",
        value: "STAGES",
        help: "Ramp the load in stages, as k6 does: each DURATION:TARGET moves linearly from the \
               previous target to its own (30s:1k,1m:10k,30s:0; 0s:N jumps). With --rate, the \
               arrival rate (starting at --rate); without, the active connections (starting at \
               0; -c does not apply). -d defaults to the stages' total.",
        ts: "string | Stage[]",
        example: r#""1s:5""#,
        read: |s, g| {
            s.stages = stages(g)?;
            Ok(())
        },
        write: |s| {
            let all: Vec<Value> = s
                .stages
                .iter()
                .map(|st| json!({"duration": dur(st.duration), "target": st.target}))
                .collect();
            Ok((!all.is_empty()).then_some(Value::Array(all)))
        },
        ..BASE
    },
    Row {
        name: "arrival",
        long: "arrival",
        value: "KIND",
        help: "Open loop: how requests are spaced.",
        example: r#""poisson""#,
        choices: &[
            ("constant", "evenly spaced"),
            (
                "poisson",
                "exponential gaps (a Poisson process) with the same mean rate",
            ),
        ],
        rules: &[Rule::Requires("rate")],
        read: |s, g| {
            s.arrival = g.choice(&ARRIVALS, &[Arrival::Constant, Arrival::Poisson])?;
            Ok(())
        },
        write: |s| match s.rate {
            Some(_) => name_of(
                &ARRIVALS,
                &[Arrival::Constant, Arrival::Poisson],
                &s.arrival,
            ),
            None => Ok(None),
        },
        ..BASE
    },
    Row {
        name: "maxConnections",
        long: "max-connections",
        alias: "max-users",
        value: "N",
        hyphen: true,
        help: "Open loop: open up to N connections when a request is due and none is free \
               [default: -c; with --prompts or --input-tokens 1,000, as an LLM benchmark's \
               streams each hold one]. With --scenario, each user is a connection: an iteration that \
               finds no idle user makes one, up to N.",
        ts: "Count",
        example: "64",
        // With --rate or --replay: `Shape::of` checks (a rule names one option).
        read: |s, g| {
            s.max_connections = Some(g.parse(values::connections)?);
            Ok(())
        },
        write: |s| {
            let open = s.rate.is_some() || s.replay.on;
            Ok(s.max_connections.filter(|_| open).map(Value::from))
        },
        ..BASE
    },
    Row {
        name: "batchWindow",
        long: "batch-window",
        value: "TIME",
        hyphen: true,
        help: "Open loop: requests due within one window of this length start together at its \
               end, and responses are read then, at the times the kernel stamped on them: one \
               wake-up for many, so less CPU; the lag shows each request's wait. 0: each at its \
               own due time; at most 10ms.",
        ts: "Duration",
        example: r#""250us""#,
        // With --rate or --replay: `Shape::of` checks (a rule names one option).
        read: |s, g| {
            s.batch_window = g.parse(values::batch_window)?;
            Ok(())
        },
        write: |s| Ok(Some(dur(s.batch_window))),
        ..BASE
    },
    Row {
        name: "pipeline",
        long: "pipeline",
        value: "D",
        hyphen: true,
        help: "HTTP/1.1 pipelining: each connection writes D requests together, and the next D \
               once all are answered (as wrk's pipeline script).",
        ts: "Count",
        example: "4",
        rules: &[Rule::Conflicts("keepAlive")],
        read: |s, g| {
            s.pipeline = g.parse(values::pipeline)?;
            Ok(())
        },
        write: |s| Ok(Some(s.pipeline.into())),
        ..BASE
    },
    Row {
        name: "http2",
        long: "http2",
        alias: "h2",
        form: Form::Switch,
        help: "HTTP/2: ALPN h2 on https://, prior knowledge (h2c) on http://.",
        example: "true",
        rules: &[Rule::Conflicts("keepAlive"), Rule::Conflicts("pipeline")],
        read: |s, g| {
            s.http2 = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.http2),
        ..BASE
    },
    Row {
        name: "http3",
        long: "http3",
        alias: "h3",
        form: Form::Switch,
        help: "HTTP/3 over QUIC (UDP) to an https:// URL: TLS 1.3 with ALPN h3, QPACK's static \
               table.",
        example: "true",
        rules: &[
            Rule::Conflicts("pipeline"),
            Rule::Conflicts("http2"),
            Rule::Conflicts("unixSocket"),
        ],
        read: |s, g| {
            s.http3 = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.http3),
        ..BASE
    },
    Row {
        name: "streams",
        long: "streams",
        value: "N",
        hyphen: true,
        help: "HTTP/2 (--http2, grpc://) and HTTP/3 (--http3): concurrent streams per connection \
               (the server's limit lowers it) [default: 1; with --rate, 100].",
        ts: "Count",
        example: "20",
        read: |s, g| {
            s.streams = Some(g.parse(values::streams)?);
            Ok(())
        },
        write: |s| Ok(s.streams.map(Value::from)),
        ..BASE
    },
    Row {
        name: "connectRate",
        long: "connect-rate",
        value: "N",
        hyphen: true,
        help: "Open at most N new connections per second at the start (1000, 5k) [default: all \
               at once, spread over the threads].",
        ts: "number | string",
        example: r#""1k""#,
        read: |s, g| {
            s.connect_rate = Some(g.parse(values::per_second)?);
            Ok(())
        },
        write: |s| Ok(s.connect_rate.map(Value::from)),
        ..BASE
    },
    Row {
        name: "cacert",
        long: "cacert",
        value: "FILE",
        help: "https: also trust the CA or self-signed certificates in this PEM file.",
        example: r#""ca.pem""#,
        rules: &[Rule::Conflicts("insecure")],
        read: |s, g| {
            s.tls.cacert = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.tls.cacert),
        ..BASE
    },
    Row {
        name: "insecure",
        long: "insecure",
        short: Some('k'),
        form: Form::Switch,
        help: "https: do NOT verify the server's certificate (the report says so).",
        example: "true",
        read: |s, g| {
            s.tls.insecure = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.tls.insecure),
        ..BASE
    },
    Row {
        name: "tlsFullHandshake",
        long: "tls-full-handshake",
        form: Form::Switch,
        help: "https: no session resumption, every connection pays a full handshake.",
        example: "true",
        read: |s, g| {
            s.tls.full_handshake = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.tls.full_handshake),
        ..BASE
    },
    Row {
        name: "tlsEarlyData",
        long: "tls-early-data",
        form: Form::Switch,
        help: "https over HTTP/3: requests go in 0-RTT on resumed connections where the server \
               allows it (a refused one goes again after the handshake, counted once). Only for \
               requests safe to repeat: a 0-RTT request can be replayed.",
        example: "true",
        rules: &[Rule::Requires("http3"), Rule::Conflicts("tlsFullHandshake")],
        read: |s, g| {
            s.tls.early_data = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.tls.early_data),
        ..BASE
    },
    Row {
        name: "tlsVersion",
        long: "tls-version",
        value: "VERSION",
        help: "https: only this TLS version [default: 1.2 or 1.3, as negotiated].",
        example: r#""1.3""#,
        choices: &[("1.2", "TLS 1.2"), ("1.3", "TLS 1.3")],
        read: |s, g| {
            s.tls.version = Some(g.choice(&TLS_VERSIONS, &[TlsVersion::V1_2, TlsVersion::V1_3])?);
            Ok(())
        },
        write: |s| Ok(s.tls.version.map(|v| v.name().into())),
        ..BASE
    },
    Row {
        name: "sni",
        long: "sni",
        value: "NAME",
        help: "https: send and verify this name (SNI) instead of the URL's host.",
        example: r#""example.com""#,
        read: |s, g| {
            s.tls.sni = Some(g.string()?);
            Ok(())
        },
        write: |s| Ok(s.tls.sni.clone().map(Value::from)),
        ..BASE
    },
    Row {
        name: "cert",
        long: "cert",
        value: "FILE",
        help: "https: present this PEM client certificate chain (needs --key).",
        example: r#""client.pem""#,
        rules: &[Rule::Requires("key")],
        read: |s, g| {
            s.tls.cert = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.tls.key.as_ref().and(s.tls.cert.clone())),
        ..BASE
    },
    Row {
        name: "key",
        long: "key",
        value: "FILE",
        help: "https: the PEM private key of --cert.",
        example: r#""client.key""#,
        rules: &[Rule::Requires("cert")],
        read: |s, g| {
            s.tls.key = Some(g.path()?);
            Ok(())
        },
        write: |s| path(&s.tls.cert.as_ref().and(s.tls.key.clone())),
        ..BASE
    },
    Row {
        name: "io",
        long: "io",
        value: "BACKEND",
        env: "PELT_IO",
        help: "I/O backend.",
        example: r#""epoll""#,
        choices: &[
            (
                "auto",
                "io_uring if this kernel and sandbox allow it, else epoll",
            ),
            ("uring", "io_uring; an error if it is unavailable"),
            ("epoll", "epoll"),
        ],
        read: |s, g| {
            s.io = g.choice(&IOS, &[IoChoice::Auto, IoChoice::Uring, IoChoice::Epoll])?;
            Ok(())
        },
        write: |s| {
            name_of(
                &IOS,
                &[IoChoice::Auto, IoChoice::Uring, IoChoice::Epoll],
                &s.io,
            )
        },
        ..BASE
    },
    Row {
        name: "warmup",
        long: "warmup",
        value: "TIME",
        hyphen: true,
        help: "Send for this long first without measuring (its counts are reported apart); -d \
               and -n count after it.",
        ts: "Duration",
        example: r#""2s""#,
        read: |s, g| {
            s.warmup = Some(g.parse(values::duration)?);
            Ok(())
        },
        write: |s| Ok(s.warmup.map(dur)),
        ..BASE
    },
    Row {
        name: "grace",
        long: "grace",
        value: "TIME",
        hyphen: true,
        help: "After Ctrl-C or SIGTERM (Node.js: stop()), wait this long for requests in flight \
               before reporting.",
        ts: "Duration",
        example: "0",
        read: |s, g| {
            s.grace = g.parse(values::duration_or_zero)?;
            Ok(())
        },
        write: |s| Ok(Some(dur(s.grace))),
        ..BASE
    },
    Row {
        name: "expect",
        long: "expect",
        value: "EXPR",
        form: Form::Many,
        hyphen: true,
        help: "Fail the run (exit 3) unless this holds: p99<20ms, errors<0.1%, rps>5000, 5xx<1% \
               (repeatable); with --scenario also step[NAME].p99<50ms, checks>99.9%, \
               iterations_failed<0.1%.",
        example: r#"["p99<20ms"]"#,
        read: |s, g| {
            s.expect = super::expectations(g)?;
            Ok(())
        },
        write: |s| Ok(super::expectations_value(&s.expect)),
        ..BASE
    },
    Row {
        name: "monitor",
        long: "monitor",
        value: "PID|NAME",
        help: "Sample the server's processes on this machine each second: a process ID, a \
               name (every process of that name), or listener (whatever listens on the \
               target's port: each target its own in pelt compare); children included. Their CPU (and CPU-us per \
               request), memory, threads and file descriptors, the host's CPU and network and \
               pelt's own CPU join the timeline, and the summary says what limited the run.",
        ts: "string | number",
        example: r#""nginx""#,
        read: |s, g| {
            s.monitor = Some(g.parse(crate::monitor::Watch::parse)?);
            Ok(())
        },
        write: |s| {
            Ok(s.monitor.as_ref().map(|w| match w {
                crate::monitor::Watch::Pid(pid) => Value::from(*pid),
                crate::monitor::Watch::Name(name) => Value::from(name.as_str()),
                crate::monitor::Watch::Listener | crate::monitor::Watch::Listening { .. } => {
                    Value::from("listener")
                }
            }))
        },
        ..BASE
    },
    Row {
        name: "monitorRemote",
        long: "monitor-remote",
        value: "HOST:PORT",
        help: "Take the server's resources from a pelt monitor on its machine (pelt monitor \
               PID|NAME there), over the fleet's channel and token (--token-file or \
               PELT_FLEET_TOKEN): the server's processes and that machine's CPU and network \
               each second beside the load. A monitor that goes silent is named; the run goes \
               on.",
        ts: "string",
        example: r#""10.0.0.9:7071""#,
        read: |s, g| {
            s.monitor_remote = Some(g.string()?);
            Ok(())
        },
        write: |s| Ok(s.monitor_remote.clone().map(Value::from)),
        ..BASE
    },
    Row {
        name: "sampleEvery",
        value: "N",
        form: Form::Library,
        help: "Keep every N-th request that ends, per thread, for the 'samples' event (at most \
               4,096 per thread and second; the rest counted in samples_dropped).",
        ts: "Count",
        example: "10",
        read: |s, g| {
            s.sample_every = Some(g.parse(values::count)?);
            Ok(())
        },
        write: |s| Ok(s.sample_every.map(Value::from)),
        ..BASE
    },
    Row {
        name: "sampleResponses",
        value: "BOOL",
        form: Form::Library,
        help: "Sampled requests (sampleEvery) carry their responses as they came, head and body \
               (HTTP/1.1; at most 64 KiB each): the sample's `response`.",
        ts: "boolean",
        example: "true",
        rules: &[Rule::Requires("sampleEvery"), Rule::Conflicts("http2")],
        read: |s, g| {
            s.sample_responses = g.boolean()?;
            Ok(())
        },
        write: |s| on(s.sample_responses),
        ..BASE
    },
];

/// `--scenario`: a path; in a program, also the scenario as an object (its document), or as a
/// fleet's coordinator ships it (`{"file", "text", "files"}`: the text and every file it names).
fn scenario_source(g: &Given) -> Result<crate::ScenarioSource, OptionError> {
    let Value::Object(o) = g.value else {
        return g.path().map(crate::ScenarioSource::File);
    };
    if let Some(text) = o.get("text") {
        let text = text
            .as_str()
            .ok_or_else(|| g.wrong("a path or a scenario"))?;
        let name = o.get("file").and_then(Value::as_str).unwrap_or("scenario");
        let files = match o.get("files") {
            None => Default::default(),
            Some(Value::Object(files)) => files
                .iter()
                .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect::<Option<_>>()
                .ok_or_else(|| g.wrong("a path or a scenario"))?,
            Some(_) => return Err(g.wrong("a path or a scenario")),
        };
        return Ok(crate::ScenarioSource::Inline {
            name: name.to_string(),
            text: text.to_string(),
            files: Some(files),
        });
    }
    let text = serde_json::to_string_pretty(g.value).expect("a JSON value writes");
    Ok(crate::ScenarioSource::Inline {
        name: "scenario".into(),
        text,
        files: None,
    })
}

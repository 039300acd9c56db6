//! Request sources: a `--targets` file (vegeta's `http` format, or JSON lines) and a
//! `--bodies` file, read completely before any traffic. Every problem is one line naming the
//! file and the line.
//!
//! Written here rather than taken from a crate: vegeta's `http` target format has no Rust
//! parser, and the JSON-lines records are plain serde.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where the targets come from.
#[derive(Debug, Clone)]
pub enum TargetsSource {
    /// A file, read once (`-`: standard input, read to its end).
    File(PathBuf),
    /// Targets a program built itself.
    List(Vec<TargetEntry>),
}

/// The format of a targets file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetsFormat {
    /// JSON lines when the first line that is not blank or a comment starts with `{`, else
    /// `http`.
    #[default]
    Auto,
    /// vegeta's: a `METHOD URL` (or `URL`) line, `Name: value` header lines, an optional
    /// `@path` body line; blank lines between targets; `#` starts a comment line.
    Http,
    /// One JSON object per line: `url`, and optional `method`, `headers`, `body` or
    /// `body_base64`, `name`, `t` (its recorded time, for `--replay`) and `recorded_ms` (how
    /// long it took then).
    Json,
    /// An nginx access log (`access_log.rs`): a request per line, at its logged time, on the
    /// URL argument's origin; the combined format unless `--log-format` says.
    Nginx,
    /// An Apache access log: read as nginx's (Apache's combined format is the same layout).
    Apache,
    /// A HAR 1.2 file (`har.rs`): each entry's request at its `startedDateTime`, the entries
    /// of one origin.
    Har,
}

impl TargetsFormat {
    /// The format of `text` when `self` is `Auto`: a HAR when it is one JSON object with a
    /// `"log"` (its first line is not a whole object, or is one with a `"log"`), JSON lines
    /// when the first line that is not blank or a comment starts with `{`, else `http`.
    pub fn of(self, text: &[u8]) -> TargetsFormat {
        if self != TargetsFormat::Auto {
            return self;
        }
        let text = String::from_utf8_lossy(&text[..text.len().min(1 << 16)]);
        let Some(first) = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
        else {
            return TargetsFormat::Http;
        };
        if !first.starts_with('{') {
            return TargetsFormat::Http;
        }
        match serde_json::from_str::<serde_json::Value>(first) {
            Ok(v) if v.get("log").is_some() => TargetsFormat::Har,
            Ok(_) => TargetsFormat::Json,
            // A pretty-printed HAR, or a whole one on a line longer than the 64 KiB looked at.
            Err(_) if first == "{" || first.starts_with("{\"log\"") => TargetsFormat::Har,
            // A JSON line that does not parse: read as JSON lines, it says where.
            Err(_) => TargetsFormat::Json,
        }
    }
}

/// What to do with a line (a HAR's entry) that does not parse: fail with its message, or with
/// `--skip-bad-lines` count it, keep the first message, and go on.
#[derive(Debug, Clone, Default)]
pub struct BadLines {
    pub skip: bool,
    pub count: u64,
    pub first: Option<String>,
}

impl BadLines {
    /// `problem`, at its place: an error, or (skipping) counted.
    pub fn found(&mut self, problem: String) -> Result<(), String> {
        if !self.skip {
            return Err(problem);
        }
        self.count += 1;
        self.first.get_or_insert(problem);
        Ok(())
    }
}

/// One target, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetEntry {
    /// `None`: the run's method (`-m`).
    pub method: Option<String>,
    pub url: String,
    /// `Name: value`, sent after the command line's headers.
    pub headers: Vec<String>,
    /// `None`: the run's body (`--body`), if any.
    pub body: Option<Vec<u8>>,
    pub name: Option<String>,
    /// The line of the file it starts on (0: not from a file), for messages.
    pub line: usize,
    /// When it was recorded (`"t"`; `--replay` sends it then).
    pub time: Option<Recorded>,
    /// How long the recorded request took, µs (nginx's `$request_time`, a HAR's `time`): the
    /// per-target table shows these beside the replayed latencies.
    pub recorded_us: Option<u64>,
}

/// A request's recorded time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// An offset, ns (`"t": 1500.5`: milliseconds from the recording's start).
    Offset(u64),
    /// A moment, ns since the Unix epoch (`"t": "2026-11-27T10:00:00.250Z"`).
    At(i128),
}

/// `ns` since the Unix epoch as an RFC 3339 time (UTC, to the nanosecond).
pub fn rfc3339(ns: i128) -> String {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::from_unix_timestamp_nanos(ns)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

impl Recorded {
    /// `"t"`'s value: milliseconds (a number, 0 or more) or an RFC 3339 timestamp.
    fn of(v: &serde_json::Value, at: &str) -> Result<Recorded, String> {
        use time::format_description::well_known::Rfc3339;
        match v {
            serde_json::Value::Number(n) => match n.as_f64() {
                Some(ms) if (0.0..1e15).contains(&ms) => {
                    Ok(Recorded::Offset((ms * 1e6).round() as u64))
                }
                _ => Err(format!(
                    "{at}: \"t\" {n} is not a time in milliseconds, 0 or more"
                )),
            },
            serde_json::Value::String(text) => time::OffsetDateTime::parse(text, &Rfc3339)
                .map(|t| Recorded::At(t.unix_timestamp_nanos()))
                .map_err(|e| format!("{at}: \"t\" {text:?} is not an RFC 3339 time: {e}")),
            _ => Err(format!(
                "{at}: \"t\" is milliseconds (a number) or an RFC 3339 time (a string)"
            )),
        }
    }
}

/// Reads `path` (`-`: standard input) completely.
pub fn read_input(path: &Path, flag: &str) -> Result<Vec<u8>, String> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| format!("cannot read {flag} from standard input: {e}"))?;
        return Ok(buf);
    }
    if path.is_dir() {
        return Err(format!(
            "cannot read {flag} {}: it is a directory",
            path.display()
        ));
    }
    std::fs::read(path).map_err(|e| format!("cannot read {flag} {}: {e}", path.display()))
}

/// Reads the targets of `text` (the contents of `file`); lines that do not parse go to `bad`
/// (JSON lines; vegeta's format has no line-by-line skip).
pub fn parse_targets(
    text: &[u8],
    file: &str,
    format: TargetsFormat,
    bad: &mut BadLines,
) -> Result<Vec<TargetEntry>, String> {
    let format = format.of(text);
    let text =
        std::str::from_utf8(text).map_err(|e| format!("--targets {file}: not UTF-8 text ({e})"))?;
    let targets = match format {
        TargetsFormat::Json => parse_json_lines(text, file, bad)?,
        TargetsFormat::Http if bad.skip => {
            return Err(format!(
                "--targets {file}: --skip-bad-lines is for JSON lines, access logs and HAR \
                 files (a target in vegeta's format spans lines)"
            ))
        }
        TargetsFormat::Http | TargetsFormat::Auto => parse_http(text, file)?,
        TargetsFormat::Nginx | TargetsFormat::Apache | TargetsFormat::Har => {
            return Err(format!(
                "--targets {file}: an access log or HAR file needs the run's URL (read in \
                 prepare)"
            ))
        }
    };
    if targets.is_empty() {
        return Err(format!("--targets {file}: no targets in it"));
    }
    Ok(targets)
}

/// vegeta's `http` format.
fn parse_http(text: &str, file: &str) -> Result<Vec<TargetEntry>, String> {
    let mut targets = Vec::new();
    let mut current: Option<TargetEntry> = None;
    for (n, raw) in text.lines().enumerate() {
        let at = format!("--targets {file} line {}", n + 1);
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            targets.extend(current.take());
            continue;
        }
        let Some(t) = current.as_mut() else {
            current = Some(request_line(line, &at, n + 1)?);
            continue;
        };
        if let Some(path) = line.strip_prefix('@') {
            if t.body.is_some() {
                return Err(format!("{at}: a second body line for one target"));
            }
            let body = std::fs::read(path)
                .map_err(|e| format!("{at}: cannot read body file {path}: {e}"))?;
            t.body = Some(body);
        } else if t.body.is_some() {
            return Err(format!(
                "{at}: {} after the body line (a blank line ends a target)",
                crate::values::quote(line)
            ));
        } else {
            check_header(line, &at)?;
            t.headers.push(line.to_string());
        }
    }
    targets.extend(current);
    Ok(targets)
}

/// `METHOD URL`, or a lone URL.
fn request_line(line: &str, at: &str, number: usize) -> Result<TargetEntry, String> {
    let mut words = line.split_whitespace();
    let (method, url) = match (words.next(), words.next(), words.next()) {
        (Some(url), None, _) => (None, url),
        (Some(method), Some(url), None) => (Some(method.to_string()), url),
        _ => {
            return Err(format!(
                "{at}: expected \"METHOD URL\" or a URL, found {}",
                crate::values::quote(line)
            ))
        }
    };
    if !url.contains("://") {
        return Err(format!(
            "{at}: expected \"METHOD URL\" or a URL, found {} (a header line needs a target \
             line above it)",
            crate::values::quote(line)
        ));
    }
    Ok(TargetEntry {
        method,
        url: url.to_string(),
        line: number,
        ..TargetEntry::default()
    })
}

pub(crate) fn check_header(line: &str, at: &str) -> Result<(), String> {
    pelt_codec::request::parse_header(line)
        .map(|_| ())
        .map_err(|e| {
            let shown = crate::values::quote(&crate::values::masked_header(line));
            format!("{at}: invalid header {shown}: {e}")
        })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    method: Option<String>,
    url: String,
    #[serde(default)]
    headers: JsonHeaders,
    body: Option<String>,
    body_base64: Option<String>,
    name: Option<String>,
    t: Option<serde_json::Value>,
    /// How long the recorded request took, ms.
    recorded_ms: Option<f64>,
}

/// `{"Name": "value"}` (a list of values repeats the header) or `["Name: value", ...]`.
#[derive(Deserialize, Default)]
#[serde(untagged)]
enum JsonHeaders {
    #[default]
    None,
    Map(serde_json::Map<String, serde_json::Value>),
    Lines(Vec<String>),
}

fn parse_json_lines(
    text: &str,
    file: &str,
    bad: &mut BadLines,
) -> Result<Vec<TargetEntry>, String> {
    let mut targets = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        match json_line(raw, file, n + 1) {
            Ok(e) => targets.extend(e),
            Err(problem) => bad.found(problem)?,
        }
    }
    Ok(targets)
}

/// Line `number` of JSON-lines file `file`: its target (`None`: a blank or comment line).
pub(crate) fn json_line(
    raw: &str,
    file: &str,
    number: usize,
) -> Result<Option<TargetEntry>, String> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let at = format!("--targets {file} line {number}");
    serde_json::from_str::<JsonTarget>(line)
        .map_err(|e| format!("{at}: {e}"))
        .and_then(|t| entry(t, &at, number))
        .map(Some)
}

/// One target given as a JSON object (a JSON-lines line's object, or a program's): `at` says
/// where, `line` numbers it.
pub fn json_entry(v: &serde_json::Value, at: &str, line: usize) -> Result<TargetEntry, String> {
    let t = JsonTarget::deserialize(v).map_err(|e| format!("{at}: {e}"))?;
    entry(t, at, line)
}

fn entry(t: JsonTarget, at: &str, line: usize) -> Result<TargetEntry, String> {
    use base64::Engine as _;
    if t.url.trim().is_empty() {
        return Err(format!("{at}: \"url\" is empty"));
    }
    let body = match (t.body, t.body_base64) {
        (Some(_), Some(_)) => {
            return Err(format!("{at}: give body or body_base64, not both"));
        }
        (Some(b), None) => Some(b.into_bytes()),
        (None, Some(b)) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .map_err(|e| format!("{at}: body_base64 is not base64: {e}"))?,
        ),
        (None, None) => None,
    };
    let mut headers = Vec::new();
    match t.headers {
        JsonHeaders::None => {}
        JsonHeaders::Lines(lines) => headers = lines,
        JsonHeaders::Map(map) => {
            for (name, value) in map {
                let values = match value {
                    serde_json::Value::String(v) => vec![v],
                    serde_json::Value::Array(vs) => vs
                        .into_iter()
                        .map(|v| match v {
                            serde_json::Value::String(s) => Ok(s),
                            _ => Err(format!("{at}: header {name}: values are strings")),
                        })
                        .collect::<Result<_, _>>()?,
                    _ => return Err(format!("{at}: header {name}: values are strings")),
                };
                headers.extend(values.into_iter().map(|v| format!("{name}: {v}")));
            }
        }
    }
    for h in &headers {
        check_header(h, at)?;
    }
    let time = t.t.as_ref().map(|v| Recorded::of(v, at)).transpose()?;
    Ok(TargetEntry {
        method: t.method,
        url: t.url,
        headers,
        body,
        name: t.name,
        line,
        time,
        recorded_us: match t.recorded_ms {
            Some(ms) if (0.0..1e12).contains(&ms) => Some((ms * 1e3).round() as u64),
            Some(ms) => {
                return Err(format!(
                    "{at}: \"recorded_ms\" {ms} is not a duration in milliseconds"
                ))
            }
            None => None,
        },
    })
}

/// The bodies of a `--bodies` file with their line numbers: one per line (the line without
/// its end), blank lines skipped.
pub fn parse_bodies(text: &[u8], file: &str) -> Result<Vec<(usize, Vec<u8>)>, String> {
    let bodies: Vec<(usize, Vec<u8>)> = text
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(|(n, l)| (n + 1, l.to_vec()))
        .collect();
    if bodies.is_empty() {
        return Err(format!("--bodies {file}: no bodies in it (one per line)"));
    }
    Ok(bodies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_times_read_as_milliseconds_or_rfc3339() {
        let text = "{\"url\": \"http://h/a\", \"t\": 1500.25}\n\
                    {\"url\": \"http://h/b\", \"t\": \"2026-11-27T10:00:00.5+01:00\"}\n\
                    {\"url\": \"http://h/c\"}\n";
        let list = parse_targets(
            text.as_bytes(),
            "r.jsonl",
            TargetsFormat::Auto,
            &mut BadLines::default(),
        )
        .unwrap();
        assert_eq!(list[0].time, Some(Recorded::Offset(1_500_250_000)));
        // 09:00:00.5 UTC on 2026-11-27.
        let at = 1_795_770_000_500_000_000;
        assert_eq!(list[1].time, Some(Recorded::At(at)));
        assert_eq!(rfc3339(at), "2026-11-27T09:00:00.5Z");
        assert_eq!(list[2].time, None);
        let bad = parse_targets(
            b"{\"url\": \"http://h/\", \"t\": true}",
            "r",
            TargetsFormat::Json,
            &mut BadLines::default(),
        );
        assert!(bad.unwrap_err().contains("line 1: \"t\" is milliseconds"));
    }

    fn http(text: &str) -> Result<Vec<TargetEntry>, String> {
        parse_targets(
            text.as_bytes(),
            "t.txt",
            TargetsFormat::Auto,
            &mut BadLines::default(),
        )
    }

    #[test]
    fn vegeta_http_format() {
        let t = http(
            "# users\nGET http://h:1/a?x=1\nX-Account: 7\n\n\nhttp://h:1/b\n\nDELETE http://h:1/c\nA: 1\nB: 2\n",
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].method.as_deref(), Some("GET"));
        assert_eq!(t[0].headers, vec!["X-Account: 7"]);
        assert_eq!(t[0].line, 2);
        assert_eq!(
            (t[1].method.as_deref(), t[1].url.as_str()),
            (None, "http://h:1/b")
        );
        assert_eq!(t[2].headers.len(), 2);
    }

    #[test]
    fn http_body_lines_read_the_file() {
        let dir = std::env::temp_dir().join(format!("pelt-sources-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("b.json");
        std::fs::write(&body, b"{\"k\":1}").unwrap();
        let t = http(&format!(
            "POST http://h/x\nContent-Type: application/json\n@{}\n",
            body.display()
        ))
        .unwrap();
        assert_eq!(t[0].body.as_deref(), Some(&b"{\"k\":1}"[..]));
        let e = http("POST http://h/x\n@/nonexistent/pelt-body\n").unwrap_err();
        assert!(
            e.starts_with("--targets t.txt line 2: cannot read body file /nonexistent/pelt-body"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_http_lines_name_file_and_line() {
        for (text, want) in [
            (
                "GET http://h/ HTTP/1.1\n",
                "line 1: expected \"METHOD URL\" or a URL",
            ),
            ("X-Header: 1\n", "line 1: expected \"METHOD URL\" or a URL"),
            ("GET http://h/\nnot a header\n", "line 2: invalid header"),
            ("", "no targets in it"),
            ("# only a comment\n\n", "no targets in it"),
        ] {
            let e = http(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("--targets t.txt"), "{e}");
        }
    }

    #[test]
    fn json_lines() {
        let t = http(concat!(
            "{\"url\":\"http://h/a\",\"name\":\"home\"}\n",
            "\n",
            "{\"method\":\"POST\",\"url\":\"http://h/b\",\"headers\":{\"Content-Type\":\"application/json\",\"X\":[\"1\",\"2\"]},\"body\":\"{}\"}\n",
            "{\"url\":\"http://h/c\",\"headers\":[\"A: b\"],\"body_base64\":\"AAEC\"}\n",
        ))
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].name.as_deref(), Some("home"));
        assert_eq!(
            t[1].headers,
            vec!["Content-Type: application/json", "X: 1", "X: 2"]
        );
        assert_eq!(t[1].body.as_deref(), Some(&b"{}"[..]));
        assert_eq!(t[2].body.as_deref(), Some(&[0u8, 1, 2][..]));
        assert_eq!(t[2].line, 4);
        for (text, want) in [
            (
                "{\"url\":\"http://h/\",\"nope\":1}\n",
                "line 1: unknown field `nope`",
            ),
            (
                "{\"url\":\"http://h/\"}\n{\"method\":\"GET\"}\n",
                "line 2: missing field `url`",
            ),
            (
                "{\"url\":\"http://h/\",\"body\":\"a\",\"body_base64\":\"YQ==\"}\n",
                "not both",
            ),
            (
                "{\"url\":\"http://h/\",\"body_base64\":\"!!\"}\n",
                "not base64",
            ),
            (
                "{\"url\":\"http://h/\",\"headers\":{\"Bad Name\":\"v\"}}\n",
                "invalid header",
            ),
        ] {
            let e = http(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn bodies_one_per_line() {
        let b = parse_bodies(b"{\"a\":1}\r\n\n{\"a\":2}\n", "b.jsonl").unwrap();
        assert_eq!(
            b,
            vec![(1, b"{\"a\":1}".to_vec()), (3, b"{\"a\":2}".to_vec())]
        );
        assert!(parse_bodies(b"\n \n", "b.jsonl")
            .unwrap_err()
            .contains("no bodies"));
    }
}

//! Access logs as targets (`--targets-format nginx` or `apache`): each line a request, at its
//! logged time, on the URL argument's origin (a log has no host).
//!
//! The line's layout is nginx's `log_format` syntax (`--log-format`), the combined format
//! unless told, which is Apache's combined format too:
//! `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent
//! "$http_referer" "$http_user_agent"`. A variable matches up to the text that follows it in
//! the format (as log analysers read these lines); the ones pelt uses are `$request` (or
//! `$request_method` with `$request_uri`), for the time `$msec` (seconds with milliseconds),
//! `$time_iso8601` or `$time_local` (to the second), and `$request_time` (how long the server
//! took, shown beside the replayed latencies). The rest are skipped.
//!
//! Written here: no crate reads nginx's format syntax; the times go through the `time` crate.

use crate::sources::{BadLines, Recorded, TargetEntry};

/// nginx's (and Apache's) combined format.
pub const COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" $status \
                            $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";

/// A compiled log format: literal text and variables, alternating.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFormat {
    /// The text before the first variable.
    head: String,
    /// Each variable and the literal text after it (empty: the variable runs to the end).
    fields: Vec<(String, String)>,
}

impl LogFormat {
    /// Compiles `format` (nginx's syntax: `$name` or `${name}`, the rest literal).
    pub fn new(format: &str) -> Result<LogFormat, String> {
        let mut head = String::new();
        let mut fields: Vec<(String, String)> = Vec::new();
        let mut rest = format;
        while let Some(at) = rest.find('$') {
            let text = &rest[..at];
            match fields.last_mut() {
                Some((_, after)) => after.push_str(text),
                None => head.push_str(text),
            }
            let after_dollar = &rest[at + 1..];
            let (name, next) = match after_dollar.strip_prefix('{') {
                Some(braced) => {
                    let end = braced
                        .find('}')
                        .ok_or_else(|| format!("--log-format: ${{ without }} in {format:?}"))?;
                    (&braced[..end], &braced[end + 1..])
                }
                None => {
                    let end = after_dollar
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after_dollar.len());
                    (&after_dollar[..end], &after_dollar[end..])
                }
            };
            if name.is_empty() {
                return Err(format!(
                    "--log-format: a $ without a variable name in {format:?}"
                ));
            }
            if fields.last().is_some_and(|(_, after)| after.is_empty()) {
                return Err(format!(
                    "--log-format: ${} follows ${} with no text between, so where one ends \
                     cannot be told",
                    name,
                    fields.last().map(|f| f.0.as_str()).unwrap_or_default()
                ));
            }
            fields.push((name.to_string(), String::new()));
            rest = next;
        }
        match fields.last_mut() {
            Some((_, after)) => after.push_str(rest),
            None => return Err(format!("--log-format: no variable in {format:?}")),
        }
        let has = |n: &str| fields.iter().any(|(f, _)| f == n);
        let request = has("request") || (has("request_method") && has("request_uri"));
        if !request {
            return Err(
                "--log-format: the format needs $request (or $request_method and $request_uri)"
                    .into(),
            );
        }
        Ok(LogFormat { head, fields })
    }

    /// The variables of `line`, by name; `None` when it does not match.
    fn fields<'a>(&self, line: &'a str) -> Option<Vec<(&str, &'a str)>> {
        let mut rest = line.strip_prefix(self.head.as_str())?;
        let mut out = Vec::with_capacity(self.fields.len());
        for (name, after) in &self.fields {
            let end = if after.is_empty() {
                rest.len()
            } else {
                rest.find(after.as_str())?
            };
            out.push((name.as_str(), &rest[..end]));
            rest = &rest[end + after.len()..];
        }
        rest.is_empty().then_some(out)
    }
}

/// The requests of an access log `text` (`file` names it), on `origin`
/// (`http://host:port`); lines that do not parse go to `bad`.
pub fn parse(
    text: &str,
    file: &str,
    origin: &str,
    format: &LogFormat,
    bad: &mut BadLines,
) -> Result<Vec<TargetEntry>, String> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        match line(raw, file, n + 1, origin, format) {
            Ok(e) => out.extend(e),
            Err(e) => bad.found(e)?,
        }
    }
    if out.is_empty() {
        return Err(format!("--targets {file}: no requests in it"));
    }
    Ok(out)
}

/// Line `number` of access log `file`: its request on `origin` (`None`: a blank line).
pub(crate) fn line(
    raw: &str,
    file: &str,
    number: usize,
    origin: &str,
    format: &LogFormat,
) -> Result<Option<TargetEntry>, String> {
    let line = raw.trim_end_matches('\r');
    if line.trim().is_empty() {
        return Ok(None);
    }
    match entry(line, format, origin) {
        Ok(e) => Ok(Some(TargetEntry { line: number, ..e })),
        Err(e) => Err(format!("--targets {file} line {number}: {e}")),
    }
}

fn entry(line: &str, format: &LogFormat, origin: &str) -> Result<TargetEntry, String> {
    let fields = format
        .fields(line)
        .ok_or("the line does not match the log format (see --log-format)")?;
    let get = |name: &str| fields.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let (method, uri) = match get("request") {
        Some(request) => {
            let mut parts = request.split(' ');
            match (parts.next(), parts.next()) {
                (Some(m), Some(u)) if !m.is_empty() && u.starts_with('/') => (m, u),
                _ => {
                    return Err(format!(
                        "{request:?} is not a request line (METHOD /path ...)"
                    ))
                }
            }
        }
        None => (
            get("request_method").unwrap_or_default(),
            get("request_uri").unwrap_or_default(),
        ),
    };
    if method.is_empty() || !uri.starts_with('/') {
        return Err(format!("no request in the line ({method:?} {uri:?})"));
    }
    let recorded_us = match get("request_time") {
        // nginx's `0.003`: seconds with milliseconds; `-` when it had none.
        Some(t) if t != "-" => Some(
            t.parse::<f64>()
                .ok()
                .filter(|s| (0.0..1e9).contains(s))
                .map(|s| (s * 1e6).round() as u64)
                .ok_or_else(|| format!("$request_time {t:?} is not seconds"))?,
        ),
        _ => None,
    };
    Ok(TargetEntry {
        method: Some(method.to_string()),
        url: format!("{origin}{uri}"),
        time: time(&get)?,
        recorded_us,
        ..TargetEntry::default()
    })
}

/// The line's time: `$msec`, `$time_iso8601` or `$time_local`, the first the format has.
fn time<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<Option<Recorded>, String> {
    use time::format_description::well_known::Rfc3339;
    if let Some(msec) = get("msec") {
        let (s, ms) = msec.split_once('.').unwrap_or((msec, "0"));
        let parse = |t: &str| t.parse::<i128>().ok();
        return match (parse(s), parse(&format!("{ms:0<3}")[..3])) {
            (Some(s), Some(ms)) if ms < 1000 => {
                Ok(Some(Recorded::At(s * 1_000_000_000 + ms * 1_000_000)))
            }
            _ => Err(format!("$msec {msec:?} is not seconds.milliseconds")),
        };
    }
    if let Some(iso) = get("time_iso8601") {
        return time::OffsetDateTime::parse(iso, &Rfc3339)
            .map(|t| Some(Recorded::At(t.unix_timestamp_nanos())))
            .map_err(|e| format!("$time_iso8601 {iso:?}: {e}"));
    }
    if let Some(local) = get("time_local") {
        // nginx's and Apache's `27/Nov/2026:09:00:00 +0000`; the layout parsed once, not per
        // line.
        static LAYOUT: std::sync::LazyLock<Vec<time::format_description::BorrowedFormatItem>> =
            std::sync::LazyLock::new(|| {
                time::format_description::parse_borrowed::<2>(
                    "[day]/[month repr:short]/[year]:[hour]:[minute]:[second] \
                     [offset_hour sign:mandatory][offset_minute]",
                )
                .expect("a valid layout")
            });
        return time::OffsetDateTime::parse(local, &LAYOUT[..])
            .map(|t| Some(Recorded::At(t.unix_timestamp_nanos())))
            .map_err(|e| format!("$time_local {local:?}: {e}"));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "http://127.0.0.1:8080";

    #[test]
    fn combined_lines_are_requests_at_their_second() {
        let f = LogFormat::new(COMBINED).unwrap();
        let text = "127.0.0.1 - - [27/Nov/2026:09:00:01 +0100] \"GET /a?b=1 HTTP/1.1\" 200 \
                    12 \"-\" \"curl/8\"\n\n\
                    ::1 - ann [27/Nov/2026:08:00:02 +0000] \"POST /c HTTP/1.1\" 201 0 \"-\" \"x y\"\n";
        let list = parse(text, "access.log", ORIGIN, &f, &mut BadLines::default()).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].url, "http://127.0.0.1:8080/a?b=1");
        assert_eq!(list[1].method.as_deref(), Some("POST"));
        assert_eq!(list[1].line, 3);
        // 08:00:01 UTC and 08:00:02 UTC: a second apart.
        let (Some(Recorded::At(a)), Some(Recorded::At(b))) = (list[0].time, list[1].time) else {
            panic!("{list:?}");
        };
        assert_eq!(b - a, 1_000_000_000);
    }

    #[test]
    fn a_custom_format_with_msec_times_to_the_millisecond() {
        let f = LogFormat::new("$msec $request_time \"$request\" ${status}").unwrap();
        let list = parse(
            "1795770000.250 0.003 \"GET /x HTTP/1.1\" 200\n1795770000.5 0.001 \"HEAD / HTTP/1.0\" 200",
            "l",
            ORIGIN,
            &f,
            &mut BadLines::default(),
        )
        .unwrap();
        let times: Vec<_> = list.iter().map(|e| e.time).collect();
        assert_eq!(
            times,
            [
                Some(Recorded::At(1_795_770_000_250_000_000)),
                Some(Recorded::At(1_795_770_000_500_000_000))
            ]
        );
        let took: Vec<_> = list.iter().map(|e| e.recorded_us).collect();
        assert_eq!(took, [Some(3000), Some(1000)]);
    }

    #[test]
    fn skipping_bad_lines_counts_them_and_keeps_the_first() {
        let f = LogFormat::new(COMBINED).unwrap();
        let good = "1.2.3.4 - - [27/Nov/2026:09:00:01 +0000] \"GET /a HTTP/1.1\" 200 1 \"-\" \"-\"";
        let text = format!("{good}\ngarbage\n{good}\n\"half a line\n");
        let mut bad = BadLines {
            skip: true,
            ..BadLines::default()
        };
        let list = parse(&text, "a.log", ORIGIN, &f, &mut bad).unwrap();
        assert_eq!(list.iter().map(|e| e.line).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(bad.count, 2);
        assert_eq!(
            bad.first.as_deref(),
            Some(
                "--targets a.log line 2: the line does not match the log format (see --log-format)"
            )
        );
        // Every line bad: still no requests, which is an error.
        let e = parse("garbage\n", "a.log", ORIGIN, &f, &mut bad).unwrap_err();
        assert!(e.contains("no requests in it"), "{e}");
    }

    #[test]
    fn bad_formats_and_lines_say_what_and_where() {
        assert!(LogFormat::new("$status $body_bytes_sent")
            .unwrap_err()
            .contains("$request"));
        assert!(LogFormat::new("$request$status")
            .unwrap_err()
            .contains("no text between"));
        assert!(LogFormat::new("${request")
            .unwrap_err()
            .contains("without }"));
        let f = LogFormat::new(COMBINED).unwrap();
        let e = parse("garbage\n", "a.log", ORIGIN, &f, &mut BadLines::default()).unwrap_err();
        assert_eq!(
            e,
            "--targets a.log line 1: the line does not match the log format (see --log-format)"
        );
        let e = parse(
            "1.2.3.4 - - [27/Nov/2026:09:00:01 +0000] \"\\x16\\x03\" 400 0 \"-\" \"-\"",
            "a.log",
            ORIGIN,
            &f,
            &mut BadLines::default(),
        )
        .unwrap_err();
        assert!(e.contains("is not a request line"), "{e}");
    }
}

//! HAR 1.2 files as targets (`--targets-format har`, or `auto` when the file is one JSON
//! object with a `"log"`): each entry's request (method, URL, headers, body) at its
//! `startedDateTime`, its `time` the recorded latency.
//!
//! A page load reaches many origins (its own, a CDN, analytics); a run has one. pelt keeps the
//! entries of one origin, the URL argument's when the file has entries on it, else the most
//! frequent, and counts the others as skipped. With a URL argument on another origin, the
//! kept entries go there instead: a recording of production replayed against a new build.
//!
//! Headers that belong to the recorded connection, or that pelt writes itself, are dropped:
//! HTTP/2's pseudo-headers (`:authority`...), the hop-by-hop ones (RFC 9110 7.6.1: Connection
//! and the names it lists, Keep-Alive, Proxy-Connection, TE, Transfer-Encoding, Upgrade,
//! Trailer), Host and Content-Length.
//!
//! Read with serde_json: each entry stays a borrowed raw value until it is read, so one that
//! does not parse is named by the line it starts on, and `--skip-bad-lines` skips it.

use crate::sources::{check_header, BadLines, Recorded, TargetEntry};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A HAR file's requests on one origin.
#[derive(Debug)]
pub struct Har {
    pub entries: Vec<TargetEntry>,
    /// The recorded origin the entries are from.
    pub origin: String,
    /// Entries on other origins (or not HTTP), skipped.
    pub other_origins: u64,
}

#[derive(Deserialize)]
struct File<'a> {
    #[serde(borrow)]
    log: Log<'a>,
}

#[derive(Deserialize)]
struct Log<'a> {
    #[serde(borrow)]
    entries: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: String,
    /// Milliseconds, the whole exchange (`-1`: not known).
    time: Option<f64>,
    request: Request,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostData {
    #[serde(default)]
    mime_type: String,
    text: Option<String>,
    #[serde(default)]
    params: Vec<Param>,
    /// Not in HAR 1.2, written by some browsers for binary bodies: `base64`.
    encoding: Option<String>,
}

#[derive(Deserialize)]
struct Param {
    name: String,
    #[serde(default)]
    value: String,
}

/// Hop-by-hop headers (RFC 9110 7.6.1, with the old Proxy-Connection) and the ones pelt
/// writes from the URL and the body.
const DROPPED: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "transfer-encoding",
    "upgrade",
    "trailer",
    "host",
    "content-length",
];

/// The requests of HAR `text` (`file` names it) on one origin: `url`'s when given and the file
/// has entries on it, else the most frequent; sent to `url`'s origin when given. Entries that
/// do not parse go to `bad`.
pub fn parse(text: &str, file: &str, url: &str, bad: &mut BadLines) -> Result<Har, String> {
    let at = |line: usize| format!("--targets {file} line {line}");
    let har: File = serde_json::from_str(text).map_err(|e| {
        format!("--targets {file} is not a HAR file (a JSON object with log.entries): {e}")
    })?;
    let mut read: Vec<(String, TargetEntry)> = Vec::with_capacity(har.log.entries.len());
    for raw in har.log.entries {
        // The entry's first line: where its text starts in the file.
        let offset = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        let line = text[..offset].bytes().filter(|&b| b == b'\n').count() + 1;
        let entry = serde_json::from_str::<Entry>(raw.get())
            .map_err(|e| format!("{}: {e}", at(line)))
            .and_then(|e| target(e, line).map_err(|e| format!("{}: {e}", at(line))));
        match entry {
            Ok(pair) => read.push(pair),
            Err(problem) => bad.found(problem)?,
        }
    }
    let wanted = url::Url::parse(url)
        .ok()
        .filter(|u| u.has_host())
        .map(|u| u.origin().ascii_serialization());
    let origin = match wanted
        .as_ref()
        .filter(|w| read.iter().any(|(o, _)| o == *w))
    {
        Some(w) => w.clone(),
        None => most_frequent(&read)
            .ok_or_else(|| format!("--targets {file}: no http or https request in it to replay"))?,
    };
    let total = read.len();
    let mut entries: Vec<TargetEntry> = read
        .into_iter()
        .filter(|(o, _)| *o == origin)
        .map(|(_, e)| e)
        .collect();
    let other_origins = (total - entries.len()) as u64;
    if let Some(to) = wanted.filter(|w| *w != origin) {
        for e in &mut entries {
            e.url = format!("{to}{}", &e.url[origin.len()..]);
        }
    }
    Ok(Har {
        entries,
        origin,
        other_origins,
    })
}

/// The origin most entries are on (the first seen of equals); `None` without entries.
fn most_frequent(read: &[(String, TargetEntry)]) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (o, _) in read.iter().filter(|(o, _)| !o.is_empty()) {
        match counts.iter_mut().find(|(c, _)| c == o) {
            Some((_, n)) => *n += 1,
            None => counts.push((o, 1)),
        }
    }
    let best = counts.iter().map(|c| c.1).max()?;
    counts.iter().find(|c| c.1 == best).map(|c| c.0.to_string())
}

/// One entry as a target on its origin (`""` for a URL that is not http or https, which no
/// origin keeps).
fn target(e: Entry, line: usize) -> Result<(String, TargetEntry), String> {
    use base64::Engine as _;
    use time::format_description::well_known::Rfc3339;
    let started = time::OffsetDateTime::parse(&e.started_date_time, &Rfc3339)
        .map_err(|err| {
            format!(
                "startedDateTime {:?} is not an RFC 3339 time: {err}",
                e.started_date_time
            )
        })?
        .unix_timestamp_nanos();
    let r = e.request;
    let parsed = url::Url::parse(&r.url).map_err(|err| format!("url {:?}: {err}", r.url))?;
    let origin = match parsed.scheme() {
        "http" | "https" if parsed.has_host() => parsed.origin().ascii_serialization(),
        _ => String::new(),
    };
    if r.method.is_empty() {
        return Err("request.method is empty".into());
    }
    let listed: Vec<String> = r
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        .flat_map(|h| h.value.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    let mut headers = Vec::new();
    for h in &r.headers {
        let name = h.name.to_ascii_lowercase();
        if name.starts_with(':') || DROPPED.contains(&name.as_str()) || listed.contains(&name) {
            continue;
        }
        let line = format!("{}: {}", h.name, h.value);
        check_header(&line, "request.headers")
            .map_err(|e| e.replacen("request.headers: ", "", 1))?;
        headers.push(line);
    }
    let body = match r.post_data {
        None => None,
        Some(p) => Some(match (p.text, p.encoding.as_deref()) {
            (Some(t), Some("base64")) => base64::engine::general_purpose::STANDARD
                .decode(t.trim())
                .map_err(|err| format!("postData.text is not base64: {err}"))?,
            (Some(t), _) => t.into_bytes(),
            // A form given as its fields: sent as the browser encoded it.
            (None, _) if p.mime_type.starts_with("application/x-www-form-urlencoded") => {
                url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(p.params.iter().map(|q| (&q.name, &q.value)))
                    .finish()
                    .into_bytes()
            }
            (None, _) => Vec::new(),
        }),
    };
    let path = &parsed[url::Position::BeforePath..url::Position::AfterQuery];
    let entry = TargetEntry {
        method: Some(r.method),
        // The origin as its serialization (lower-case, no default port), then the path.
        url: format!("{origin}{}", if path.is_empty() { "/" } else { path }),
        headers,
        body,
        line,
        time: Some(Recorded::At(started)),
        recorded_us: e
            .time
            .filter(|ms| (0.0..1e12).contains(ms))
            .map(|ms| (ms * 1000.0).round() as u64),
        ..TargetEntry::default()
    };
    Ok((origin, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, at: &str, extra: &str) -> String {
        format!(
            "{{\"startedDateTime\": \"{at}\", \"time\": 12.5,\n \"request\": {{\"method\": \"GET\", \
             \"url\": \"{url}\", \"httpVersion\": \"HTTP/1.1\", \"headers\": [], \
             \"queryString\": [], \"cookies\": [], \"headersSize\": -1, \"bodySize\": 0{extra}}},\n \
             \"response\": {{}}, \"cache\": {{}}, \"timings\": {{}}}}"
        )
    }

    fn har(entries: &[String]) -> String {
        format!(
            "{{\n\"log\": {{\"version\": \"1.2\", \"creator\": {{\"name\": \"t\", \"version\": \"1\"}},\n\"entries\": [\n{}\n]}}}}\n",
            entries.join(",\n")
        )
    }

    #[test]
    fn the_most_frequent_origin_is_kept_and_the_others_counted() {
        let text = har(&[
            entry("http://site.test/", "2026-11-27T10:00:00.000Z", ""),
            entry("https://cdn.test/app.js", "2026-11-27T10:00:00.100Z", ""),
            entry(
                "http://site.test/api?q=1",
                "2026-11-27T10:00:00.250+00:00",
                "",
            ),
            entry("data:text/plain,hi", "2026-11-27T10:00:00.300Z", ""),
        ]);
        let h = parse(&text, "p.har", "", &mut BadLines::default()).unwrap();
        assert_eq!(h.origin, "http://site.test");
        assert_eq!(h.other_origins, 2);
        let urls: Vec<&str> = h.entries.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(urls, ["http://site.test/", "http://site.test/api?q=1"]);
        assert_eq!(h.entries[0].recorded_us, Some(12_500));
        let (Some(Recorded::At(a)), Some(Recorded::At(b))) = (h.entries[0].time, h.entries[1].time)
        else {
            panic!("{:?}", h.entries);
        };
        assert_eq!(b - a, 250_000_000);
        // Each entry names the line it starts on.
        assert_eq!(h.entries[0].line, 4);
        assert_eq!(h.entries[1].line, 10);

        // The URL argument picks the origin; on another origin, it is where they go.
        let h = parse(
            &text,
            "p.har",
            "https://cdn.test/",
            &mut BadLines::default(),
        )
        .unwrap();
        assert_eq!(h.entries[0].url, "https://cdn.test/app.js");
        assert_eq!(h.other_origins, 3);
        let h = parse(
            &text,
            "p.har",
            "http://127.0.0.1:8080/",
            &mut BadLines::default(),
        )
        .unwrap();
        assert_eq!(h.origin, "http://site.test");
        assert_eq!(h.entries[1].url, "http://127.0.0.1:8080/api?q=1");
    }

    #[test]
    fn hop_by_hop_pseudo_and_pelts_own_headers_are_dropped() {
        let headers = ", \"headers\": [{\"name\": \":authority\", \"value\": \"site.test\"}, \
             {\"name\": \"Host\", \"value\": \"site.test\"}, \
             {\"name\": \"Connection\", \"value\": \"keep-alive, X-Hop\"}, \
             {\"name\": \"X-Hop\", \"value\": \"1\"}, \
             {\"name\": \"Keep-Alive\", \"value\": \"timeout=5\"}, \
             {\"name\": \"Content-Length\", \"value\": \"99\"}, \
             {\"name\": \"Cookie\", \"value\": \"a=1\"}, \
             {\"name\": \"Content-Type\", \"value\": \"application/json\"}], \
             \"postData\": {\"mimeType\": \"application/json\", \"text\": \"{\\\"k\\\":1}\"}";
        let text = har(&[entry("http://site.test/api", "2026-11-27T10:00:00Z", "")
            .replacen(", \"headers\": []", headers, 1)
            .replacen("\"GET\"", "\"POST\"", 1)]);
        let h = parse(&text, "p.har", "", &mut BadLines::default()).unwrap();
        let e = &h.entries[0];
        assert_eq!(e.method.as_deref(), Some("POST"));
        assert_eq!(e.headers, ["Cookie: a=1", "Content-Type: application/json"]);
        assert_eq!(e.body.as_deref(), Some(&b"{\"k\":1}"[..]));
    }

    #[test]
    fn form_params_and_base64_bodies() {
        let form = ", \"postData\": {\"mimeType\": \"application/x-www-form-urlencoded\", \
                    \"params\": [{\"name\": \"q\", \"value\": \"a b&c\"}, {\"name\": \"n\", \"value\": \"1\"}]}";
        let bin =
            ", \"postData\": {\"mimeType\": \"application/octet-stream\", \"text\": \"AAEC\", \
                   \"encoding\": \"base64\"}";
        let text = har(&[
            entry("http://s.test/f", "2026-11-27T10:00:00Z", form),
            entry("http://s.test/b", "2026-11-27T10:00:01Z", bin),
        ]);
        let h = parse(&text, "p.har", "", &mut BadLines::default()).unwrap();
        assert_eq!(h.entries[0].body.as_deref(), Some(&b"q=a+b%26c&n=1"[..]));
        assert_eq!(h.entries[1].body.as_deref(), Some(&[0u8, 1, 2][..]));
    }

    #[test]
    fn bad_entries_name_their_line_or_are_skipped_and_counted() {
        let text = har(&[
            entry("http://s.test/a", "2026-11-27T10:00:00Z", ""),
            entry("http://s.test/b", "yesterday", ""),
            entry("http://s.test/c", "2026-11-27T10:00:02Z", ""),
        ]);
        let e = parse(&text, "p.har", "", &mut BadLines::default()).unwrap_err();
        assert!(
            e.starts_with(
                "--targets p.har line 7: startedDateTime \"yesterday\" is not an RFC 3339"
            ),
            "{e}"
        );
        let mut bad = BadLines {
            skip: true,
            ..BadLines::default()
        };
        let h = parse(&text, "p.har", "", &mut bad).unwrap();
        assert_eq!(h.entries.len(), 2);
        assert_eq!(bad.count, 1);
        for (text, want) in [
            ("{\"log\": {}}", "is not a HAR file"),
            ("[1, 2]", "is not a HAR file"),
            (&har(&[]) as &str, "no http or https request in it"),
        ] {
            let e = parse(text, "p.har", "", &mut BadLines::default()).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}

//! Requests whose bytes change per request: `{{seq}}`, `{{rand:A:B}}`, `{{uuid}}`,
//! `{{line:FILE}}`, `{{now_ms}}`. A template is compiled once (by the caller) into static bytes
//! and value slots; each request is rendered into the connection's write buffer, its
//! `Content-Length` recomputed, without allocating once the buffers have grown.

use std::io::Write as _;

/// A value written per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// The request's index in the run (unique over threads and connections).
    Seq,
    /// A uniform integer in `lo..=hi`.
    Rand { lo: i64, hi: i64 },
    /// A random (version 4) UUID.
    Uuid,
    /// Line `seq mod count` of [`Lines`] number `n` of the set.
    Line(u32),
    /// Milliseconds since the Unix epoch, when the request is written.
    NowMs,
    /// A scenario's variable: its value for the virtual user that sends the request.
    Var(u16),
    /// A scenario user's `Cookie` header line, from its jar (nothing when the jar has none
    /// for the request).
    Cookie,
}

#[derive(Debug, Clone, Copy)]
enum Part {
    /// `bytes[start..end]`.
    Bytes(u32, u32),
    Value(Value),
}

/// One request as static bytes and values: its head (request line and headers, each ending
/// in CRLF, without `Content-Length` and the blank line) and its body.
#[derive(Debug, Clone, Default)]
pub struct Template {
    bytes: Vec<u8>,
    head: Vec<Part>,
    body: Vec<Part>,
    /// The request has a body: `Content-Length` is written with its rendered length.
    has_body: bool,
}

/// The lines of a `{{line:FILE}}` file, back to back.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Lines {
    /// `lines` must not be empty.
    pub fn new<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Lines {
        let mut l = Lines::default();
        for line in lines {
            l.bytes.extend_from_slice(line);
            l.ends.push(l.bytes.len());
        }
        l
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn get(&self, k: usize) -> &[u8] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.bytes[start..self.ends[k]]
    }
}

/// What rendering one request needs besides its template.
pub(crate) struct Render<'a> {
    pub seq: u64,
    pub rng: &'a mut fastrand::Rng,
    pub lines: &'a [Lines],
    /// A scenario user's variables (empty outside scenarios).
    pub vars: &'a [String],
    /// A scenario user's `Cookie` value (empty: no header).
    pub cookie: &'a str,
}

impl Template {
    /// Adds literal bytes to the head (`body: false`) or the body.
    pub fn push_bytes(&mut self, body: bool, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(bytes);
        let part = Part::Bytes(start, self.bytes.len() as u32);
        if body {
            self.body.push(part);
        } else {
            self.head.push(part);
        }
    }

    /// Adds a value to the head or the body.
    pub fn push_value(&mut self, body: bool, value: Value) {
        if body {
            self.body.push(Part::Value(value));
        } else {
            self.head.push(Part::Value(value));
        }
    }

    /// The request has a body (even one that may render empty): `Content-Length` is sent.
    pub fn set_has_body(&mut self, has_body: bool) {
        self.has_body = has_body;
    }

    /// Writes one request onto `out`; `scratch` holds the body while its length is found.
    pub(crate) fn render(&self, out: &mut Vec<u8>, scratch: &mut Vec<u8>, r: &mut Render<'_>) {
        self.write_parts(&self.head, out, r);
        if self.has_body {
            scratch.clear();
            self.write_parts(&self.body, scratch, r);
            let _ = write!(out, "Content-Length: {}\r\n\r\n", scratch.len());
            out.extend_from_slice(scratch);
        } else {
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Writes one request's body alone onto `out` (a WebSocket message).
    pub(crate) fn render_body(&self, out: &mut Vec<u8>, r: &mut Render<'_>) {
        self.write_parts(&self.body, out, r);
    }

    fn write_parts(&self, parts: &[Part], out: &mut Vec<u8>, r: &mut Render<'_>) {
        for part in parts {
            match *part {
                Part::Bytes(s, e) => out.extend_from_slice(&self.bytes[s as usize..e as usize]),
                Part::Value(v) => write_value(v, out, r),
            }
        }
    }
}

fn write_value(v: Value, out: &mut Vec<u8>, r: &mut Render<'_>) {
    match v {
        Value::Seq => {
            let _ = write!(out, "{}", r.seq);
        }
        Value::Rand { lo, hi } => {
            let _ = write!(out, "{}", r.rng.i64(lo..=hi));
        }
        Value::Uuid => {
            // Version 4 (random), variant 10xx.
            let n = r.rng.u128(..) & !(0xF << 76) | (0x4 << 76);
            let n = n & !(0x3 << 62) | (0x2 << 62);
            let hex = format_args!(
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                (n >> 96) as u32,
                (n >> 80) as u16,
                (n >> 64) as u16,
                (n >> 48) as u16,
                n & 0xFFFF_FFFF_FFFF
            );
            let _ = out.write_fmt(hex);
        }
        Value::Line(file) => {
            let lines = &r.lines[file as usize];
            out.extend_from_slice(lines.get((r.seq % lines.len() as u64) as usize));
        }
        Value::NowMs => {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let _ = write!(out, "{ms}");
        }
        Value::Var(v) => out.extend_from_slice(r.vars[v as usize].as_bytes()),
        Value::Cookie if r.cookie.is_empty() => {}
        Value::Cookie => {
            out.extend_from_slice(b"Cookie: ");
            out.extend_from_slice(r.cookie.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &Template, seq: u64, lines: &[Lines]) -> String {
        let mut rng = fastrand::Rng::with_seed(7);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        t.render(
            &mut out,
            &mut scratch,
            &mut Render {
                seq,
                rng: &mut rng,
                lines,
                vars: &[],
                cookie: "",
            },
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn renders_head_and_body_with_content_length() {
        let mut t = Template::default();
        t.push_bytes(false, b"POST /u/");
        t.push_value(false, Value::Seq);
        t.push_bytes(false, b" HTTP/1.1\r\nHost: h\r\n");
        t.set_has_body(true);
        t.push_bytes(true, b"{\"id\":");
        t.push_value(true, Value::Seq);
        t.push_bytes(true, b",\"name\":\"");
        t.push_value(true, Value::Line(0));
        t.push_bytes(true, b"\"}");
        let names = [Lines::new([&b"ann"[..], b"bo"])];
        assert_eq!(
            render(&t, 12, &names),
            "POST /u/12 HTTP/1.1\r\nHost: h\r\nContent-Length: 22\r\n\r\n{\"id\":12,\"name\":\"ann\"}"
        );
        assert!(render(&t, 1234, &names)
            .ends_with("Content-Length: 24\r\n\r\n{\"id\":1234,\"name\":\"ann\"}"));
        assert!(render(&t, 3, &names).ends_with("\"bo\"}"));
    }

    /// A scenario user's variables and cookie jar fill their values; a user without cookies
    /// sends no Cookie header at all.
    #[test]
    fn scenario_variables_and_cookies_render_per_user() {
        let mut t = Template::default();
        t.push_bytes(false, b"POST /cart/");
        t.push_value(false, Value::Var(1));
        t.push_bytes(false, b" HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ");
        t.push_value(false, Value::Var(0));
        t.push_bytes(false, b"\r\n");
        t.push_value(false, Value::Cookie);
        t.set_has_body(true);
        t.push_bytes(true, b"{\"id\":");
        t.push_value(true, Value::Var(1));
        t.push_bytes(true, b"}");
        let mut rng = fastrand::Rng::with_seed(1);
        let vars = ["T1".to_string(), "42".to_string()];
        let mut out = |cookie: &str| {
            let (mut out, mut scratch) = (Vec::new(), Vec::new());
            let mut r = Render {
                seq: 0,
                rng: &mut rng,
                lines: &[],
                vars: &vars,
                cookie,
            };
            t.render(&mut out, &mut scratch, &mut r);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            out("sid=abc"),
            "POST /cart/42 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer T1\r\nCookie: sid=abc\r\nContent-Length: 9\r\n\r\n{\"id\":42}"
        );
        assert_eq!(
            out(""),
            "POST /cart/42 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer T1\r\nContent-Length: 9\r\n\r\n{\"id\":42}"
        );
    }

    #[test]
    fn values_are_in_range_and_well_formed() {
        let mut t = Template::default();
        t.push_bytes(false, b"GET /");
        t.push_value(false, Value::Rand { lo: -3, hi: 3 });
        t.push_bytes(false, b"/");
        t.push_value(false, Value::Uuid);
        t.push_bytes(false, b"/");
        t.push_value(false, Value::NowMs);
        t.push_bytes(false, b" HTTP/1.1\r\n");
        let mut rng = fastrand::Rng::with_seed(1);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        for seq in 0..200 {
            out.clear();
            let mut r = Render {
                seq,
                rng: &mut rng,
                lines: &[],
                vars: &[],
                cookie: "",
            };
            t.render(&mut out, &mut scratch, &mut r);
            let s = String::from_utf8(out.clone()).unwrap();
            let path: Vec<&str> = s.split(' ').nth(1).unwrap().split('/').collect();
            let n: i64 = path[1].parse().unwrap();
            assert!((-3..=3).contains(&n), "{s}");
            let uuid = path[2];
            assert_eq!(uuid.len(), 36, "{uuid}");
            assert_eq!(&uuid[14..15], "4", "version: {uuid}");
            assert!("89ab".contains(&uuid[19..20]), "variant: {uuid}");
            assert!(path[3].parse::<u64>().unwrap() > 1_600_000_000_000);
            assert!(
                s.ends_with(" HTTP/1.1\r\n\r\n"),
                "no body: no Content-Length"
            );
        }
    }
}

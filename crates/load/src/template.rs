//! Templates in the request: `{{seq}}`, `{{rand:A:B}}`, `{{uuid}}`, `{{line:FILE}}` and
//! `{{now_ms}}` in the URL's path and query, header values and the body.
//!
//! Each `{{...}}` is replaced by a marker made of characters a URL keeps as they are, the
//! request is encoded as usual (so it is checked as usual), and the encoded bytes are cut at
//! the markers into the engine's [`Template`]: static bytes and values, with `Content-Length`
//! left to be written per request.

use pelt_engine::template::{Lines, Template, Value};
use std::collections::HashMap;

/// Files of `{{line:FILE}}`, each read once, in the order first named.
#[derive(Default)]
pub struct LineFiles {
    pub files: Vec<Lines>,
    index: HashMap<String, u32>,
}

impl LineFiles {
    fn get(&mut self, path: &str) -> Result<u32, String> {
        if let Some(&n) = self.index.get(path) {
            return Ok(n);
        }
        let text =
            std::fs::read(path).map_err(|e| format!("cannot read {{{{line:{path}}}}}: {e}"))?;
        let lines: Vec<&[u8]> = text
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.is_empty())
            .collect();
        if lines.is_empty() {
            return Err(format!("{{{{line:{path}}}}}: the file has no lines"));
        }
        let n = self.files.len() as u32;
        self.files.push(Lines::new(lines));
        self.index.insert(path.to_string(), n);
        Ok(n)
    }
}

/// The values of one request's `{{...}}`, in order; markers stand for them in the text.
#[derive(Default)]
pub struct Marked {
    pub values: Vec<Value>,
}

const MARK: &str = "__PELT";

impl Marked {
    /// `text` with each `{{...}}` replaced by its marker; `what` names the text in messages.
    pub fn mark(
        &mut self,
        text: &str,
        what: &str,
        files: &mut LineFiles,
    ) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| {
                format!("{what}: an unclosed {{{{ (templates look like {{{{seq}}}})")
            })?;
            let inner = after[..close].trim();
            let value = parse(inner, what, files)?;
            self.push(value, &mut out);
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// A scenario's text, as its parts: each variable is its [`Value::Var`] as it stands
    /// (never a name read back), and the literals are marked as any text is (pelt's own
    /// templates stay in them).
    pub fn mark_parts(
        &mut self,
        text: &pelt_engine::scenario::Text,
        what: &str,
        files: &mut LineFiles,
    ) -> Result<String, String> {
        use pelt_engine::scenario::Part;
        let mut out = String::new();
        for part in &text.0 {
            match part {
                Part::Lit(lit) if lit.contains("{{") => out.push_str(&self.mark(lit, what, files)?),
                Part::Lit(lit) => out.push_str(lit),
                Part::Var(v) => self.push(Value::Var(*v), &mut out),
            }
        }
        Ok(out)
    }

    /// `value`'s marker after `out`.
    fn push(&mut self, value: Value, out: &mut String) {
        out.push_str(&format!("{MARK}{}__", self.values.len()));
        self.values.push(value);
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Cuts an encoded request (whose text was marked) into a template. `body_len`: the
    /// length of its (marked) body, at the end; `added_length`: the encoder added the
    /// `Content-Length` header (the last before the blank line), to be written per request.
    pub fn template(&self, encoded: &[u8], body_len: usize, added_length: bool) -> Template {
        let mut t = Template::default();
        let (head, body) = encoded.split_at(encoded.len() - body_len);
        // The head ends with its blank line, after the Content-Length the encoder added.
        let mut head = &head[..head.len() - 2];
        if added_length {
            let cl = head[..head.len() - 2]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            head = &head[..cl];
        }
        self.cut(&mut t, false, head);
        t.set_has_body(body_len > 0);
        self.cut(&mut t, true, body);
        t
    }

    fn cut(&self, t: &mut Template, body: bool, mut bytes: &[u8]) {
        while let Some(at) = find(bytes, MARK.as_bytes()) {
            t.push_bytes(body, &bytes[..at]);
            let digits = &bytes[at + MARK.len()..];
            let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
            let k: usize = std::str::from_utf8(&digits[..n]).unwrap().parse().unwrap();
            t.push_value(body, self.values[k]);
            bytes = &digits[n + 2..];
        }
        t.push_bytes(body, bytes);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse(inner: &str, what: &str, files: &mut LineFiles) -> Result<Value, String> {
    let inner = inner.trim();
    let (name, args) = inner.split_once(':').unwrap_or((inner, ""));
    let bad_args = || format!("{what}: {{{{{inner}}}}} takes no arguments");
    match name {
        "seq" if args.is_empty() => Ok(Value::Seq),
        "uuid" if args.is_empty() => Ok(Value::Uuid),
        "now_ms" if args.is_empty() => Ok(Value::NowMs),
        "seq" | "uuid" | "now_ms" => Err(bad_args()),
        "rand" => {
            let range = || format!("{what}: {{{{{inner}}}}}: write {{{{rand:A:B}}}} with integers A <= B");
            let (a, b) = args.split_once(':').ok_or_else(range)?;
            let (lo, hi) = (a.trim().parse::<i64>(), b.trim().parse::<i64>());
            match (lo, hi) {
                (Ok(lo), Ok(hi)) if lo <= hi => Ok(Value::Rand { lo, hi }),
                _ => Err(range()),
            }
        }
        "line" if !args.is_empty() => Ok(Value::Line(
            files.get(args).map_err(|e| format!("{what}: {e}"))?,
        )),
        "line" => Err(format!("{what}: {{{{line:FILE}}}} needs a file")),
        _ => Err(format!(
            "{what}: unknown template {{{{{inner}}}}} (known: seq, rand:A:B, uuid, line:FILE, now_ms)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_cuts() {
        let mut files = LineFiles::default();
        let mut m = Marked::default();
        let path = m
            .mark("/u/{{seq}}?r={{ rand:1:6 }}", "URL", &mut files)
            .unwrap();
        assert_eq!(path, "/u/__PELT0__?r=__PELT1__");
        let body = m.mark("{\"id\":\"{{uuid}}\"}", "body", &mut files).unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let encoded = [head.as_bytes(), body.as_bytes()].concat();
        let t = m.template(&encoded, body.len(), true);
        let debug = format!("{t:?}");
        assert!(
            debug.contains("Seq") && debug.contains("Rand") && debug.contains("Uuid"),
            "{debug}"
        );
        assert!(!String::from_utf8_lossy(&encoded).contains("{{"));
    }

    #[test]
    fn scenario_variables_mark_as_their_values() {
        use pelt_engine::scenario::{Part, Text};
        let mut files = LineFiles::default();
        let mut m = Marked::default();
        let text = Text(vec![
            Part::Lit("/cart/".into()),
            Part::Var(1),
            Part::Lit("/{{seq}}".into()),
        ]);
        let url = m.mark_parts(&text, "URL", &mut files).unwrap();
        assert_eq!(url, "/cart/__PELT0__/__PELT1__");
        assert_eq!(m.values, [Value::Var(1), Value::Seq]);
        // A name is never looked up: `{{id}}` in a literal is not a variable.
        let e = m.mark("/{{id}}", "URL", &mut files).unwrap_err();
        assert!(e.contains("unknown template {{id}}"), "{e}");
    }

    #[test]
    fn bad_templates() {
        let mut files = LineFiles::default();
        for (text, want) in [
            ("/{{seq", "an unclosed {{"),
            ("/{{nope}}", "unknown template {{nope}}"),
            ("/{{rand:5:1}}", "integers A <= B"),
            ("/{{rand:x:1}}", "integers A <= B"),
            ("/{{rand}}", "integers A <= B"),
            ("/{{seq:1}}", "takes no arguments"),
            ("/{{line:}}", "needs a file"),
            (
                "/{{line:/nonexistent/pelt-lines}}",
                "cannot read {{line:/nonexistent/pelt-lines}}",
            ),
        ] {
            let e = Marked::default().mark(text, "URL", &mut files).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
            assert!(e.starts_with("URL: "), "{e}");
        }
    }
}

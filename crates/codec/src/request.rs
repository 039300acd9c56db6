//! Building a request once into the exact bytes every connection will write.

use std::fmt;

/// Everything that makes up one distinct request on the wire.
#[derive(Debug, Clone)]
pub struct RequestSpec<'a> {
    /// Method token, e.g. `GET`.
    pub method: &'a str,
    /// Request target (origin form), e.g. `/api?x=1`.
    pub path: &'a str,
    /// The Host header value pelt derives from the URL; a user `Host` header replaces it.
    pub host: &'a str,
    /// User headers in the order given; validated by [`validate_header`].
    pub headers: &'a [(String, String)],
    /// Request body; a `Content-Length` header is added when it is not empty.
    pub body: &'a [u8],
    /// `false` adds `Connection: close` (one request per connection).
    pub keep_alive: bool,
}

/// A user-supplied header or method that cannot be put on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// `Name: value` had no colon.
    MissingColon,
    /// The name before the colon was empty.
    EmptyName,
    /// The name holds a character that is not an RFC 9110 token character.
    BadNameChar(char),
    /// A control character (CR, LF, NUL, or any other but tab) somewhere in the header.
    ForbiddenChar(char),
    /// A user `Content-Length` disagrees with the body's real length.
    ContentLengthMismatch { given: String, actual: usize },
    /// The method is empty or not a token.
    BadMethod,
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::MissingColon => write!(f, "expected 'Name: value' (no colon found)"),
            HeaderError::EmptyName => write!(f, "the header name is empty"),
            HeaderError::BadNameChar(c) => {
                write!(
                    f,
                    "the header name contains {:?}, which is not allowed in a name",
                    c
                )
            }
            HeaderError::ForbiddenChar(c) => {
                write!(
                    f,
                    "the header contains {:?} (control characters such as CR, LF and NUL are \
                     never allowed; tab is)",
                    c
                )
            }
            HeaderError::ContentLengthMismatch { given, actual } => write!(
                f,
                "Content-Length {given} disagrees with the body, which is {actual} bytes"
            ),
            HeaderError::BadMethod => write!(f, "the method must be a non-empty token like GET"),
        }
    }
}

impl std::error::Error for HeaderError {}

/// The length of the HTTP/1.1 request at the start of `bytes`: its head and the body its
/// `Content-Length` says (none without one). `None`: the bytes do not start with a whole
/// request's head.
pub fn request_len(bytes: &[u8]) -> Option<usize> {
    let mut headers = [httparse::EMPTY_HEADER; crate::response::MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head = match req.parse(bytes) {
        Ok(httparse::Status::Complete(head)) => head,
        _ => return None,
    };
    let body = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| {
            std::str::from_utf8(h.value)
                .ok()?
                .trim()
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(0);
    Some(head + body)
}

/// True for RFC 9110 `tchar`.
pub fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 9110 section 5.5: a field value holds no control character but tab (CR, LF and NUL
/// would split or end the header on the wire; the others are invalid there too).
fn check_forbidden(s: &str) -> Result<(), HeaderError> {
    match s.chars().find(|&c| c.is_ascii_control() && c != '\t') {
        Some(c) => Err(HeaderError::ForbiddenChar(c)),
        None => Ok(()),
    }
}

/// Splits and validates a `Name: value` header as typed by a user.
///
/// The value is trimmed of surrounding spaces and tabs. Control characters other than tab
/// (CR, LF, NUL, DEL, ...) are rejected anywhere.
pub fn parse_header(line: &str) -> Result<(String, String), HeaderError> {
    check_forbidden(line)?;
    let (name, value) = line.split_once(':').ok_or(HeaderError::MissingColon)?;
    validate_header(name, value)?;
    Ok((
        name.to_string(),
        value.trim_matches([' ', '\t']).to_string(),
    ))
}

/// Checks a header name and value: the name a non-empty token, neither with a control
/// character other than tab.
pub fn validate_header(name: &str, value: &str) -> Result<(), HeaderError> {
    check_forbidden(name)?;
    check_forbidden(value)?;
    if name.is_empty() {
        return Err(HeaderError::EmptyName);
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !c.is_ascii() || !is_token_char(c as u8))
    {
        return Err(HeaderError::BadNameChar(c));
    }
    Ok(())
}

/// Checks a method: a non-empty token.
pub fn validate_method(method: &str) -> Result<(), HeaderError> {
    if method.is_empty() || !method.bytes().all(is_token_char) {
        return Err(HeaderError::BadMethod);
    }
    Ok(())
}

impl RequestSpec<'_> {
    /// Encodes the request. With no user headers and no body this is byte-identical to what
    /// wrk sends: `GET / HTTP/1.1\r\nHost: host:port\r\n\r\n`.
    ///
    /// Fails if a header or the method is invalid, or a user `Content-Length` disagrees with
    /// the body.
    pub fn encode(&self) -> Result<Vec<u8>, HeaderError> {
        validate_method(self.method)?;
        for (name, value) in self.headers {
            validate_header(name, value)?;
        }
        check_forbidden(self.path)?;
        let has = |n: &str| self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
        // Room for all of it, so a long path or header does not grow (and copy) the buffer.
        let headers: usize = self
            .headers
            .iter()
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum();
        let mut out = Vec::with_capacity(
            96 + self.method.len() + self.path.len() + self.host.len() + headers + self.body.len(),
        );
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        if !has("host") {
            push_header(&mut out, "Host", self.host);
        }
        for (name, value) in self.headers {
            if name.eq_ignore_ascii_case("content-length") && value != &self.body.len().to_string()
            {
                return Err(HeaderError::ContentLengthMismatch {
                    given: value.clone(),
                    actual: self.body.len(),
                });
            }
            push_header(&mut out, name, value);
        }
        if !self.keep_alive && !has("connection") {
            push_header(&mut out, "Connection", "close");
        }
        if !self.body.is_empty() && !has("content-length") {
            push_header(&mut out, "Content-Length", &self.body.len().to_string());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(self.body);
        Ok(out)
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(headers: &'a [(String, String)], body: &'a [u8]) -> RequestSpec<'a> {
        RequestSpec {
            method: "GET",
            path: "/",
            host: "127.0.0.1:8080",
            headers,
            body,
            keep_alive: true,
        }
    }

    #[test]
    fn default_request_is_byte_identical_to_wrk() {
        let bytes = spec(&[], b"").encode().unwrap();
        assert_eq!(bytes, b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
    }

    #[test]
    fn body_gets_content_length_and_headers_keep_order() {
        let h = vec![
            ("Content-Type".to_string(), "application/json".to_string()),
            ("X-A".to_string(), "1".to_string()),
        ];
        let mut s = spec(&h, br#"{"a":1}"#);
        s.method = "POST";
        s.path = "/api";
        let bytes = s.encode().unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /api HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n\
             X-A: 1\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
        );
    }

    #[test]
    fn no_keepalive_adds_connection_close_and_user_host_wins() {
        let h = vec![("host".to_string(), "example.test".to_string())];
        let mut s = spec(&h, b"");
        s.keep_alive = false;
        let text = String::from_utf8(s.encode().unwrap()).unwrap();
        assert_eq!(
            text,
            "GET / HTTP/1.1\r\nhost: example.test\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn user_content_length_must_match_the_body() {
        let ok = vec![("Content-Length".to_string(), "3".to_string())];
        assert!(spec(&ok, b"abc").encode().is_ok());
        let bad = vec![("Content-Length".to_string(), "4".to_string())];
        assert_eq!(
            spec(&bad, b"abc").encode(),
            Err(HeaderError::ContentLengthMismatch {
                given: "4".into(),
                actual: 3
            })
        );
    }

    #[test]
    fn header_lines_are_validated() {
        assert_eq!(
            parse_header("X-A:  b c \t"),
            Ok(("X-A".into(), "b c".into()))
        );
        assert_eq!(parse_header("X-Empty:"), Ok(("X-Empty".into(), "".into())));
        assert_eq!(parse_header("NoColon"), Err(HeaderError::MissingColon));
        assert_eq!(parse_header(": v"), Err(HeaderError::EmptyName));
        assert_eq!(
            parse_header("Bad Name: v"),
            Err(HeaderError::BadNameChar(' '))
        );
        assert_eq!(
            parse_header("X: a\r\nEvil: 1"),
            Err(HeaderError::ForbiddenChar('\r'))
        );
        assert_eq!(
            parse_header("X: a\nb"),
            Err(HeaderError::ForbiddenChar('\n'))
        );
        assert_eq!(
            parse_header("X: a\0"),
            Err(HeaderError::ForbiddenChar('\0'))
        );
        assert_eq!(parse_header("Ünï: v"), Err(HeaderError::BadNameChar('Ü')));
        assert_eq!(
            parse_header("X: a\x01b"),
            Err(HeaderError::ForbiddenChar('\x01'))
        );
        assert_eq!(
            parse_header("X: a\x7f"),
            Err(HeaderError::ForbiddenChar('\x7f'))
        );
        assert_eq!(parse_header("X: a\tb"), Ok(("X".into(), "a\tb".into())));
    }

    #[test]
    fn methods_must_be_tokens() {
        assert!(validate_method("PATCH").is_ok());
        assert_eq!(validate_method(""), Err(HeaderError::BadMethod));
        assert_eq!(validate_method("GE T"), Err(HeaderError::BadMethod));
    }
}

//! Error kinds a request can end in, and their counts with one example message each.

use std::collections::BTreeMap;
use std::fmt;

/// Why a request failed. Each kind is counted separately and keeps its first message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The server refused the connection (nothing listening on the port).
    Refused,
    /// Connecting failed for another reason (unreachable network, ...).
    Connect,
    /// The connection was not established within --connect-timeout.
    ConnectTimeout,
    /// No local address or port was free (EADDRNOTAVAIL): ephemeral ports exhausted.
    AddrNotAvailable,
    /// Too many open files (EMFILE/ENFILE).
    FdLimit,
    /// The peer reset the connection (RST).
    Reset,
    /// The peer closed the connection before any byte of the response.
    Closed,
    /// The peer closed the connection in the middle of a response.
    Incomplete,
    /// The whole response did not arrive within --timeout.
    Timeout,
    /// The bytes received were not an HTTP response.
    NotHttp,
    /// Malformed status line.
    BadStatus,
    /// Malformed header line.
    BadHeader,
    /// The response head exceeded the limit.
    HeadersTooLarge,
    /// Invalid Content-Length or chunked encoding.
    BadFraming,
    /// A protocol violation: an unasked-for 101, or bytes after a response nobody asked for.
    Protocol,
    /// TLS failed: the certificate did not verify (the message says why), the handshake or a
    /// record was bad, or the server closed without close_notify inside a close-delimited body.
    Tls,
    /// HTTP/2: the server reset the stream (RST_STREAM; the message names its error code).
    StreamReset,
    /// WebSocket: the server refused or botched the upgrade (another status, no `Upgrade:
    /// websocket`, a wrong accept key, a subprotocol or extension not asked for).
    Upgrade,
    /// WebSocket: a frame the RFC says to fail on (masked, reserved bits, an unknown opcode, a
    /// misused control or continuation frame, a close code no one may send).
    WsProtocol,
    /// WebSocket: a message longer than `--ws-max-message`.
    WsTooBig,
    /// WebSocket: a text message or close reason that is not UTF-8.
    WsUtf8,
    /// A script's `request()`, `response()` or `delay()` raised an error (the message names
    /// its file and line).
    Script,
    /// Any other socket error.
    Io,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 23] = [
        ErrorKind::Refused,
        ErrorKind::Connect,
        ErrorKind::ConnectTimeout,
        ErrorKind::AddrNotAvailable,
        ErrorKind::FdLimit,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Incomplete,
        ErrorKind::Timeout,
        ErrorKind::NotHttp,
        ErrorKind::BadStatus,
        ErrorKind::BadHeader,
        ErrorKind::HeadersTooLarge,
        ErrorKind::BadFraming,
        ErrorKind::Protocol,
        ErrorKind::Tls,
        ErrorKind::StreamReset,
        ErrorKind::Upgrade,
        ErrorKind::WsProtocol,
        ErrorKind::WsTooBig,
        ErrorKind::WsUtf8,
        ErrorKind::Script,
        ErrorKind::Io,
    ];

    /// The stable snake_case name used in JSON and the summary.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Connect => "connect",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::AddrNotAvailable => "addr_not_available",
            ErrorKind::FdLimit => "fd_limit",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Incomplete => "incomplete",
            ErrorKind::Timeout => "timeout",
            ErrorKind::NotHttp => "not_http",
            ErrorKind::BadStatus => "bad_status",
            ErrorKind::BadHeader => "bad_header",
            ErrorKind::HeadersTooLarge => "headers_too_large",
            ErrorKind::BadFraming => "bad_framing",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Tls => "tls",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::Upgrade => "upgrade",
            ErrorKind::WsProtocol => "ws_protocol",
            ErrorKind::WsTooBig => "ws_too_big",
            ErrorKind::WsUtf8 => "ws_utf8",
            ErrorKind::Script => "script",
            ErrorKind::Io => "io",
        }
    }

    /// What a user can do about it, for the kinds where there is something to say.
    pub fn hint(self) -> Option<&'static str> {
        match self {
            ErrorKind::Refused => Some("is the server running and listening on that port?"),
            ErrorKind::AddrNotAvailable => {
                Some("local ports exhausted: use keep-alive, or widen net.ipv4.ip_local_port_range")
            }
            ErrorKind::FdLimit => Some("too many open files: raise the limit with ulimit -n"),
            ErrorKind::Timeout => Some("the server is slower than --timeout allows"),
            ErrorKind::NotHttp => Some("is the URL's scheme and port right?"),
            ErrorKind::Tls => Some(
                "for a self-signed or private CA certificate pass it with --cacert \
                 (or, knowingly, --insecure)",
            ),
            ErrorKind::StreamReset => Some(
                "REFUSED_STREAM or ENHANCE_YOUR_CALM: the server limits streams or requests \
                 per connection; try fewer --streams",
            ),
            ErrorKind::Upgrade => Some("is it a WebSocket endpoint, and the path right?"),
            ErrorKind::Script => Some("the script raised an error: the message names its line"),
            _ => None,
        }
    }

    pub(crate) fn index(self) -> usize {
        Self::ALL.iter().position(|&k| k == self).unwrap_or(0)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Counts per [`ErrorKind`], with the first message of each kind.
#[derive(Debug, Clone, Default)]
pub struct ErrorCounts {
    counts: [u64; ErrorKind::ALL.len()],
    first: [Option<String>; ErrorKind::ALL.len()],
}

impl ErrorCounts {
    /// Counts one error; `message` is called only for the first error of its kind.
    #[inline]
    pub fn record(&mut self, kind: ErrorKind, message: impl FnOnce() -> String) {
        let i = kind.index();
        self.counts[i] += 1;
        if self.first[i].is_none() {
            self.first[i] = Some(message());
        }
    }

    pub fn count(&self, kind: ErrorKind) -> u64 {
        self.counts[kind.index()]
    }

    pub fn first_message(&self, kind: ErrorKind) -> Option<&str> {
        self.first[kind.index()].as_deref()
    }

    /// All errors counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The kinds seen, in report order, with count and first message.
    pub fn iter(&self) -> impl Iterator<Item = (ErrorKind, u64, &str)> + '_ {
        ErrorKind::ALL.iter().filter_map(|&k| {
            let n = self.count(k);
            (n > 0).then(|| (k, n, self.first_message(k).unwrap_or("")))
        })
    }

    /// Adds `other`'s counts; keeps this side's first message where both have one.
    pub fn merge(&mut self, other: &ErrorCounts) {
        for i in 0..self.counts.len() {
            self.counts[i] += other.counts[i];
            if self.first[i].is_none() {
                self.first[i].clone_from(&other.first[i]);
            }
        }
    }
}

/// Errors by the protocol's own code: for each kind, the codes its errors came with (the
/// HTTP/3 or HTTP/2 code a server reset a stream with, the code a QUIC connection ended
/// with) and how many. Only errors that carry a code are here; a handful of codes a run, so a
/// list searched in place (an error with a code seen before allocates nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCodes {
    by: Vec<(ErrorKind, String, u64)>,
}

impl ErrorCodes {
    /// Counts `n` errors of `kind` that came with `code`.
    #[inline]
    pub fn record(&mut self, kind: ErrorKind, code: &str, n: u64) {
        match self.by.iter_mut().find(|(k, c, _)| *k == kind && c == code) {
            Some(e) => e.2 += n,
            None => self.by.push((kind, code.to_string(), n)),
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &ErrorCodes) {
        for (k, c, n) in &other.by {
            self.record(*k, c, *n);
        }
    }

    /// The errors of `kind` counted with `code`.
    pub fn count(&self, kind: ErrorKind, code: &str) -> u64 {
        let same = |(k, c, _): &&(ErrorKind, String, u64)| *k == kind && c == code;
        self.by.iter().find(same).map_or(0, |e| e.2)
    }

    /// What these counts added to `before` (an earlier look at the same counts), by kind's
    /// name, then code.
    pub fn since(&self, before: &ErrorCodes) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut added: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (k, c, n) in &self.by {
            let d = n - before.count(*k, c);
            if d > 0 {
                added
                    .entry(k.name().to_string())
                    .or_default()
                    .insert(c.clone(), d);
            }
        }
        added
    }

    /// By kind's name, then code (empty: no error carried a code).
    pub fn to_map(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut all: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (k, c, n) in &self.by {
            *all.entry(k.name().to_string())
                .or_default()
                .entry(c.clone())
                .or_default() += n;
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_snake_case() {
        let mut names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        assert!(names.iter().all(|n| n
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }

    #[test]
    fn first_message_is_built_once() {
        let mut e = ErrorCounts::default();
        let mut built = 0;
        for _ in 0..3 {
            e.record(ErrorKind::Timeout, || {
                built += 1;
                "t".into()
            });
        }
        assert_eq!((e.count(ErrorKind::Timeout), built), (3, 1));
        let mut c = ErrorCodes::default();
        c.record(ErrorKind::StreamReset, "H3_REQUEST_REJECTED", 1);
        c.record(ErrorKind::StreamReset, "H3_REQUEST_REJECTED", 2);
        c.record(ErrorKind::Closed, "H3_EXCESSIVE_LOAD", 1);
        let mut d = ErrorCodes::default();
        d.record(ErrorKind::StreamReset, "H3_REQUEST_REJECTED", 4);
        d.record(ErrorKind::StreamReset, "H3_INTERNAL_ERROR", 1);
        c.merge(&d);
        let m = c.to_map();
        assert_eq!(m["stream_reset"]["H3_REQUEST_REJECTED"], 7);
        assert_eq!(m["stream_reset"]["H3_INTERNAL_ERROR"], 1);
        assert_eq!(m["closed"]["H3_EXCESSIVE_LOAD"], 1);
        let added = c.since(&d);
        assert_eq!(added["stream_reset"]["H3_REQUEST_REJECTED"], 3);
        assert!(!added["stream_reset"].contains_key("H3_INTERNAL_ERROR"));
        assert_eq!(added["closed"]["H3_EXCESSIVE_LOAD"], 1);
        assert_eq!(
            e.iter().collect::<Vec<_>>(),
            vec![(ErrorKind::Timeout, 3, "t")]
        );
    }
}

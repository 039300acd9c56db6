//! Connection logic every backend shares: what response bytes and socket errors mean for the
//! request in flight, and which error kind they are counted under.

use pelt_codec::{ParseError, Parsed, Response, ResponseParser};
use pelt_stats::ErrorKind;
use rustix::io::Errno;

/// What the bytes of one read meant for the request in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// The response is not complete yet; every byte was consumed.
    Pending,
    /// The response completed; `stray` bytes followed it in the same read.
    Complete { response: Response, stray: usize },
    /// The bytes were not a valid response.
    Failed(ParseError),
}

/// Feeds one read's bytes to the parser of a connection with one request in flight.
#[inline]
pub(crate) fn read_bytes(parser: &mut ResponseParser, data: &[u8]) -> ReadOutcome {
    match parser.parse(data) {
        Ok((_, Parsed::Partial)) => ReadOutcome::Pending,
        Ok((n, Parsed::Complete(response))) => ReadOutcome::Complete {
            response,
            stray: data.len() - n,
        },
        Err(e) => ReadOutcome::Failed(e),
    }
}

/// The peer closed a connection with a request in flight: a close-delimited response
/// completes, anything else is an error of the returned kind.
pub(crate) fn read_eof(parser: &mut ResponseParser) -> Result<Response, (ErrorKind, String)> {
    match parser.finish() {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err((
            ErrorKind::Closed,
            "the server closed the connection before sending any response byte".to_string(),
        )),
        Err(e) => Err((parse_error_kind(&e), e.to_string())),
    }
}

/// The error kind a response parse error is counted under.
pub(crate) fn parse_error_kind(e: &ParseError) -> ErrorKind {
    match e {
        ParseError::NotHttp { .. } => ErrorKind::NotHttp,
        ParseError::BadStatusLine => ErrorKind::BadStatus,
        ParseError::BadHeader => ErrorKind::BadHeader,
        ParseError::HeadersTooLarge => ErrorKind::HeadersTooLarge,
        ParseError::BadContentLength | ParseError::BadChunk => ErrorKind::BadFraming,
        ParseError::UnexpectedUpgrade => ErrorKind::Protocol,
        ParseError::Incomplete => ErrorKind::Incomplete,
    }
}

/// The error kind a socket error is counted under; `connecting` for errors before the
/// connection was established.
pub(crate) fn errno_kind(e: Errno, connecting: bool) -> ErrorKind {
    match e {
        Errno::CONNREFUSED => ErrorKind::Refused,
        Errno::ADDRNOTAVAIL => ErrorKind::AddrNotAvailable,
        Errno::MFILE | Errno::NFILE => ErrorKind::FdLimit,
        Errno::TIMEDOUT if connecting => ErrorKind::ConnectTimeout,
        Errno::CONNRESET => ErrorKind::Reset,
        Errno::PIPE => ErrorKind::Closed,
        _ if connecting => ErrorKind::Connect,
        _ => ErrorKind::Io,
    }
}

/// Whether a failed request's connection should wait before connecting again.
pub(crate) fn needs_backoff(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Refused
            | ErrorKind::Connect
            | ErrorKind::ConnectTimeout
            | ErrorKind::AddrNotAvailable
            | ErrorKind::FdLimit
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pelt_codec::ParserOptions;

    #[test]
    fn stray_bytes_after_a_response_are_reported() {
        let mut p = ResponseParser::new(ParserOptions::default());
        let out = read_bytes(&mut p, b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxJUNK");
        assert!(
            matches!(out, ReadOutcome::Complete { stray: 4, .. }),
            "{out:?}"
        );
    }

    #[test]
    fn eof_outcomes() {
        let mut p = ResponseParser::new(ParserOptions::default());
        assert_eq!(read_eof(&mut p).unwrap_err().0, ErrorKind::Closed);
        let mut p = ResponseParser::new(ParserOptions::default());
        assert_eq!(
            read_bytes(&mut p, b"HTTP/1.1 200 OK\r\n\r\nbody"),
            ReadOutcome::Pending
        );
        assert_eq!(read_eof(&mut p).unwrap().status, 200);
        let mut p = ResponseParser::new(ParserOptions::default());
        let _ = read_bytes(&mut p, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nbody");
        assert_eq!(read_eof(&mut p).unwrap_err().0, ErrorKind::Incomplete);
    }

    #[test]
    fn errno_kinds() {
        assert_eq!(errno_kind(Errno::CONNREFUSED, true), ErrorKind::Refused);
        assert_eq!(errno_kind(Errno::TIMEDOUT, true), ErrorKind::ConnectTimeout);
        assert_eq!(errno_kind(Errno::HOSTUNREACH, true), ErrorKind::Connect);
        assert_eq!(errno_kind(Errno::CONNRESET, false), ErrorKind::Reset);
        assert_eq!(errno_kind(Errno::PIPE, false), ErrorKind::Closed);
        assert!(needs_backoff(ErrorKind::Refused) && !needs_backoff(ErrorKind::Reset));
    }
}

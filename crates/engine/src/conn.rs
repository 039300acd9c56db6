//! Connection logic every backend shares: what response bytes and socket errors mean for the
//! request in flight, and which error kind they are counted under.

use pelt_codec::{ParseError, Response, ResponseParser};
use pelt_stats::ErrorKind;
use rustix::io::Errno;

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
            // A certificate that failed once fails again: no tight reconnect loop.
            | ErrorKind::Tls
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pelt_codec::ParserOptions;

    #[test]
    fn eof_outcomes() {
        let mut p = ResponseParser::new(ParserOptions::default());
        assert_eq!(read_eof(&mut p).unwrap_err().0, ErrorKind::Closed);
        let mut p = ResponseParser::new(ParserOptions::default());
        assert_eq!(
            p.parse(b"HTTP/1.1 200 OK\r\n\r\nbody").unwrap().1,
            pelt_codec::Parsed::Partial
        );
        assert_eq!(read_eof(&mut p).unwrap().status, 200);
        let mut p = ResponseParser::new(ParserOptions::default());
        let _ = p.parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nbody");
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

//! pelt-codec: the HTTP/1.1 and HTTP/2 wire formats as pelt speaks them, with no I/O.
//!
//! Three parts:
//! - [`request`] builds a request once into immutable bytes (`GET / HTTP/1.1\r\nHost: ...`),
//!   validating every user-supplied header so CR, LF or NUL can never be spliced into the wire.
//! - [`response`] is an incremental response parser: feed it whatever a socket read returned and
//!   it reports how many bytes it consumed and whether a response completed. Framing follows
//!   RFC 9112 section 6.3 (Content-Length, chunked with extensions and trailers, close-delimited
//!   bodies, no body for HEAD / 1xx / 204 / 304, interim 1xx responses). Bodies are skipped by
//!   length, never buffered; the only buffer is a bounded one for a head split across reads.
//! - [`h2`] is HTTP/2's client side: a stateless request header block encoded once, and a
//!   [`h2::Session`] that turns the server's frames into events and owes it its acknowledgements.
//! - [`h3`] is HTTP/3's framing and QPACK (static table only) on a QUIC connection's streams:
//!   a request's field section encoded once, and readers of a response stream and of the
//!   server's control stream.
//! - [`sse`] parses a `text/event-stream` body into its events, incrementally, allocating
//!   nothing per event and keeping a bounded part of any line.
//! - [`grpc`] is gRPC's framing over HTTP/2: length-prefixed messages written and read from
//!   DATA bytes split anywhere, and the status fields (`grpc-status`, `grpc-message`,
//!   `grpc-timeout`).
//! - [`ws`] is WebSocket's client side: the upgrade request and its answer's check, masked
//!   frames, and a decoder of the server's frames that keeps at most a header, a control
//!   payload and a split character.
//!
//! ```
//! use pelt_codec::response::{Parsed, ResponseParser};
//! let mut p = ResponseParser::new(Default::default());
//! let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
//! let (used, parsed) = p.parse(wire).unwrap();
//! assert_eq!(used, wire.len());
//! assert!(matches!(parsed, Parsed::Complete(r) if r.status == 200 && r.keep_alive));
//! ```
//!
//! Contracts: the parser never panics on any input, never consumes more bytes than it is given,
//! and does work linear in the bytes it is fed (a head split across reads is searched for its end
//! only in the new bytes). Nothing here reads a clock or touches a socket.

pub mod grpc;
pub mod h2;
pub mod h3;
pub mod hpack;
pub mod request;
pub mod response;
pub mod sse;
pub mod ws;

pub use request::{HeaderError, RequestSpec};
pub use response::{ParseError, Parsed, ParserOptions, Response, ResponseParser};

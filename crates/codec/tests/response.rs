//! Table, property and conformance tests of the response parser's public contract.

use pelt_codec::response::{ParseError, Parsed, ParserOptions, Response, ResponseParser};
use proptest::prelude::*;

/// What a connection saw: the complete responses, then either an error, a clean close, or
/// bytes left mid-message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    responses: Vec<Response>,
    error: Option<ParseError>,
    consumed: usize,
}

/// Feeds `wire` in pieces cut at `cuts`, then signals EOF if `eof`.
fn run(wire: &[u8], cuts: &[usize], head: bool, eof: bool) -> Outcome {
    let mut p = ResponseParser::new(ParserOptions::default());
    p.set_head_request(head);
    let mut out = Outcome {
        responses: vec![],
        error: None,
        consumed: 0,
    };
    let mut bounds: Vec<usize> = cuts.iter().copied().filter(|&c| c < wire.len()).collect();
    bounds.push(wire.len());
    bounds.sort_unstable();
    let mut start = 0;
    // The step budget: every call consumes a byte or completes a response, so the calls
    // never outnumber the bytes plus the pieces.
    let budget = wire.len() + bounds.len() + 1;
    let mut steps = 0;
    for end in bounds {
        let mut piece = &wire[start..end];
        start = end;
        while !piece.is_empty() {
            steps += 1;
            assert!(steps <= budget, "more parse calls than the step budget");
            match p.parse(piece) {
                Ok((n, parsed)) => {
                    assert!(n <= piece.len(), "consumed more than given");
                    out.consumed += n;
                    piece = &piece[n..];
                    match parsed {
                        Parsed::Complete(r) => {
                            out.responses.push(r);
                            p.set_head_request(head);
                        }
                        Parsed::Partial => assert!(piece.is_empty(), "partial left bytes"),
                    }
                }
                Err(e) => {
                    // Bytes consumed before an error are not part of the contract.
                    out.error = Some(e);
                    out.consumed = 0;
                    return out;
                }
            }
        }
    }
    if eof {
        match p.finish() {
            Ok(Some(r)) => out.responses.push(r),
            Ok(None) => {}
            Err(e) => out.error = Some(e),
        }
    }
    out
}

fn one(wire: &str) -> Result<Response, ParseError> {
    let o = run(wire.as_bytes(), &[], false, true);
    match (o.error, o.responses.as_slice()) {
        (Some(e), _) => Err(e),
        (None, [r]) => Ok(*r),
        (None, rs) => panic!("expected one response, got {rs:?}"),
    }
}

fn ok(status: u16, keep_alive: bool, body_bytes: u64) -> Result<Response, ParseError> {
    Ok(Response {
        status,
        keep_alive,
        body_bytes,
        interim: 0,
        event_stream: false,
    })
}

#[test]
fn content_length_bodies() {
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
        ok(200, true, 5)
    );
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ok(200, true, 0)
    );
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc"),
        ok(200, true, 3)
    );
    assert_eq!(
        one("HTTP/1.1 200 OK\r\ncontent-length:  7 \r\n\r\n1234567"),
        ok(200, true, 7)
    );
}

#[test]
fn bad_content_lengths_are_bad_framing() {
    for v in [
        "abc",
        "-1",
        "+5",
        "",
        "123456789012345678901234567890",
        "1 2",
        "0x10",
    ] {
        let wire = format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\n");
        assert_eq!(one(&wire), Err(ParseError::BadContentLength), "value {v:?}");
    }
    let two = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd";
    assert_eq!(one(two), Err(ParseError::BadContentLength));
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc"),
        Err(ParseError::BadContentLength)
    );
}

#[test]
fn truncated_body_is_incomplete_at_eof() {
    let wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}",
        "x".repeat(40)
    );
    let o = run(wire.as_bytes(), &[], false, true);
    assert_eq!(o.error, Some(ParseError::Incomplete));
    assert_eq!(o.consumed, wire.len());
    // Without EOF it is simply waiting.
    let o = run(wire.as_bytes(), &[], false, false);
    assert_eq!((o.error, o.responses.len()), (None, 0));
}

#[test]
fn close_delimited_bodies_complete_at_eof_and_are_not_reused() {
    assert_eq!(
        one("HTTP/1.1 200 OK\r\n\r\nuntil close"),
        ok(200, false, 11)
    );
    assert_eq!(
        one("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nbody"),
        ok(200, false, 4)
    );
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzzzz"),
        ok(200, false, 4)
    );
}

#[test]
fn keep_alive_rules() {
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"),
        ok(200, false, 0)
    );
    assert_eq!(
        one("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ok(200, false, 0)
    );
    assert_eq!(
        one("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"),
        ok(200, true, 0)
    );
    let both = "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(one(both), ok(200, false, 0));
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\nContent-Length: 0\r\n\r\n"),
        ok(200, false, 0)
    );
}

#[test]
fn chunked_bodies_with_extensions_and_trailers() {
    let wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;a=b;c\r\n world\r\n0\r\n\r\n";
    assert_eq!(one(wire), ok(200, true, 11));
    let ext = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA {}\r\n0123456789\r\n0\r\nX-T: 1\r\nX-U: {}\r\n\r\n",
        ";e=1".repeat(500),
        "v".repeat(5000)
    );
    assert_eq!(one(&ext), ok(200, true, 10));
    let upper = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\nFf\r\n";
    let wire = format!("{upper}{}\r\n0\r\n\r\n", "y".repeat(255));
    assert_eq!(one(&wire), ok(200, true, 255));
}

#[test]
fn chunked_errors() {
    let base = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for bad in [
        "ffffffffffffffffffff\r\n",
        "zz\r\n",
        "\r\n",
        "5\r\nhelloXX",
        "5\r\nhello\n0\r\n\r\n",
        "5 x\r\n",
    ] {
        assert_eq!(
            one(&format!("{base}{bad}")),
            Err(ParseError::BadChunk),
            "chunk {bad:?}"
        );
    }
    assert_eq!(
        one(&format!("{base}5\r\nhello\r\n")),
        Err(ParseError::Incomplete)
    );
    let huge_trailer = format!("{base}0\r\nX: {}\r\n\r\n", "t".repeat(70_000));
    assert_eq!(one(&huge_trailer), Err(ParseError::HeadersTooLarge));
}

#[test]
fn chunked_and_content_length_is_chunked_and_closes() {
    let wire = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
    assert_eq!(one(wire), ok(200, false, 2));
}

#[test]
fn no_body_statuses_and_head() {
    assert_eq!(
        one("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"),
        ok(204, true, 0)
    );
    assert_eq!(
        one("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ok(304, true, 0)
    );
    let o = run(
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n",
        &[],
        true,
        false,
    );
    assert_eq!(
        o.responses,
        vec![Response {
            status: 200,
            keep_alive: true,
            body_bytes: 0,
            interim: 0,
            event_stream: false,
        }]
    );
}

#[test]
fn interim_responses_precede_the_final_one() {
    let r = one("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").unwrap();
    assert_eq!((r.status, r.interim, r.body_bytes), (200, 3, 2));
    assert_eq!(
        one("HTTP/1.1 100 Continue\r\n\r\n"),
        Err(ParseError::Incomplete)
    );
    assert_eq!(
        one("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
        Err(ParseError::UnexpectedUpgrade)
    );
}

#[test]
fn bad_status_lines_and_other_protocols() {
    for line in [
        "HTTP/1.1 001 OK",
        "HTTP/1.1 1 OK",
        "HTTP/1.1 2000 OK",
        "HTTP/5.6 200 OK",
        "HTTP/1.1 200OK",
    ] {
        let wire = format!("{line}\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(one(&wire), Err(ParseError::BadStatusLine), "line {line:?}");
    }
    assert!(matches!(
        one("HEAT/1.1 200 OK\r\n\r\n"),
        Err(ParseError::NotHttp { .. })
    ));
    assert!(matches!(
        one("SSH-2.0-OpenSSH_9.2\r\n"),
        Err(ParseError::NotHttp { hint }) if hint.contains("SSH")
    ));
    let tls = run(b"\x16\x03\x01\x00\xa5\x01\x00", &[], false, true);
    assert!(matches!(tls.error, Some(ParseError::NotHttp { hint }) if hint.contains("TLS")));
}

#[test]
fn header_limits_and_bad_headers() {
    let big = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "a".repeat(500_000));
    assert_eq!(one(&big), Err(ParseError::HeadersTooLarge));
    // A head that never ends trips the limit even when fed a byte at a time.
    let endless: String = std::iter::once("HTTP/1.1 200 OK\r\n".to_string())
        .chain((0..10_000).map(|i| format!("X-{i}: v\r\n")))
        .collect();
    let cuts: Vec<usize> = (1..endless.len()).collect();
    let o = run(endless.as_bytes(), &cuts, false, false);
    assert_eq!(o.error, Some(ParseError::HeadersTooLarge));
    let many: String = (0..150).map(|i| format!("X-{i}: v\r\n")).collect();
    assert_eq!(
        one(&format!("HTTP/1.1 200 OK\r\n{many}\r\n")),
        Err(ParseError::HeadersTooLarge)
    );
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n"),
        Err(ParseError::BadHeader)
    );
    assert_eq!(
        one("HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n"),
        Err(ParseError::BadHeader)
    );
}

#[test]
fn pipelined_responses_parse_back_to_back() {
    let one_resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let chunked = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n";
    let wire = format!("{one_resp}{chunked}{one_resp}HTTP/1.1 204 No Content\r\n\r\n");
    let o = run(wire.as_bytes(), &[], false, true);
    let statuses: Vec<u16> = o.responses.iter().map(|r| r.status).collect();
    assert_eq!(
        (statuses, o.error, o.consumed),
        (vec![200, 201, 200, 204], None, wire.len())
    );
}

#[test]
fn stray_bytes_after_a_response_are_left_unconsumed() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE";
    let mut p = ResponseParser::new(ParserOptions::default());
    let (n, parsed) = p.parse(wire).unwrap();
    assert_eq!(n, wire.len() - 7);
    assert!(matches!(parsed, Parsed::Complete(_)));
    assert!(p.is_idle());
}

fn corpus_of_valid_responses() -> Vec<&'static str> {
    vec![
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n3\r\nabc\r\n0\r\nT: v\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nnah",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.0 200 OK\r\n\r\nclose delimited body",
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\ntruncat",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\nContent-Length: 1\n\nx",
    ]
}

proptest! {
    /// A response parses to the same events and byte counts however its bytes are split.
    #[test]
    fn splitting_never_changes_the_outcome(
        idx in 0usize..8,
        cuts in proptest::collection::vec(0usize..200, 0..12),
    ) {
        let wire = corpus_of_valid_responses()[idx].as_bytes();
        let whole = run(wire, &[], false, true);
        let split = run(wire, &cuts, false, true);
        prop_assert_eq!(whole, split);
    }

    /// Arbitrary bytes never panic, and consumption never exceeds the input.
    #[test]
    fn arbitrary_bytes_never_panic(
        prefix in 0usize..8,
        noise in proptest::collection::vec(any::<u8>(), 0..300),
        cuts in proptest::collection::vec(0usize..400, 0..8),
    ) {
        let mut wire = corpus_of_valid_responses()[prefix].as_bytes()[..12].to_vec();
        wire.extend_from_slice(&noise);
        let o = run(&wire, &cuts, false, true);
        prop_assert!(o.consumed <= wire.len());
    }
}

#[test]
fn one_byte_at_a_time_equals_all_at_once() {
    for wire in corpus_of_valid_responses() {
        let cuts: Vec<usize> = (1..wire.len()).collect();
        assert_eq!(
            run(wire.as_bytes(), &[], false, true),
            run(wire.as_bytes(), &cuts, false, true),
            "{wire:?}"
        );
    }
}

/// Found by the fuzzer (fuzz/, target `response`): a head that never ends, with a bad byte in
/// a header, was a bad header when read at once but incomplete when read a byte at a time.
#[test]
fn regression_bad_header_in_an_unfinished_head_is_judged_the_same_however_split() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length:\xff\xff\xff\xff\xff\xff\xff\x00llo";
    let cuts: Vec<usize> = (1..wire.len()).collect();
    let whole = run(wire, &[], false, true);
    assert_eq!(whole, run(wire, &cuts, false, true));
    assert_eq!(whole.error, Some(ParseError::BadHeader));
}

/// Found by the fuzzer (target `chunked`): the not-HTTP hint for bytes after a response
/// depended on how many of them arrived in the first read.
#[test]
fn regression_not_http_hint_is_the_same_however_split() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n\x00\x00\x00\x00\x00\x00,";
    let cuts: Vec<usize> = (1..wire.len()).collect();
    let whole = run(wire, &[], false, true);
    assert_eq!(whole, run(wire, &cuts, false, true));
    assert!(matches!(whole.error, Some(ParseError::NotHttp { .. })));
    for short in [&b"\x00"[..], b"SS", b"\x16\x03"] {
        // Fewer than five bytes, then the close: judged on what arrived.
        let o = run(short, &[], false, true);
        assert!(
            matches!(o.error, Some(ParseError::NotHttp { .. })),
            "{short:?}"
        );
    }
}

#[test]
fn a_complete_response_reads_back_as_its_final_head_and_unframed_body() {
    use pelt_codec::response::{read_complete, Fields};
    let (mut headers, mut body) = (Fields::default(), Vec::new());
    let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nSet-Cookie: a=1\r\nTransfer-Encoding: chunked\r\nX-Id:  7 \r\n\r\n4;ext=1\r\n{\"id\r\n3\r\n\":7\r\n1\r\n}\r\n0\r\nTrailer: x\r\n\r\n";
    assert_eq!(read_complete(raw, &mut headers, &mut body), Some(201));
    assert_eq!(body, br#"{"id":7}"#);
    assert_eq!(
        headers.as_slice(),
        [
            ("set-cookie", "a=1"),
            ("transfer-encoding", "chunked"),
            ("x-id", "7")
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    // Content-Length and close-delimited bodies are the bytes after the head; the buffers are
    // reused.
    assert_eq!(
        read_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            &mut headers,
            &mut body
        ),
        Some(200)
    );
    assert_eq!(
        (headers.as_slice(), body.as_slice()),
        (
            &[("content-length".to_string(), "2".to_string())][..],
            &b"ok"[..]
        )
    );
    // Only the first bytes kept (a cap): what there is of the body.
    let cut = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nabcd";
    assert_eq!(read_complete(cut, &mut headers, &mut body), Some(200));
    assert_eq!(body, b"abcd");
    assert_eq!(
        read_complete(b"HTTP/1.1 200 OK\r\nX: y", &mut headers, &mut body),
        None
    );
    assert!(headers.as_slice().is_empty() && body.is_empty());
}

proptest::proptest! {
    /// Whatever the bytes, reading them back never panics.
    #[test]
    fn reading_any_bytes_back_never_panics(raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let (mut headers, mut body) = (pelt_codec::response::Fields::default(), Vec::new());
        let _ = pelt_codec::response::read_complete(&raw, &mut headers, &mut body);
    }
}

/// The body bytes `parse_with` hands out, with the wire cut at every point: (body, whether the
/// head said text/event-stream).
fn body_of(wire: &[u8], cut: usize) -> (Vec<u8>, bool) {
    let mut p = ResponseParser::new(ParserOptions::default());
    let mut body = Vec::new();
    let mut event_stream = false;
    for mut piece in [&wire[..cut], &wire[cut..]] {
        while !piece.is_empty() {
            let (n, parsed) = p
                .parse_with(piece, &mut |b, _| body.extend_from_slice(b))
                .unwrap();
            event_stream |= p.event_stream();
            piece = &piece[n..];
            if let Parsed::Complete(r) = parsed {
                assert_eq!(r.body_bytes, body.len() as u64);
                return (body, event_stream || r.event_stream);
            }
        }
    }
    if let Some(r) = p.finish().unwrap() {
        return (body, event_stream || r.event_stream);
    }
    panic!(
        "no complete response in {:?}",
        String::from_utf8_lossy(wire)
    );
}

#[test]
fn body_bytes_pass_out_unframed_however_the_wire_is_cut() {
    let cases: [(&[u8], &[u8], bool); 4] = [
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n7;x=y\r\ndata: a\r\n4\r\n\n\nda\r\n7\r\nta: b\n\n\r\n0\r\nT: v\r\n\r\n",
            b"data: a\n\ndata: b\n\n",
            true,
        ),
        (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-type: TEXT/EVENT-STREAM\r\n\r\nhello",
            b"hello",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-streams\r\nConnection: close\r\n\r\nuntil the close",
            b"until the close",
            false,
        ),
        (b"HTTP/1.1 204 No Content\r\nContent-Type: text/event-stream\r\n\r\n", b"", true),
    ];
    for (wire, body, event_stream) in cases {
        for cut in 0..=wire.len() {
            assert_eq!(
                body_of(wire, cut),
                (body.to_vec(), event_stream),
                "cut at {cut} of {:?}",
                String::from_utf8_lossy(wire)
            );
        }
    }
}

/// `Alt-Svc` offering `h3` (RFC 7838's forms, among other alternatives) is remembered by the
/// parser from that response on; drafts' `h3-29` and `clear` are not HTTP/3 as pelt speaks it.
#[test]
fn alt_svc_offering_h3_is_remembered() {
    use pelt_codec::response::advertises_h3;
    assert!(advertises_h3(b"h3=\":443\"; ma=86400"));
    assert!(advertises_h3(b"h3-29=\":443\"; ma=86400, h3=\":8443\""));
    assert!(advertises_h3(b" h3 = \":443\""));
    assert!(!advertises_h3(b"h3-29=\":443\""));
    assert!(!advertises_h3(b"h2=\"alt.example:443\""));
    assert!(!advertises_h3(b"clear"));
    let mut p = ResponseParser::new(ParserOptions::default());
    let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    assert!(matches!(p.parse(plain), Ok((_, Parsed::Complete(_)))));
    assert!(!p.advertised_h3());
    let offered =
        b"HTTP/1.1 200 OK\r\nalt-svc: h3=\":443\"; ma=2592000\r\nContent-Length: 2\r\n\r\nok";
    assert!(matches!(p.parse(offered), Ok((_, Parsed::Complete(_)))));
    assert!(p.advertised_h3());
    // Sticky: the next response without it leaves it set.
    assert!(matches!(p.parse(plain), Ok((_, Parsed::Complete(_)))));
    assert!(p.advertised_h3());
}

//! What every parser target checks: a parse of `wire` cut at `cuts`, with the step budget.

use pelt_codec::{ParseError, Parsed, ParserOptions, Response, ResponseParser};

#[derive(Debug, PartialEq)]
pub struct Outcome {
    pub responses: Vec<Response>,
    pub error: Option<ParseError>,
}

/// Feeds `wire` to one parser in pieces ending at `cuts`, each response's leftover bytes to the
/// next, then the end of the stream. Panics if a call consumes more than it was given, leaves
/// bytes after `Partial`, or the calls outnumber the bytes plus the pieces (the step budget).
pub fn run(wire: &[u8], cuts: &[usize], head: bool) -> Outcome {
    let mut p = ResponseParser::new(ParserOptions::default());
    p.set_head_request(head);
    let mut out = Outcome {
        responses: vec![],
        error: None,
    };
    let mut bounds: Vec<usize> = cuts.iter().copied().filter(|&c| c < wire.len()).collect();
    bounds.push(wire.len());
    bounds.sort_unstable();
    let budget = wire.len() + bounds.len() + 1;
    let mut steps = 0;
    let mut start = 0;
    // The body bytes handed out, for the response being read: as many as it frames.
    let mut body = 0u64;
    for end in bounds {
        let mut piece = &wire[start..end];
        start = end;
        while !piece.is_empty() {
            steps += 1;
            assert!(steps <= budget, "over the step budget");
            match p.parse_with(piece, &mut |b, _| body += b.len() as u64) {
                Ok((n, parsed)) => {
                    assert!(n <= piece.len(), "consumed more than given");
                    piece = &piece[n..];
                    match parsed {
                        Parsed::Complete(r) => {
                            assert_eq!(std::mem::take(&mut body), r.body_bytes, "body handed out");
                            out.responses.push(r);
                            p.set_head_request(head);
                        }
                        Parsed::Partial => assert!(piece.is_empty(), "Partial left bytes"),
                    }
                }
                Err(e) => {
                    out.error = Some(e);
                    return out;
                }
            }
        }
    }
    match p.finish() {
        Ok(Some(r)) => {
            assert_eq!(body, r.body_bytes, "body handed out");
            out.responses.push(r)
        }
        Ok(None) => {}
        Err(e) => out.error = Some(e),
    }
    out
}

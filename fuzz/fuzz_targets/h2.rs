//! The HTTP/2 framer and HPACK decoder: arbitrary server bytes, whole and cut at the points the
//! first byte picks. No panic, and the same events, owed frames and error however they are
//! split; any stream's window credit stays within what arrived. Every other input is read by a
//! session that reports header fields and body bytes: the bytes of a stream's DATA content, as
//! they come, are the same however the input is split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_codec::h2::{Event, Session};

fn outcome(input: &[u8], step: usize, responses: bool) -> (Vec<String>, Vec<u8>, Option<String>) {
    let mut s = Session::new();
    if responses {
        s.read_responses();
    }
    let (mut seen, mut out) = (vec![], vec![]);
    // Body events run together: one entry per run of a stream's bytes.
    let mut body: Option<(u32, Vec<u8>)> = None;
    for chunk in input.chunks(step.max(1)) {
        let r = s.receive(chunk, &mut out, &mut |e| {
            if let Event::Body { stream, bytes } = e {
                match &mut body {
                    Some((s, b)) if *s == stream => b.extend_from_slice(bytes),
                    _ => {
                        if let Some((s, b)) = body.replace((stream, bytes.to_vec())) {
                            seen.push(format!("Body {s} {b:?}"));
                        }
                    }
                }
                return 0;
            }
            if let Some((s, b)) = body.take() {
                seen.push(format!("Body {s} {b:?}"));
            }
            seen.push(format!("{e:?}"));
            0
        });
        if let Err(e) = r {
            if let Some((s, b)) = body.take() {
                seen.push(format!("Body {s} {b:?}"));
            }
            return (seen, out, Some(e.to_string()));
        }
    }
    if let Some((s, b)) = body.take() {
        seen.push(format!("Body {s} {b:?}"));
    }
    (seen, out, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let responses = step & 0x80 != 0;
    let whole = outcome(input, usize::MAX, responses);
    assert_eq!(whole, outcome(input, step as usize % 17 + 1, responses));
    assert_eq!(whole, outcome(input, 1, responses));
});

//! HTTP/3's framing and QPACK decoder (`pelt_codec::h3`): arbitrary bytes as a request
//! stream's response and as the server's control stream, whole and cut at the points the
//! first byte picks, and byte by byte. No panic, and the same events, body bytes and error
//! however they are split; a stream that reads without error ends cleanly only between
//! frames, after the response's headers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_codec::h3::{Control, Event, Response};

type Outcome = (Vec<String>, Vec<u8>, Option<String>);

fn response(input: &[u8], step: usize) -> Outcome {
    let mut r = Response::new();
    r.read_fields();
    let (mut seen, mut body) = (vec![], vec![]);
    for chunk in input.chunks(step.max(1)) {
        let got = r.receive(chunk, &mut |e| match e {
            Event::Body(b) => body.extend_from_slice(b),
            e => seen.push(format!("{e:?}")),
        });
        if let Err(e) = got {
            return (seen, body, Some(e.to_string()));
        }
    }
    let end = r.end().err().map(|e| e.to_string());
    if end.is_none() {
        assert!(r.answered());
    }
    (seen, body, end)
}

fn control(input: &[u8], step: usize) -> (Vec<String>, Option<String>) {
    let mut c = Control::new();
    let mut seen = vec![];
    for chunk in input.chunks(step.max(1)) {
        if let Err(e) = c.receive(chunk, &mut |e| seen.push(format!("{e:?}"))) {
            return (seen, Some(e.to_string()));
        }
    }
    (seen, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let step = step as usize % 17 + 1;
    let whole = response(input, usize::MAX);
    assert_eq!(whole, response(input, step));
    assert_eq!(whole, response(input, 1));
    let whole = control(input, usize::MAX);
    assert_eq!(whole, control(input, step));
    assert_eq!(whole, control(input, 1));
});

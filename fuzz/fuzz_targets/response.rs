//! The response parser on arbitrary bytes, cut at arbitrary points: no panic, the step
//! budget holds, and the outcome is the same however the bytes are split (TCP segmentation
//! must never change what pelt counts).
#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    // Up to 4 cut points from the next bytes, then the wire bytes.
    let ncuts = usize::from(flags >> 6).min(rest.len());
    let (cut_bytes, wire) = rest.split_at(ncuts);
    let cuts: Vec<usize> = cut_bytes.iter().map(|&b| usize::from(b) * 3 + 1).collect();
    let head = flags & 1 != 0;
    let whole = common::run(wire, &[], head);
    let split = common::run(wire, &cuts, head);
    assert_eq!(
        whole, split,
        "the outcome depends on where the bytes were split"
    );
    let bytewise: Vec<usize> = (1..wire.len().min(512)).collect();
    assert_eq!(
        whole,
        common::run(wire, &bytewise, head),
        "one byte at a time differs"
    );
});

//! The chunked decoder: arbitrary bytes after a chunked head, whole and one byte at a time.
//! No panic, the same outcome, the step budget, and never more body than bytes given.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;

const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

fuzz_target!(|body: &[u8]| {
    let mut wire = HEAD.to_vec();
    wire.extend_from_slice(body);
    let whole = common::run(&wire, &[], false);
    let cuts: Vec<usize> = (HEAD.len()..wire.len()).collect();
    assert_eq!(whole, common::run(&wire, &cuts, false));
    for r in &whole.responses {
        assert!(r.body_bytes <= body.len() as u64, "more body than bytes");
    }
});

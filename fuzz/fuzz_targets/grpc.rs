//! gRPC's message reader: arbitrary DATA bytes, whole, split at an arbitrary point and one byte
//! at a time. No panic, the same messages (or the same error) whatever the chunking, and no
//! message over the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_codec::grpc::{MessageError, MessageReader, Piece};

fn messages(chunks: &[&[u8]]) -> (Vec<Vec<u8>>, Option<MessageError>) {
    let mut r = MessageReader::new(1024);
    let mut out = Vec::new();
    let mut current = Vec::new();
    for c in chunks {
        let result = r.feed(c, &mut |p| match p {
            Piece::Begin(len) => assert!(len <= 1024),
            Piece::Bytes(b) => current.extend_from_slice(b),
            Piece::End => out.push(std::mem::take(&mut current)),
        });
        if let Err(e) = result {
            return (out, Some(e));
        }
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let whole = messages(&[data]);
    let at = data.first().map_or(0, |&b| b as usize % (data.len() + 1));
    assert_eq!(whole, messages(&[&data[..at], &data[at..]]));
    let singles: Vec<&[u8]> = data.chunks(1).collect();
    assert_eq!(whole, messages(&singles));
});

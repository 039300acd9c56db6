//! The WebSocket frame decoder: arbitrary server bytes, whole, split at an arbitrary point and
//! one byte at a time. No panic, the same messages, control frames and error whatever the
//! chunking, and every message's data handed out adds up to its length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_codec::ws::{Decoder, WsError, WsEvent};

fn events(chunks: &[&[u8]]) -> (Vec<(u8, Vec<u8>)>, Option<WsError>) {
    let mut d = Decoder::with_max_message(1 << 16);
    let mut out = Vec::new();
    let mut data = Vec::new();
    for c in chunks {
        let r = d.receive(c, &mut |e| match e {
            WsEvent::Data(b) => data.extend_from_slice(b),
            WsEvent::Message { text, len } => {
                assert_eq!(len as usize, data.len());
                if text {
                    assert!(std::str::from_utf8(&data).is_ok());
                }
                out.push((text as u8, std::mem::take(&mut data)));
            }
            WsEvent::Ping(p) => out.push((9, p.to_vec())),
            WsEvent::Pong(p) => out.push((10, p.to_vec())),
            WsEvent::Close { code, reason } => {
                let mut v = code.unwrap_or(0).to_be_bytes().to_vec();
                v.extend_from_slice(reason);
                out.push((8, v));
            }
        });
        if let Err(e) = r {
            return (out, Some(e));
        }
    }
    (out, None)
}

fuzz_target!(|body: &[u8]| {
    let whole = events(&[body]);
    let at = body.first().map_or(0, |&b| b as usize % (body.len() + 1));
    assert_eq!(whole, events(&[&body[..at], &body[at..]]));
    let singles: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(whole, events(&singles));
});

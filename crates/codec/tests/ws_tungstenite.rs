//! pelt's WebSocket codec against tungstenite, a well-kept implementation, both ways: what a
//! tungstenite server writes (fragments and pings among them), pelt's decoder reads as the same
//! messages however the bytes are split; what pelt's encoder writes, a tungstenite server reads
//! as the messages sent (it refuses an unmasked client frame); the accept keys agree.

use pelt_codec::ws::{self, Decoder, Opcode, WsEvent};
use proptest::prelude::*;
use std::io::{self, Cursor, Read, Write};
use tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tungstenite::protocol::frame::{CloseFrame, Frame};
use tungstenite::protocol::{Role, WebSocket};
use tungstenite::Message;

/// A socket in memory: reads `input`, keeps what is written.
struct Pipe {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.input.read(buf)? {
            0 => Err(io::ErrorKind::WouldBlock.into()),
            n => Ok(n),
        }
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn server(input: Vec<u8>) -> WebSocket<Pipe> {
    let pipe = Pipe {
        input: Cursor::new(input),
        output: Vec::new(),
    };
    WebSocket::from_raw_socket(pipe, Role::Server, None)
}

/// What a message is, for comparing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close(Option<u16>, String),
}

#[derive(Debug, Clone)]
enum Send {
    /// A data message in `parts` fragments (1: unfragmented), a ping after the first.
    Data {
        text: bool,
        bytes: Vec<u8>,
        parts: usize,
    },
    Ping(Vec<u8>),
    Pong(Vec<u8>),
}

fn send_strategy() -> impl Strategy<Value = Send> {
    prop_oneof![
        (any::<String>(), 1usize..4).prop_map(|(s, parts)| Send::Data {
            text: true,
            bytes: s.into_bytes(),
            parts
        }),
        (prop::collection::vec(any::<u8>(), 0..2_000), 1usize..4).prop_map(|(bytes, parts)| {
            Send::Data {
                text: false,
                bytes,
                parts,
            }
        }),
        prop::collection::vec(any::<u8>(), 0..=125).prop_map(Send::Ping),
        prop::collection::vec(any::<u8>(), 0..=125).prop_map(Send::Pong),
    ]
}

/// What pelt's decoder makes of `wire` read in pieces cut at `cuts`.
fn pelt_reads(wire: &[u8], cuts: &[usize]) -> Result<Vec<Got>, ws::WsError> {
    let mut d = Decoder::new();
    let mut got = Vec::new();
    let mut data = Vec::new();
    let mut at = 0;
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(wire.len());
    for end in ends {
        d.receive(&wire[at..end], &mut |e| match e {
            WsEvent::Data(b) => data.extend_from_slice(b),
            WsEvent::Message { text, len } => {
                assert_eq!(len as usize, data.len());
                let bytes = std::mem::take(&mut data);
                got.push(if text {
                    Got::Text(String::from_utf8(bytes).unwrap())
                } else {
                    Got::Binary(bytes)
                });
            }
            WsEvent::Ping(p) => got.push(Got::Ping(p.to_vec())),
            WsEvent::Pong(p) => got.push(Got::Pong(p.to_vec())),
            WsEvent::Close { code, reason } => got.push(Got::Close(
                code,
                String::from_utf8(reason.to_vec()).unwrap(),
            )),
        })?;
        at = end;
    }
    Ok(got)
}

/// Splits `bytes` into `parts` pieces, at character boundaries only for nothing: a text
/// message's fragments may cut a character (RFC 6455 §5.6 checks the whole message).
fn pieces(bytes: &[u8], parts: usize) -> Vec<Vec<u8>> {
    let size = bytes.len().div_ceil(parts).max(1);
    let mut out: Vec<Vec<u8>> = bytes.chunks(size).map(<[u8]>::to_vec).collect();
    while out.len() < parts {
        out.push(Vec::new());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn what_a_tungstenite_server_writes_pelt_reads(
        sends in prop::collection::vec(send_strategy(), 1..12),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        close in prop::option::of((1000u16..1004, "[a-z ]{0,20}")),
    ) {
        let mut ws = server(Vec::new());
        let mut want = Vec::new();
        for s in &sends {
            match s {
                Send::Data { text, bytes, parts } => {
                    let op = OpCode::Data(if *text { Data::Text } else { Data::Binary });
                    for (k, piece) in pieces(bytes, *parts).into_iter().enumerate() {
                        let opcode = if k == 0 { op } else { OpCode::Data(Data::Continue) };
                        let frame = Frame::message(piece, opcode, k + 1 == *parts);
                        ws.write(Message::Frame(frame)).unwrap();
                        if k == 0 && *parts > 1 {
                            ws.write(Message::Ping(b"mid".to_vec().into())).unwrap();
                            want.push(Got::Ping(b"mid".to_vec()));
                        }
                    }
                    want.push(if *text {
                        Got::Text(String::from_utf8(bytes.clone()).unwrap())
                    } else {
                        Got::Binary(bytes.clone())
                    });
                }
                Send::Ping(p) => {
                    ws.write(Message::Ping(p.clone().into())).unwrap();
                    want.push(Got::Ping(p.clone()));
                }
                Send::Pong(p) => {
                    ws.write(Message::Pong(p.clone().into())).unwrap();
                    want.push(Got::Pong(p.clone()));
                }
            }
        }
        if let Some((code, reason)) = &close {
            ws.close(Some(CloseFrame { code: CloseCode::from(*code), reason: reason.as_str().into() }))
                .unwrap();
            want.push(Got::Close(Some(*code), reason.clone()));
        }
        ws.flush().unwrap();
        let wire = ws.get_ref().output.clone();
        prop_assert_eq!(pelt_reads(&wire, &cuts), Ok(want.clone()));
        prop_assert_eq!(pelt_reads(&wire, &(0..wire.len()).collect::<Vec<_>>()), Ok(want));
    }

    #[test]
    fn what_pelt_writes_a_tungstenite_server_reads(
        sends in prop::collection::vec(send_strategy(), 1..12),
        mask in any::<[u8; 4]>(),
        code in 1000u16..1004,
    ) {
        let mut wire = Vec::new();
        let mut want = Vec::new();
        for s in &sends {
            match s {
                Send::Data { text, bytes, .. } => {
                    if *text {
                        ws::encode(&mut wire, Opcode::Text, bytes, mask);
                        want.push(Message::Text(String::from_utf8(bytes.clone()).unwrap().into()));
                    } else {
                        ws::encode(&mut wire, Opcode::Binary, bytes, mask);
                        want.push(Message::Binary(bytes.clone().into()));
                    }
                }
                Send::Ping(p) => {
                    ws::encode(&mut wire, Opcode::Ping, p, mask);
                    want.push(Message::Ping(p.clone().into()));
                }
                Send::Pong(p) => {
                    ws::encode(&mut wire, Opcode::Pong, p, mask);
                    want.push(Message::Pong(p.clone().into()));
                }
            }
        }
        ws::encode_close(&mut wire, code, b"bye", mask);
        want.push(Message::Close(Some(CloseFrame { code: CloseCode::from(code), reason: "bye".into() })));
        let mut ws = server(wire);
        for w in want {
            prop_assert_eq!(ws.read().unwrap(), w);
        }
    }

    #[test]
    fn the_accept_keys_agree(nonce in any::<[u8; 16]>()) {
        let key = ws::key(nonce);
        let theirs = tungstenite::handshake::derive_accept_key(&key);
        let ours = ws::accept(&key);
        prop_assert_eq!(std::str::from_utf8(&ours).unwrap(), theirs);
    }
}

#[test]
fn a_tungstenite_server_refuses_an_unmasked_frame_as_pelt_refuses_a_masked_one() {
    let mut ws = server(vec![0x81, 0x01, b'a']);
    assert!(ws.read().is_err());
    let mut d = Decoder::new();
    let mut wire = Vec::new();
    ws::encode(&mut wire, Opcode::Text, b"a", [1, 2, 3, 4]);
    assert_eq!(d.receive(&wire, &mut |_| {}), Err(ws::WsError::Masked));
}

#[test]
fn long_messages_take_the_16_and_64_bit_lengths_both_ways() {
    for len in [125, 126, 65_535, 65_536, 200_000] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let mut ws = server(Vec::new());
        ws.send(Message::Binary(bytes.clone().into())).unwrap();
        let wire = ws.get_ref().output.clone();
        assert_eq!(
            pelt_reads(&wire, &[3, 9, 1000]),
            Ok(vec![Got::Binary(bytes.clone())])
        );
        let mut wire = Vec::new();
        ws::encode(&mut wire, Opcode::Binary, &bytes, [9, 8, 7, 6]);
        assert_eq!(server(wire).read().unwrap(), Message::Binary(bytes.into()));
    }
}

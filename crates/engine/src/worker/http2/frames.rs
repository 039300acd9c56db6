//! HTTP/2 responses: one read's frames, each stream's head, fields, body and end handed to the
//! connection's sink (`sink.rs`), window updates, resets, and the event streams pelt ends.

use super::*;

/// Reads one read's frames, and hands each stream's response to the sink, which books each
/// that completes (at its END_STREAM) or that the server reset, and reads event streams as
/// their DATA comes; a stream that reached its event limit is reset and booked after the read.
pub(super) fn receive(
    conn: &mut Conn<Http2<'_>>,
    ledger: &mut Ledger,
    config: &Config,
    data: &[u8],
    arrived: Option<Instant>,
    now: Instant,
) -> AfterRead {
    let streams = &config.streams;
    let Conn {
        proto, slots, sink, ..
    } = conn;
    let Some(h2) = proto.as_mut() else {
        return AfterRead::Keep;
    };
    let H2 {
        session,
        out,
        lanes,
        blocked,
        resets,
        ..
    } = &mut **h2;
    let Some(request) = config.http2() else {
        return AfterRead::Keep;
    };
    let mut read = Frames {
        slots,
        sink,
        lanes,
        ledger,
        streams,
        at: arrived.unwrap_or(now),
        request,
        blocked,
        resets,
    };
    let result = session.receive(data, out, &mut |event| read.event(event));
    if let Err(e) = result {
        return AfterRead::Fail(ErrorKind::Protocol, e.to_string());
    }
    for id in resets.drain(..) {
        h2::rst_stream(out, id, h2::code::CANCEL);
    }
    if session.advertised_h3() {
        ledger.current().alt_svc_h3 = true;
    }
    if sink.take_cut() {
        end_streams(slots, out, lanes, sink, ledger, streams, now);
    }
    AfterRead::Keep
}

/// What one read's frames act on: the connection's requests, its sink and lanes.
struct Frames<'r> {
    slots: &'r mut Slots<Stream>,
    sink: &'r mut Sink,
    lanes: &'r mut Lanes,
    ledger: &'r mut Ledger,
    streams: &'r Streams,
    /// When the read's bytes arrived.
    at: Instant,
    /// The requests (a gRPC ping-pong call's messages are sent from its body).
    request: &'r Request,
    /// Set when a body has more to send (the write after the read sends it).
    blocked: &'r mut bool,
    /// Streams to reset after the read.
    resets: &'r mut Vec<u32>,
}

impl Frames<'_> {
    /// One event of the session; returns the bytes to open the stream's receive window by.
    /// A stream pelt gave up on (timed out) is not found: its frames are dropped.
    #[inline]
    fn event(&mut self, event: h2::Event<'_>) -> u32 {
        let Frames {
            slots,
            sink,
            ledger,
            streams,
            at,
            ..
        } = self;
        match event {
            h2::Event::Headers {
                stream,
                status,
                end_stream,
                event_stream,
            } => self.headers(stream, status, end_stream, event_stream),
            h2::Event::Field {
                stream,
                name,
                value,
            } => {
                if let Some(k) = slots.position(stream) {
                    sink.field(slots.get_mut(k), name, value);
                }
                0
            }
            h2::Event::Body { stream, bytes } => {
                if let Some(k) = slots.position(stream) {
                    let slot = slots.get_mut(k);
                    sink.body(slot, bytes, *at, ledger, streams);
                    if slot.stream.until != 0 {
                        self.answered(k);
                    }
                }
                0
            }
            h2::Event::Data {
                stream,
                len,
                end_stream,
            } => self.data(stream, len, end_stream),
            h2::Event::Reset { stream, code } => {
                if let Some(k) = slots.position(stream) {
                    let slot = slots.remove(k);
                    self.lanes.give_back(slot.stream.lane);
                    let name = h2::code_name(code);
                    sink.fail_coded(&slot, ErrorKind::StreamReset, name, ledger, || {
                        format!("the server reset stream {stream}: {name}")
                    });
                }
                0
            }
            h2::Event::WindowUpdate { stream, increment } => {
                if let Some(k) = (stream != 0).then(|| slots.position(stream)).flatten() {
                    slots.get_mut(k).stream.send_window += increment as i64;
                }
                0
            }
            h2::Event::Settings { window_delta } => {
                for k in 0..slots.len {
                    let s = &mut slots.get_mut(k).stream;
                    if s.id != 0 {
                        s.send_window += window_delta;
                    }
                }
                0
            }
            // After the read, the worker acts on the session's GOAWAY.
            h2::Event::GoAway { .. } => 0,
        }
    }

    /// A header block: its response's first frame ends the time to first byte; 1xx heads
    /// come first and trailers last, and the first final status is the one.
    #[inline]
    fn headers(&mut self, stream: u32, status: Option<u16>, end: bool, event_stream: bool) -> u32 {
        let Some(k) = self.slots.position(stream) else {
            return 0;
        };
        let slot = self.slots.get_mut(k);
        slot.first.get_or_insert(self.at);
        if slot.stream.status == 0 {
            slot.stream.status = status.filter(|&s| s >= 200).unwrap_or(0);
            if slot.stream.status == 0 {
                self.sink.interim(slot);
            } else {
                self.sink
                    .head(slot, event_stream, self.at, self.ledger, self.streams);
            }
        }
        if end {
            self.finish(k);
        }
        0
    }

    /// gRPC ping-pong: the `k`th request's call had replies; for each one new, its next
    /// message may go (sent by the write after the read).
    fn answered(&mut self, k: usize) {
        let slot = self.slots.get_mut(k);
        let replies = self.sink.replies(slot);
        if replies <= slot.stream.answered {
            return;
        }
        let (_, body) = stream_request(self.request, &self.lanes.all, slot);
        let s = &mut slot.stream;
        while s.answered < replies && s.until < body.len() {
            s.until = pelt_codec::grpc::message_end(body, s.until);
            s.answered += 1;
        }
        s.answered = replies;
        *self.blocked = true;
    }

    /// DATA on a stream: its end, or the bytes to open its window by once half is used.
    #[inline]
    fn data(&mut self, stream: u32, len: u32, end: bool) -> u32 {
        let Some(k) = self.slots.position(stream) else {
            return 0;
        };
        if end {
            self.finish(k);
            return 0;
        }
        let s = &mut self.slots.get_mut(k).stream;
        s.unacked += len;
        if s.unacked < h2::WINDOW / 2 {
            return 0;
        }
        std::mem::take(&mut s.unacked)
    }

    /// The `k`th request's stream ended: its response goes to the sink, booked.
    #[inline]
    fn finish(&mut self, k: usize) {
        let slot = self.slots.remove(k);
        if slot.stream.until != 0 {
            // A ping-pong call the server ended with messages still to send: its sending side
            // closes (RST_STREAM CANCEL), as a gRPC client's does.
            let (_, body) = stream_request(self.request, &self.lanes.all, &slot);
            if slot.stream.body_sent < body.len() {
                self.resets.push(slot.stream.id);
            }
        }
        self.lanes.give_back(slot.stream.lane);
        if slot.stream.status == 0 {
            let id = slot.stream.id;
            return self.sink.fail(&slot, ErrorKind::Protocol, self.ledger, || {
                format!("stream {id} ended without a final :status")
            });
        }
        self.sink
            .end(&slot, slot.stream.status, self.at, self.ledger);
    }
}

/// pelt ends every event stream on the connection it must end by `now` (its limit came, or
/// its marker and the grace after it): each is reset (CANCEL) and its request booked as a
/// response at the stream's end.
pub(super) fn end_streams(
    slots: &mut Slots<Stream>,
    out: &mut Vec<u8>,
    lanes: &mut Lanes,
    sink: &mut Sink,
    ledger: &mut Ledger,
    streams: &Streams,
    now: Instant,
) {
    let mut k = 0;
    while k < slots.len {
        if sink.end_at(slots.get_mut(k), now, streams).is_none() {
            k += 1;
            continue;
        }
        let slot = slots.remove(k);
        h2::rst_stream(out, slot.stream.id, h2::code::CANCEL);
        lanes.give_back(slot.stream.lane);
        sink.end(&slot, slot.stream.status, now, ledger);
    }
}

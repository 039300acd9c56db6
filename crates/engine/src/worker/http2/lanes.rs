//! HTTP/2 requests rendered per stream (`worker/lanes.rs`): with templates each open stream
//! has a [`Lane`], the request rendered for it (a template renders HTTP/1.1 text, turned into
//! a header block and a body by [`h2::encode_request`]).

use super::*;
use crate::worker::lanes::render_text;
use std::collections::HashMap;

/// One stream's request, rendered from its template.
#[derive(Default)]
pub(super) struct Lane {
    /// The request rendered from its template (`rendered`), else the entry's own is sent.
    block: Vec<u8>,
    body: Vec<u8>,
    rendered: bool,
}

/// The header block and body of entry `target` (the request itself without `--targets`).
#[inline]
pub(super) fn entry(request: &Request, target: u32) -> (&[u8], &[u8]) {
    match request.targets.get(target as usize) {
        Some(t) => (&t.header_block, &t.body),
        None => (&request.header_block, &request.body),
    }
}

/// A connection's lanes.
pub(super) type Lanes = crate::worker::lanes::Lanes<Lane>;

/// Makes `lane` ready for `slot`'s stream: its user and step, its response cleared, and its
/// request rendered when its entry is a template.
pub(super) fn prepare_lane<'c>(
    lane: &mut Lane,
    config: &'c Config,
    proto: &mut Http2<'_>,
    slot: &Slot<Stream>,
    render: Render<'c>,
) {
    lane.rendered = false;
    if !render_text(
        config,
        slot.target,
        &mut proto.text,
        &mut proto.scratch,
        render,
    ) {
        return;
    }
    lane.block.clear();
    lane.body.clear();
    let scheme = scheme(config);
    // A template renders a valid request unless a value put a line break in a header (a
    // captured value can hold one): the entry's own request goes then, as a lane not
    // rendered. A gRPC call's rendered JSON becomes its message (and has no length field).
    let grpc = config.http2().and_then(|h| h.grpc.as_ref());
    let codec = grpc.and_then(|g| g.codec(slot.target));
    let encode = match codec {
        Some(_) => h2::encode_request_unsized,
        None => h2::encode_request,
    };
    lane.rendered = encode(&proto.text, scheme, &mut lane.block, &mut lane.body).is_ok();
    if let (true, Some(codec)) = (lane.rendered, codec) {
        // One cache per method: a scenario's steps each have theirs.
        let k = match grpc.is_some_and(|g| g.steps.is_empty()) {
            true => 0,
            false => slot.target as usize,
        };
        if proto.messages.len() <= k {
            proto.messages.resize_with(k + 1, Default::default);
        }
        lane.rendered = message(codec, &mut proto.messages[k], &mut lane.body);
    }
}

/// The `:scheme` of the run's requests.
fn scheme(config: &Config) -> &'static str {
    if config.tls.is_some() {
        "https"
    } else {
        "http"
    }
}

/// Makes `lane` send the first of the requests a script's `request()` left in `fed`
/// (`lanes::take_fed`).
pub(super) fn take_fed(lane: &mut Lane, config: &Config, fed: &mut Vec<u8>) {
    lane.block.clear();
    lane.body.clear();
    let (block, body) = (&mut lane.block, &mut lane.body);
    lane.rendered = crate::worker::lanes::take_fed(fed, |bytes| {
        h2::encode_first_request(bytes, scheme(config), block, body)
    });
}

/// Replaces `body`, a gRPC call's rendered JSON, by its framed message: the one kept for the
/// same text, else made now (and kept, up to [`crate::MESSAGES_KEPT`]). `false`: the text does
/// not make a message of the method's type (the entry's own request goes instead).
fn message(
    codec: &dyn crate::MessageCodec,
    kept: &mut HashMap<Vec<u8>, Vec<u8>>,
    body: &mut Vec<u8>,
) -> bool {
    if let Some(m) = kept.get(body.as_slice()) {
        body.clear();
        body.extend_from_slice(m);
        return true;
    }
    let mut framed = Vec::new();
    if codec.encode(body, &mut framed).is_err() {
        return false;
    }
    if kept.len() < crate::MESSAGES_KEPT {
        kept.insert(body.clone(), framed.clone());
    }
    body.clear();
    body.extend_from_slice(&framed);
    true
}

/// The header block and body `slot`'s stream sends: its lane's rendered request, or its
/// entry's.
#[inline]
pub(super) fn stream_request<'r>(
    request: &'r Request,
    lanes: &'r [Lane],
    slot: &Slot<Stream>,
) -> (&'r [u8], &'r [u8]) {
    match slot.stream.lane.checked_sub(1).map(|l| &lanes[l as usize]) {
        Some(lane) if lane.rendered => (&lane.block, &lane.body),
        _ => entry(request, slot.target),
    }
}

//! The protocol's parts of the config: WebSocket, the TLS client, the I/O backend, an HTTP/2
//! request's header block, HTTP/3's requests.

use super::*;

/// A ws:// or wss:// run's settings, after the checks of what does not go with one; `None`
/// for http(s)://, where a `--ws-*` option is bad input.
pub(super) fn websocket(
    spec: &LoadSpec,
    target: &target::Target,
    headers: &[(String, String)],
    body: &[u8],
    entries: Option<&Entries>,
) -> Result<Option<engine::WebSocket>, SpecError> {
    let ws = &spec.websocket;
    if !target.websocket {
        if ws.is_set() {
            return Err(bad(
                "--ws-protocol, --ws-ping, --ws-binary, --ws-max-message and --ws-no-reply are for ws:// and \
                 wss:// URLs",
            ));
        }
        return Ok(None);
    }
    let not_with = |what: &str| {
        bad(format!(
            "{what} is HTTP's; a ws:// or wss:// URL cannot take it"
        ))
    };
    if spec.pipeline > 1 {
        return Err(not_with("--pipeline"));
    }
    if spec.http2 {
        return Err(not_with("--http2"));
    }
    if !spec.keep_alive {
        return Err(not_with("--no-keepalive"));
    }
    if !spec.method.eq_ignore_ascii_case("GET") {
        return Err(not_with("-m/--method (the upgrade is a GET)"));
    }
    if spec.event_streams != engine::Streams::default() {
        return Err(not_with(
            "--stream, --stream-limit, --stream-end and --goodput",
        ));
    }
    // The messages: --bodies' lines, each sent in turn (by the request's index), or the body.
    let messages: Vec<Vec<u8>> = match (&spec.requests_from, entries) {
        (Requests::Bodies(_), Some(e)) => e
            .list
            .iter()
            .map(|t| t.body.clone().unwrap_or_default())
            .collect(),
        (Requests::One, _) if matches!(spec.body, crate::spec::Body::None) => Vec::new(),
        (Requests::One, _) => vec![body.to_vec()],
        _ => {
            return Err(bad(
                "--targets and --scenario do not take ws:// or wss:// URLs: give the messages \
                 with --body, --body-file or --bodies",
            ))
        }
    };
    if messages.is_empty() {
        if spec.requests.is_some() {
            return Err(bad(
                "-n counts messages on a ws:// URL: give one with --body (without a message \
                 pelt holds the sockets open for -d)",
            ));
        }
        if spec.rate.is_some() {
            return Err(bad(
                "--rate sends messages on a ws:// URL: give one with --body (without a message \
                 pelt holds the sockets open for -d)",
            ));
        }
    }
    if !ws.binary && messages.iter().any(|m| std::str::from_utf8(m).is_err()) {
        return Err(bad(
            "a message is not UTF-8, so it cannot go as text: add --ws-binary",
        ));
    }
    let handshake =
        pelt_codec::ws::Handshake::new(&target.host_header, &target.path, &ws.protocols, headers)
            .map_err(|e| bad(format!("invalid request: {e}")))?;
    Ok(Some(engine::WebSocket {
        handshake,
        protocols: ws.protocols.clone(),
        messages,
        binary: ws.binary,
        expect_reply: !ws.no_reply,
        ping: ws.ping,
        max_message: ws
            .max_message
            .unwrap_or(pelt_codec::ws::DEFAULT_MAX_MESSAGE),
    }))
}

/// TLS flags are for https:// targets.
pub(super) fn tls_flags_fit(spec: &LoadSpec, target: &target::Target) -> Result<(), SpecError> {
    if target.tls_host.is_none() && spec.tls.is_set() {
        return Err(bad(
            "--cacert, --insecure, --tls-full-handshake, --tls-early-data, --tls-version, --sni and --cert/--key \
             are for https:// URLs",
        ));
    }
    Ok(())
}

/// The TLS client of an https:// target.
pub(super) fn tls_client(
    spec: &LoadSpec,
    target: &target::Target,
) -> Result<Option<engine::TlsClient>, SpecError> {
    let Some(host) = &target.tls_host else {
        return Ok(None);
    };
    let t = &spec.tls;
    let options = tls::TlsOptions {
        cacert: t.cacert.as_deref(),
        insecure: t.insecure,
        full_handshake: t.full_handshake,
        early_data: t.early_data,
        version: t.version,
        sni: t.sni.as_deref(),
        client_cert: t.cert.as_deref().zip(t.key.as_deref()),
        http2: spec.http2,
        http3: spec.http3,
    };
    tls::client(host, &options).map(Some).map_err(bad)
}

/// An --http3 run's requests (each the HTTP/1.1 request the run would send, as its HTTP/3
/// stream carries it), streams and QUIC's TLS client, after the checks of what does not go
/// with it (`tls`: the https:// URL's client, taken); `None` without --http3.
pub(super) fn http3(
    spec: &LoadSpec,
    target: &target::Target,
    encoded: &Encoded,
    tls: &mut Option<engine::TlsClient>,
) -> Result<Option<engine::Http3>, SpecError> {
    if !spec.http3 {
        return Ok(None);
    }
    let not_with = |what: &str| bad(format!("--http3 does not take {what}"));
    if target.websocket || target.grpc || target.tls_host.is_none() {
        return Err(bad(
            "--http3 needs an https:// URL: QUIC is always encrypted (TLS 1.3)",
        ));
    }
    if spec.tls.version == Some(crate::spec::TlsVersion::V1_2) {
        return Err(not_with("--tls-version 1.2: QUIC's TLS is 1.3"));
    }
    // Each entry's request (a template's with its markers: what goes when a rendered
    // request is not one); templates, scenarios and scripts render theirs per stream.
    let set = encoded.set.as_ref();
    let mut requests = Vec::new();
    let mut scratch = Default::default();
    let mut frames = |rendered: &[u8]| {
        let mut out = Vec::new();
        pelt_codec::h3::request_frames(rendered, "https", &mut out, &mut scratch)
            .map_err(|e| bad(format!("invalid request: {e}")))?;
        requests.push(out);
        Ok::<(), SpecError>(())
    };
    match set {
        Some(set) => {
            for k in 0..set.len() {
                frames(&set.bytes()[set.range(k)])?;
            }
        }
        None => frames(&encoded.request)?,
    }
    Ok(Some(engine::Http3 {
        requests,
        streams: spec
            .streams
            .unwrap_or(if spec.rate.is_some() { 100 } else { 1 }),
        tls: tls.take().expect("an https:// URL has a TLS client"),
    }))
}

pub(super) fn io_backend(io: IoChoice) -> Result<engine::IoBackend, SpecError> {
    Ok(match io {
        IoChoice::Auto => engine::IoBackend::detect(),
        IoChoice::Epoll => engine::IoBackend::Epoll,
        IoChoice::Uring => {
            engine::IoBackend::Uring
                .check()
                .map_err(|e| bad(format!("--io uring: {e}; use --io epoll")))?;
            engine::IoBackend::Uring
        }
    })
}

/// An entry as HTTP/2 sends it: its header block encoded once, and its body.
pub(super) fn h2_request(
    method: &str,
    p: &target::Parsed,
    headers: &[(String, String)],
    body: &[u8],
) -> engine::H2Request {
    let scheme = if p.https { "https" } else { "http" };
    engine::H2Request {
        header_block: pelt_codec::h2::encode_headers(
            method,
            scheme,
            &p.host_header,
            &p.path,
            headers,
            body.len(),
        ),
        body: body.to_vec(),
    }
}

//! A grpc:// or grpcs:// run as the HTTP/2 run it is: the method found in the service's
//! descriptors (`--proto`, `--protoset`), the message encoded and framed once, and the fields a
//! call carries (`content-type: application/grpc`, `te: trailers`, `grpc-timeout` from
//! `--timeout`, the user's `-H` as metadata). What follows is the HTTP/2 path every run takes;
//! the engine reads the responses as calls (`engine::Grpc`).

use super::*;
use crate::grpc::{self, Method};
use crate::scenario::Program;
use pelt_codec::grpc as wire;

/// A gRPC run's spec rewritten as its HTTP/2 run, and what stays gRPC's.
pub(super) struct Call {
    /// The spec as an HTTP/2 POST of the framed message to the method's path.
    pub(super) spec: LoadSpec,
    pub(super) grpc: engine::Grpc,
    /// The URL as typed, for the report.
    pub(super) display: String,
    /// The method, for the messages of `--bodies` (`None`: a scenario's, whose steps each
    /// call their own).
    method: Option<Method>,
}

/// `spec` as a gRPC run, when its URL (or its scenario's target) is grpc:// or grpcs://;
/// `None` otherwise (where a gRPC option or step is bad input).
pub(super) fn call(
    spec: &LoadSpec,
    here: Here,
    program: Option<&mut Program>,
) -> Result<Option<Call>, SpecError> {
    let url = match (&program, spec.url.is_empty()) {
        (Some(p), true) => p.target.clone().unwrap_or_default(),
        _ => spec.url.clone(),
    };
    let url = url.as_str();
    let parsed = match target::parse(url) {
        Ok(p) => p,
        // An unparsable URL (or none, with --targets) is for `target_of` to report.
        Err(_) => return Ok(None),
    };
    if !parsed.grpc {
        if program
            .as_ref()
            .is_some_and(|p| steps(p).any(|s| s.grpc.is_some()))
        {
            return Err(bad(
                "the scenario's grpc steps need a grpc:// or grpcs:// URL (or target)",
            ));
        }
        if spec.grpc.is_set() {
            return Err(bad(
                "--proto, --protoset, -I/--import-path and --reflect are for grpc:// and \
                 grpcs:// URLs",
            ));
        }
        return Ok(None);
    }
    fits(spec)?;
    if let Some(program) = program {
        return scenario(spec, url, &parsed, here, program).map(Some);
    }
    let method = method(spec, &parsed, here)?;
    let s = &spec.event_streams;
    if !method.server_streaming && *s != engine::Streams::default() {
        return Err(bad(format!(
            "--stream-limit is for a server-streaming method's calls; {} answers one message",
            method.path.trim_start_matches('/')
        )));
    }
    let mut message = Vec::new();
    let mut templated = false;
    let body = body_of(spec)?;
    let framed = if binary(spec) {
        method.frame_binary(&body, &mut message)
    } else {
        let text = std::str::from_utf8(&body).map_err(|_| {
            bad("a gRPC message is JSON (UTF-8); a binary one comes from --body-file FILE.bin")
        })?;
        let text = if text.trim().is_empty() { "{}" } else { text };
        if text.contains("{{") {
            // Rendered per call, made a message on the workers (`engine::Grpc::encoder`).
            templated = true;
            sample(&method, text)
                .map(|()| message.extend_from_slice(text.as_bytes()))
                .map_err(|e| e.0)
        } else {
            method.frame_call(text, &mut message)
        }
    };
    framed.map_err(|e| bad(format!("{}: {e}", method.path.trim_start_matches('/'))))?;
    let mut http = http_spec(spec, &parsed, &method.path)?;
    http.body = Body::Bytes(message);
    let grpc = engine::Grpc {
        server_streaming: method.server_streaming,
        encoder: templated.then(|| encoder(&method)),
        ping_pong: method.client_streaming && method.server_streaming && !spec.grpc.send_all,
        ..engine::Grpc::default()
    };
    Ok(Some(Call {
        spec: http,
        grpc,
        display: parsed.display,
        method: Some(method),
    }))
}

/// `spec` as the HTTP/2 POSTs of its calls to `path`: the user's headers as metadata, beside
/// the fields every call carries.
fn http_spec(spec: &LoadSpec, parsed: &target::Parsed, path: &str) -> Result<LoadSpec, SpecError> {
    let mut headers = metadata(spec)?;
    headers.push("content-type: application/grpc".into());
    headers.push("te: trailers".into());
    headers.push(format!(
        "grpc-timeout: {}",
        wire::timeout_value(spec.timeout)
    ));
    let scheme = if parsed.https { "https" } else { "http" };
    let host = match &parsed.host {
        url::Host::Ipv6(ip) => format!("[{ip}]"),
        h => h.to_string(),
    };
    let mut http = spec.clone();
    http.url = format!("{scheme}://{host}:{}{path}", parsed.port);
    http.method = "POST".into();
    http.http2 = true;
    http.headers = headers;
    http.grpc = Default::default();
    Ok(http)
}

/// Every request step of `program`.
fn steps(program: &Program) -> impl Iterator<Item = &engine::scenario::Step> {
    program
        .scenarios
        .iter()
        .flat_map(|s| s.once.iter().chain(&s.flow))
        .filter_map(|op| match op {
            engine::scenario::Op::Request(step) => Some(&**step),
            engine::scenario::Op::Think(_) => None,
        })
}

/// A scenario on a grpc:// URL: each step's method found in the descriptors, its path made
/// the step's, its message checked (each variable and template as `0`), and its codec the
/// engine's for that step (its rendered JSON made a message, its reply JSON for captures).
fn scenario(
    spec: &LoadSpec,
    url: &str,
    parsed: &target::Parsed,
    here: Here,
    program: &mut Program,
) -> Result<Call, SpecError> {
    use engine::scenario::{Op, Part, Text};
    if spec.event_streams != engine::Streams::default() {
        return Err(bad(
            "--stream-limit is for one server-streaming method's calls, not a scenario's steps",
        ));
    }
    let mut pools: Vec<(String, prost_reflect::DescriptorPool)> = Vec::new();
    let mut codecs: Vec<Option<std::sync::Arc<dyn engine::MessageCodec>>> =
        vec![None; program.steps.len()];
    let names = program.steps.clone();
    for s in &mut program.scenarios {
        for op in s.once.iter_mut().chain(s.flow.iter_mut()) {
            let Op::Request(step) = op else { continue };
            // The step's name, and its call when the name is not the call.
            let name = match &step.grpc {
                Some(call) if *call != names[step.id as usize] => {
                    format!("'{}' ({call})", names[step.id as usize])
                }
                _ => format!("'{}'", names[step.id as usize]),
            };
            let Some(call) = step.grpc.clone() else {
                return Err(bad(format!(
                    "scenario step {name}: a grpc:// URL's steps are grpc calls \
                     (- grpc: {{call: package.Service/Method}})"
                )));
            };
            let service = service_of(&call).to_string();
            let pool = match pools.iter().find(|(s, _)| *s == service) {
                Some((_, pool)) => pool,
                None => {
                    let pool = descriptors(spec, url, &call, here)?;
                    pools.push((service, pool));
                    &pools.last().expect("pushed").1
                }
            };
            let method = grpc::method(pool, &call).map_err(|e| {
                let e = e
                    .strip_prefix(&format!("{call}: "))
                    .unwrap_or(&e)
                    .to_string();
                bad(format!("scenario step {name}: {e}"))
            })?;
            // The message with each variable as 0: the JSON it will be.
            let mut text = String::new();
            if let Some(body) = &step.body {
                for part in &body.0 {
                    match part {
                        Part::Lit(l) => text.push_str(l),
                        Part::Var(_) => text.push('0'),
                    }
                }
            }
            sample(&method, &text).map_err(|e| bad(format!("scenario step {name}: {}", e.0)))?;
            step.url = Text(vec![Part::Lit(method.path.clone())]);
            codecs[step.id as usize] = Some(encoder(&method));
        }
    }
    let mut http = http_spec(spec, parsed, "")?;
    http.body = Body::None;
    let grpc = engine::Grpc {
        steps: codecs
            .into_iter()
            .map(|c| c.expect("every step is a call"))
            .collect(),
        ..engine::Grpc::default()
    };
    Ok(Call {
        spec: http,
        grpc,
        display: parsed.display.clone(),
        method: None,
    })
}

impl Call {
    /// `--bodies`: each line's JSON, a message, framed once (a line with templates is
    /// rendered per call and made a message then). Returns whether a line has templates.
    pub(super) fn frame_bodies(&self, entries: &mut Entries) -> Result<bool, SpecError> {
        let Some(method) = &self.method else {
            // A scenario's steps: their messages are rendered per call.
            return Ok(false);
        };
        let mut templated = false;
        let name = entries.from.1.clone().unwrap_or_default();
        for e in &mut entries.list {
            let Some(body) = e.body.as_mut() else {
                continue;
            };
            let at = || format!("--bodies {name} line {}", e.line);
            let text = std::str::from_utf8(body)
                .map_err(|_| bad(format!("{}: a gRPC message is JSON (UTF-8)", at())))?;
            if text.contains("{{") {
                sample(method, text).map_err(|e| bad(format!("{}: {}", at(), e.0)))?;
                templated = true;
                continue;
            }
            let mut framed = Vec::new();
            method
                .frame_call(text, &mut framed)
                .map_err(|e| bad(format!("{}: {e}", at())))?;
            *body = framed;
        }
        Ok(templated)
    }

    /// What the engine reads the calls with: with `templated` lines, their encoder too.
    pub(super) fn engine(&self, templated: bool) -> engine::Grpc {
        let mut g = self.grpc.clone();
        if let (true, Some(method)) = (templated, &self.method) {
            g.encoder = Some(encoder(method));
        }
        g
    }
}

/// The engine's encoder of `method`'s messages.
fn encoder(method: &Method) -> std::sync::Arc<dyn engine::MessageCodec> {
    std::sync::Arc::new(method.clone())
}

/// Checks a message template before the run: with each `{{...}}` as `0` it must be the
/// method's JSON (a field the message lacks, or braces out of place, is bad input here, not a
/// failed call per request).
fn sample(method: &Method, template: &str) -> Result<(), SpecError> {
    let mut text = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        text.push_str(&rest[..at]);
        match rest[at..].find("}}") {
            Some(end) => {
                text.push('0');
                rest = &rest[at + end + 2..];
            }
            None => return Err(bad("a template's {{ without its }} in the gRPC message")),
        }
    }
    text.push_str(rest);
    method
        .frame_call(&text, &mut Vec::new())
        .map_err(|e| bad(format!("{} (with each {{{{...}}}} as 0)", e)))
}

/// What a gRPC call cannot take.
fn fits(spec: &LoadSpec) -> Result<(), SpecError> {
    let not_with = |what: &str| bad(format!("{what} is HTTP's; a grpc:// URL cannot take it"));
    if spec.pipeline > 1 {
        return Err(not_with("--pipeline"));
    }
    if !spec.keep_alive {
        return Err(not_with("--no-keepalive"));
    }
    if !["GET", "POST"].contains(&spec.method.to_ascii_uppercase().as_str()) {
        return Err(not_with("-m/--method (a call is a POST)"));
    }
    let s = &spec.event_streams;
    if s.all || s.end_marker.is_some() {
        return Err(not_with("--stream and --stream-end"));
    }
    if spec.websocket.is_set() {
        return Err(bad("--ws-* options are for ws:// and wss:// URLs"));
    }
    if !matches!(
        spec.requests_from,
        Requests::One | Requests::Bodies(_) | Requests::Scenario(_)
    ) {
        return Err(bad(
            "--targets and --prompts do not take grpc:// URLs: give the calls' messages with --body, \
             --body-file or --bodies, or a scenario's grpc steps",
        ));
    }
    Ok(())
}

/// The method the URL's path names, in the descriptors the options give.
fn method(spec: &LoadSpec, parsed: &target::Parsed, here: Here) -> Result<Method, SpecError> {
    let call = parsed.path.trim_start_matches('/');
    if call.is_empty() || parsed.path.contains('?') {
        return Err(bad(format!(
            "invalid URL {}: its path names the method, grpc://HOST:PORT/package.Service/Method",
            values::quote(&spec.url)
        )));
    }
    let pool = descriptors(spec, &spec.url, call, here)?;
    grpc::method(&pool, call).map_err(bad)
}

/// The service of `call` (`package.Service/Method`).
fn service_of(call: &str) -> &str {
    call.rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .map_or(call, |(s, _)| s)
}

/// The descriptors that describe `call`'s service, from where the options say.
fn descriptors(
    spec: &LoadSpec,
    url: &str,
    call: &str,
    here: Here,
) -> Result<prost_reflect::DescriptorPool, SpecError> {
    let g = &spec.grpc;
    Ok(match (&g.proto, &g.protoset) {
        _ if g.reflect => reflected(spec, url, call, here)?,
        (Some(proto), _) => grpc::compile(proto, &g.import_paths).map_err(bad)?,
        (None, Some(set)) => {
            let shown = set.display().to_string();
            let bytes = std::fs::read(set)
                .map_err(|e| bad(format!("cannot read --protoset {shown}: {e}")))?;
            grpc::from_protoset(&bytes, &shown).map_err(bad)?
        }
        (None, None) => {
            return Err(bad(
                "a grpc:// URL needs the service's descriptors: --proto FILE (with -I for its \
                 imports), --protoset FILE, or --reflect",
            ))
        }
    })
}

/// `--reflect`: the descriptors of `call`'s service from the server, asked over the run's
/// own connection settings (its address, its TLS, verified as the run will be).
fn reflected(
    spec: &LoadSpec,
    url: &str,
    call: &str,
    here: Here,
) -> Result<prost_reflect::DescriptorPool, SpecError> {
    if here == Here::Describes {
        return Err(bad(
            "--reflect asks the server, which pelt k8s does not reach: give --proto or --protoset",
        ));
    }
    if spec.unix_socket.is_some() {
        return Err(bad(
            "--reflect does not go over --unix-socket: give --proto or --protoset",
        ));
    }
    let service = service_of(call);
    let target = target::resolve(url).map_err(bad)?;
    let mut h2 = spec.clone();
    h2.http2 = true;
    let tls = tls_client(&h2, &target)?;
    let server = grpc::reflect::Server {
        addr: target.addr,
        authority: &target.host_header,
        tls: tls.as_ref(),
        timeout: spec.timeout,
    };
    grpc::reflect::descriptors(&server, service).map_err(bad)
}

/// The message is protobuf's binary form: a `--body-file` named `.bin`, `.pb` or `.binpb`
/// (else it is JSON, protobuf's canonical mapping).
fn binary(spec: &LoadSpec) -> bool {
    let Body::File(p) = &spec.body else {
        return false;
    };
    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or_default();
    ["bin", "pb", "binpb"].contains(&ext)
}

/// The message's bytes, as --body or --body-file give them.
fn body_of(spec: &LoadSpec) -> Result<Vec<u8>, SpecError> {
    Ok(match &spec.body {
        Body::None => Vec::new(),
        Body::Bytes(b) => b.clone(),
        Body::File(p) => std::fs::read(p)
            .map_err(|e| bad(format!("cannot read --body-file {}: {e}", p.display())))?,
    })
}

/// The user's headers as the call's metadata: a `-bin` key's value must be base64 (gRPC sends
/// binary metadata so), and gRPC's own fields are pelt's to set.
fn metadata(spec: &LoadSpec) -> Result<Vec<String>, SpecError> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let b64_unpadded = base64::engine::general_purpose::STANDARD_NO_PAD;
    for h in &spec.headers {
        let (name, value) = pelt_codec::request::parse_header(h).map_err(|e| {
            let shown = values::quote(&values::masked_header(h));
            bad(format!("invalid header {shown}: {e}"))
        })?;
        let name = name.to_ascii_lowercase();
        if ["content-type", "te", "grpc-timeout"].contains(&name.as_str()) {
            return Err(bad(format!(
                "-H {name}: pelt sets it on a gRPC call (grpc-timeout from --timeout)"
            )));
        }
        if name.ends_with("-bin")
            && b64.decode(value.trim()).is_err()
            && b64_unpadded.decode(value.trim()).is_err()
        {
            return Err(bad(format!(
                "-H {name}: a -bin metadata value is base64 (gRPC's binary metadata)"
            )));
        }
    }
    Ok(spec.headers.clone())
}

//! Requests encoded once: the single request, or a set of them with their names, shared with
//! a targets file read as the run goes (`streamed.rs`).

use super::*;
use engine::scenario::Text;

/// The requests as the engine sends them: the one request, HTTP/2's, the set of many, and
/// what the report says of them.
pub(super) struct Encoded {
    pub(super) request: Vec<u8>,
    pub(super) http2: Option<engine::Http2>,
    pub(super) set: Option<engine::RequestSet>,
    pub(super) set_info: Option<RequestSetInfo>,
    /// The report's method: the one all entries use, or each used, in order.
    pub(super) method: String,
    /// The recording's latencies by target name number.
    pub(super) recorded: Vec<Option<pelt_stats::LatencyHistogram>>,
}

impl Encoded {
    pub(super) fn of(
        spec: &LoadSpec,
        target: &target::Target,
        headers: &[(String, String)],
        body: Vec<u8>,
        entries: &Option<Entries>,
        url: &str,
        open: bool,
    ) -> Result<Encoded, SpecError> {
        let scheme = if target.tls_host.is_some() {
            "https"
        } else {
            "http"
        };
        // Many requests are sent from their set; the one request is for a run without.
        let request = match entries {
            Some(_) => Vec::new(),
            None => pelt_codec::RequestSpec {
                method: &spec.method,
                path: &target.path,
                host: &target.host_header,
                headers,
                body: &body,
                keep_alive: spec.keep_alive,
            }
            .encode()
            .map_err(|e| bad(format!("invalid request: {e}")))?,
        };
        let mut http2 = spec.http2.then(|| engine::Http2 {
            header_block: pelt_codec::h2::encode_headers(
                &spec.method,
                scheme,
                &target.host_header,
                &target.path,
                headers,
                body.len(),
            ),
            body: Vec::new(),
            streams: spec.streams.unwrap_or(if open { 100 } else { 1 }),
            targets: Vec::new(),
            grpc: None,
        });
        let mut e = Encoded {
            request,
            http2: None,
            set: None,
            set_info: None,
            method: spec.method.clone(),
            recorded: Vec::new(),
        };
        if let Some(entries) = entries {
            let (list, from) = (&entries.list, &entries.from);
            let mut methods: Vec<&str> = Vec::new();
            for t in list {
                let m = t.method.as_deref().unwrap_or(&spec.method);
                if !methods.contains(&m) {
                    methods.push(m);
                }
            }
            e.method = methods.join(",");
            let (set, h2_requests, info, recorded) =
                build_set(spec, entries, url, headers, &body, http2.is_some())?;
            e.recorded = recorded;
            if let Some(h) = http2.as_mut() {
                h.targets = h2_requests;
            }
            e.set_info = Some(RequestSetInfo {
                from: from.0,
                file: from.1.clone(),
                skipped: entries.skipped.clone(),
                ..info
            });
            e.set = Some(set);
        }
        if let Some(h) = http2.as_mut() {
            h.body = body;
        }
        e.http2 = http2;
        Ok(e)
    }
}

/// What [`build_set`] makes: the HTTP/1.1 set, the HTTP/2 requests, what the report says of
/// them, and the recording's latencies by target name number.
pub(super) type BuiltSet = (
    engine::RequestSet,
    Vec<engine::H2Request>,
    RequestSetInfo,
    Vec<Option<pelt_stats::LatencyHistogram>>,
);

/// Encodes every entry once, checking each is on the run's origin: the HTTP/1.1 set, the
/// HTTP/2 requests (when `h2`), and what the report says of them.
pub(super) fn build_set(
    spec: &LoadSpec,
    entries: &Entries,
    origin: &str,
    headers: &[(String, String)],
    body: &[u8],
    h2: bool,
) -> Result<BuiltSet, SpecError> {
    let (list, from, steps) = (&entries.list, &entries.from, &entries.steps[..]);
    let chosen = spec.seed.unwrap_or_else(clock_seed);
    let order = match spec.order {
        TargetOrder::Sequential => engine::Order::Sequential,
        TargetOrder::Random => engine::Order::Random { seed: chosen },
    };
    let first = target::parse(origin).map_err(bad)?;
    let mut b = SetBuilder {
        spec,
        from,
        headers,
        body,
        h2,
        first: &first,
        set: engine::RequestSet::new(order),
        files: LineFiles::default(),
        h2_requests: Vec::new(),
        names: Names::default(),
        steps,
    };
    b.set.seed = chosen;
    for (k, e) in list.iter().enumerate() {
        b.add(k, e)?;
    }
    let SetBuilder {
        mut set,
        files,
        h2_requests,
        names,
        ..
    } = b;
    set.set_lines(files.files);
    let mut recorded = Vec::new();
    if matches!(from.0, SetFrom::Targets | SetFrom::Scenario) {
        let (names, name_of, by_name) = names.into_parts();
        set.set_names(names, name_of);
        recorded = by_name;
    }
    let random = matches!(order, engine::Order::Random { .. });
    let info = RequestSetInfo {
        from: from.0,
        file: None,
        entries: set.len(),
        order: if random {
            SetOrder::Random
        } else {
            SetOrder::Sequential
        },
        // What random draws (the order, {{rand}}, {{uuid}}) came from.
        seed: (random || set.has_templates()).then_some(chosen),
        skipped: None,
        encoded_bytes: set.bytes().len()
            + h2_requests
                .iter()
                .map(|r| r.header_block.len() + r.body.len())
                .sum::<usize>(),
    };
    Ok((set, h2_requests, info, recorded))
}

/// The request set as its entries are encoded into it.
pub(crate) struct SetBuilder<'a> {
    pub(super) spec: &'a LoadSpec,
    pub(super) from: &'a From,
    /// The command line's headers and body (an entry's own come after, or instead).
    pub(super) headers: &'a [(String, String)],
    pub(super) body: &'a [u8],
    pub(super) h2: bool,
    /// The run's origin.
    pub(super) first: &'a target::Parsed,
    pub(super) set: engine::RequestSet,
    pub(super) files: LineFiles,
    pub(super) h2_requests: Vec<engine::H2Request>,
    pub(super) names: Names,
    /// A scenario's steps' texts, as parts (entry k step k); empty without one.
    pub(super) steps: &'a [StepText],
}

/// A scenario step's marked URL on the run's origin: `shown` is the URL the entry shows (a path
/// on the origin was made whole there), `marked` its text marked from its parts.
fn step_url(shown: &str, marked: &str) -> String {
    match shown.find("://") {
        Some(_) if marked.starts_with('/') => {
            let origin = url::Url::parse(shown)
                .map(|u| u.origin().ascii_serialization())
                .unwrap_or_default();
            format!("{origin}{marked}")
        }
        _ => marked.to_string(),
    }
}

/// An entry handed on: its bytes, whether it is a HEAD request, its name number.
pub(crate) type OneEntry<'a> = (&'a [u8], bool, u32);

/// What a [`SetBuilder`] that hands each entry on keeps between entries: its set (one entry
/// at a time) and the names it has numbered.
#[derive(Default)]
pub(crate) struct EncoderState {
    pub(super) set: engine::RequestSet,
    pub(super) names: Names,
}

impl<'a> SetBuilder<'a> {
    /// A builder that encodes one entry at a time and hands it on (a streamed recording:
    /// HTTP/1.1, no scenario), from `state`.
    pub(crate) fn one_by_one(
        spec: &'a LoadSpec,
        from: &'a From,
        headers: &'a [(String, String)],
        body: &'a [u8],
        first: &'a target::Parsed,
        state: EncoderState,
    ) -> SetBuilder<'a> {
        SetBuilder {
            spec,
            from,
            headers,
            body,
            h2: false,
            first,
            set: state.set,
            files: LineFiles::default(),
            h2_requests: Vec::new(),
            names: state.names,
            steps: &[],
        }
    }

    /// Encodes entry `k` and hands it on: its bytes, whether it is a HEAD request, and its
    /// name number; `None` when it has templates (its bytes change per request).
    pub(crate) fn encode(
        &mut self,
        k: usize,
        e: &TargetEntry,
    ) -> Result<Option<OneEntry<'_>>, SpecError> {
        self.set.clear();
        self.names.name_of.clear();
        self.add(k, e)?;
        if self.set.has_templates() || !self.files.files.is_empty() {
            return Ok(None);
        }
        let name = self.names.name_of.first().copied().unwrap_or(0);
        Ok(Some((self.set.bytes(), self.set.is_head(0), name)))
    }

    /// What it keeps between entries.
    pub(crate) fn into_state(self) -> EncoderState {
        EncoderState {
            set: self.set,
            names: self.names,
        }
    }
}

impl EncoderState {
    /// The names numbered, in order of their numbers, and the recording's latencies by name.
    pub(crate) fn into_names(self) -> (Vec<String>, Vec<Option<pelt_stats::LatencyHistogram>>) {
        let (names, _, recorded) = self.names.into_parts();
        (names, recorded)
    }
}

impl SetBuilder<'_> {
    /// Encodes entry `k`.
    pub(crate) fn add(&mut self, k: usize, e: &TargetEntry) -> Result<(), SpecError> {
        let spec = self.spec;
        // Where an entry came from, for a message (built only for one).
        let at = Where(self.from, e.line, k);
        let mut m = Marked::default();
        let files = &mut self.files;
        // A scenario step's texts are marked from their parts (its variables as they are).
        let step = self.steps.get(k);
        let mut mark = |text: &str, parts: Option<&Text>, part: &str| match parts {
            Some(parts) => m.mark_parts(parts, &at.with(part), files).map_err(bad),
            None if !text.contains("{{") => Ok(text.to_string()),
            None => m.mark(text, &at.with(part), files).map_err(bad),
        };
        // A URL without templates is parsed where it is (it may be megabytes long).
        let marked_url = match step {
            Some(s) => Some(step_url(&e.url, &mark(&e.url, Some(&s.url), "URL")?)),
            None if e.url.contains("{{") => Some(mark(&e.url, None, "URL")?),
            None => None,
        };
        let url = marked_url.as_deref().unwrap_or(&e.url);
        let p = target::parse(url).map_err(|err| bad(format!("{}{err}", at.prefix())))?;
        let first = self.first;
        if (p.https, &p.host, p.port) != (first.https, &first.host, first.port) {
            return Err(bad(format!(
                "{at}: {} is not on {}://{}:{} like the run's URL; all targets share one \
                 origin (scheme, host and port)",
                values::quote(&e.url),
                if first.https { "https" } else { "http" },
                first.host,
                first.port
            )));
        }
        let method = e.method.as_deref().unwrap_or(&spec.method);
        pelt_codec::request::validate_method(method).map_err(|err| {
            bad(format!(
                "{at}: invalid method {}: {err}",
                values::quote(method)
            ))
        })?;
        let mut all = Vec::with_capacity(self.headers.len() + e.headers.len());
        for (name, value) in self.headers {
            all.push((name.clone(), mark(value, None, "header")?));
        }
        for (i, h) in e.headers.iter().enumerate() {
            let (name, value) = pelt_codec::request::parse_header(h)
                .map_err(|err| bad(format!("{at}: invalid header: {err}")))?;
            let parts = step.and_then(|s| s.headers.get(i));
            all.push((name, mark(&value, parts, "header")?));
        }
        let body = e.body.as_deref().unwrap_or(self.body);
        let step_body = step.and_then(|s| s.body.as_ref());
        let marked_body = match (std::str::from_utf8(body), step_body) {
            (_, Some(parts)) => Some(mark("", Some(parts), "body")?.into_bytes()),
            (Ok(text), None) if text.contains("{{") => Some(mark(text, None, "body")?.into_bytes()),
            _ => None,
        };
        let body = marked_body.as_deref().unwrap_or(body);
        let has_length = all
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-length"));
        if !m.is_empty() && has_length {
            return Err(bad(format!(
                "{}with templates Content-Length is written per request; drop -H Content-Length",
                at.prefix()
            )));
        }
        let bytes = pelt_codec::RequestSpec {
            method,
            path: &p.path,
            host: &p.host_header,
            headers: &all,
            body,
            keep_alive: spec.keep_alive,
        }
        .encode()
        .map_err(|err| bad(format!("{at}: invalid request: {err}")))?;
        let scenario = self.from.0 == SetFrom::Scenario;
        if self.from.0 == SetFrom::Targets || scenario {
            self.names.add(e, method, &p.path);
        }
        let head = method.eq_ignore_ascii_case("HEAD");
        if m.is_empty() && !scenario {
            self.set.push(&bytes, head);
        } else {
            let mut template = m.template(&bytes, body.len(), !body.is_empty());
            if scenario {
                // The user's cookies, after the step's own headers.
                template.push_value(false, engine::template::Value::Cookie);
            }
            self.set.push_template(&bytes, head, template);
        }
        if self.h2 {
            self.h2_requests.push(h2_request(method, &p, &all, body));
        }
        Ok(())
    }
}

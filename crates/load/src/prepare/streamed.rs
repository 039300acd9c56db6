//! A `--targets` file read as the run goes (`--targets-read stream`, or `auto` with a big
//! file), replayed or not: memory is the engine's look-ahead ([`pelt_engine::FEED_BLOCKS`]
//! blocks of [`pelt_engine::FEED_BLOCK`] encoded requests) and, for a replay, this module's
//! ([`crate::replay::LOOKAHEAD`] entries put in time order), whatever the file's length.
//!
//! A first pass reads the whole file line by line before any traffic, keeping nothing but
//! counts: every line parses (or is skipped with `--skip-bad-lines`), every entry is on the
//! run's origin (and a recording's in time order within the look-ahead), and it gives what the
//! run and its report need up front (the number of requests, a recording's span, the
//! per-target names and the recording's own latencies). Bad input is then one line before
//! traffic, as with a file read whole. The run reads the file again, on the engine's reader
//! thread (a [`Source`]), and again for each lap: a replay's with `--replay-loop`, plain
//! targets' until the run ends (or the source has given `-n` requests).
//!
//! JSON lines and access logs, from a file, over HTTP/1.1, without templates; plain targets
//! also in file order and without a warm-up (its requests would come out of `-n`). A HAR file
//! is one JSON document, read whole; standard input cannot be read twice.

use super::{EncoderState, From, SetBuilder};
use crate::replay::TimeOrder;
use crate::sources::{BadLines, TargetEntry, TargetsFormat};
use crate::spec::{LoadSpec, TargetOrder, TargetsRead};
use crate::{target, SpecError};
use pelt_engine::{Block, FeedSource};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// `--targets-read auto` streams a file of this many bytes or more.
pub const STREAM_FROM: u64 = 64 << 20;

/// What the first pass found: what the run and its report need before the run.
#[derive(Default)]
pub(crate) struct Scan {
    /// Requests in the file (once through).
    pub len: u64,
    /// A recording's: from its first request to its last, ns.
    pub span_ns: u64,
    /// The first request's URL (a recording's in time order): the run's origin without a URL
    /// argument.
    pub first_url: String,
    /// The methods sent, in order of first use, joined by commas.
    pub methods: String,
    /// Per-target names, and the recording's latencies by name number.
    pub names: Vec<String>,
    pub recorded: Vec<Option<pelt_stats::LatencyHistogram>>,
    /// The longest request, and all of them together, bytes.
    pub max_len: usize,
    pub encoded_bytes: u64,
    pub skipped: Option<pelt_stats::SkippedInfo>,
}

/// Whether this run reads its targets file as it goes: `Ok(None)` when not (it is read whole),
/// else the file and its format. `--targets-read stream` where it cannot be is an error.
pub(crate) fn chosen(spec: &LoadSpec) -> Result<Option<(PathBuf, TargetsFormat)>, SpecError> {
    if spec.targets_read == TargetsRead::Whole {
        return Ok(None);
    }
    let asked = spec.targets_read == TargetsRead::Stream;
    let refuse = |why: &str| match asked {
        true => Err(SpecError(format!("--targets-read stream: {why}"))),
        false => Ok(None),
    };
    let crate::spec::Requests::Targets {
        source: crate::sources::TargetsSource::File(path),
        format,
    } = &spec.requests_from
    else {
        return refuse("a --targets file is read as the run goes, not a list");
    };
    if path.as_os_str() == "-" {
        return refuse("standard input cannot be read twice (a first pass checks it): give a file");
    }
    if spec.http2 || spec.http3 {
        return refuse(
            "a targets file is read as the run goes over HTTP/1.1; drop --http2 or --http3",
        );
    }
    if spec.url.starts_with("ws") {
        return refuse("a targets file is read as the run goes over HTTP, not WebSocket");
    }
    let templated = |t: &str| t.contains("{{");
    if spec.headers.iter().any(|h| templated(h)) || templated(&spec.url) {
        return refuse("templates need the whole file: give --targets-read whole");
    }
    if !spec.replay.on {
        if spec.order != TargetOrder::Sequential {
            return refuse("--order random draws from the whole file: give --targets-read whole");
        }
        if spec.warmup.is_some() {
            return refuse(
                "a warm-up's requests would come out of the file's -n: give --targets-read whole",
            );
        }
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if !asked && size < STREAM_FROM {
        return Ok(None);
    }
    let format = match format {
        TargetsFormat::Auto => format.of(&head_of(path)),
        f => *f,
    };
    match format {
        TargetsFormat::Json | TargetsFormat::Nginx | TargetsFormat::Apache => {
            Ok(Some((path.clone(), format)))
        }
        _ => refuse(
            "JSON lines and access logs are read as the run goes (a HAR file, or vegeta's format, \
             is read whole)",
        ),
    }
}

/// The first 64 KiB of `path` (what [`TargetsFormat::of`] looks at); empty if unreadable (the
/// first pass then says why).
fn head_of(path: &Path) -> Vec<u8> {
    let mut head = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, 1 << 16), &mut head);
    }
    head
}

/// How a line becomes a target.
#[derive(Clone)]
enum Lines {
    Json,
    Log {
        format: crate::access_log::LogFormat,
        origin: String,
    },
}

/// One pass over the file: a recording's in time order, plain targets' in file order.
struct Pass {
    reader: std::io::BufReader<std::fs::File>,
    file: String,
    lines: Lines,
    line: String,
    number: usize,
    bad: BadLines,
    /// A recording's (`None`: plain targets, in file order).
    order: Option<TimeOrder>,
    /// Entries read (in file order).
    read: usize,
    ended: bool,
}

impl Pass {
    fn open(path: &Path, lines: &Lines, skip: bool, timed: bool) -> Result<Pass, String> {
        let file = path.display().to_string();
        let f =
            std::fs::File::open(path).map_err(|e| format!("cannot read --targets {file}: {e}"))?;
        Ok(Pass {
            reader: std::io::BufReader::with_capacity(1 << 20, f),
            order: timed.then(|| TimeOrder::new(&format!("--targets {file}"))),
            file,
            lines: lines.clone(),
            line: String::new(),
            number: 0,
            bad: BadLines {
                skip,
                ..BadLines::default()
            },
            read: 0,
            ended: false,
        })
    }

    /// The next entry (a recording's in time order, with its time in ns; else 0), `None` at
    /// the end.
    fn next(&mut self) -> Result<Option<(i128, TargetEntry)>, String> {
        while !self.ended {
            self.line.clear();
            let n = self
                .reader
                .read_line(&mut self.line)
                .map_err(|e| format!("--targets {} line {}: {e}", self.file, self.number + 1))?;
            if n == 0 {
                self.ended = true;
                break;
            }
            self.number += 1;
            let raw = self.line.trim_end_matches('\n');
            let parsed = match &self.lines {
                Lines::Json => crate::sources::json_line(raw, &self.file, self.number),
                Lines::Log { format, origin } => {
                    crate::access_log::line(raw, &self.file, self.number, origin, format)
                }
            };
            let entry = match parsed {
                Ok(Some(e)) => e,
                Ok(None) => continue,
                Err(problem) => {
                    self.bad.found(problem)?;
                    continue;
                }
            };
            let k = self.read;
            self.read += 1;
            let Some(order) = &mut self.order else {
                return Ok(Some((0, entry)));
            };
            if let Some(out) = order.push(k, entry)? {
                return Ok(Some(out));
            }
        }
        Ok(self.order.as_mut().and_then(TimeOrder::pop))
    }
}

/// What encodes each entry, owned (the engine's reader thread runs it).
struct Encoding {
    spec: LoadSpec,
    from: From,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    first: target::Parsed,
    state: Option<EncoderState>,
}

impl Encoding {
    /// Encodes the entries of a run on `origin`'s URL, as `spec` asks.
    fn new(
        spec: &LoadSpec,
        from: &From,
        headers: &[(String, String)],
        body: &[u8],
        origin: &str,
    ) -> Result<Encoding, String> {
        Ok(Encoding {
            spec: spec.clone(),
            from: from.clone(),
            headers: headers.to_vec(),
            body: body.to_vec(),
            first: target::parse(origin).map_err(|e| e.to_string())?,
            state: None,
        })
    }

    /// Encodes entry `k` and gives it to `take` (its bytes, HEAD flag and name number);
    /// `Ok(false)`: it has templates.
    fn encode(
        &mut self,
        k: usize,
        e: &TargetEntry,
        take: impl FnOnce(&[u8], bool, u32),
    ) -> Result<bool, SpecError> {
        let state = self.state.take().unwrap_or_default();
        let mut b = SetBuilder::one_by_one(
            &self.spec,
            &self.from,
            &self.headers,
            &self.body,
            &self.first,
            state,
        );
        let done = b.encode(k, e).map(|got| match got {
            Some((bytes, head, name)) => {
                take(bytes, head, name);
                true
            }
            None => false,
        });
        self.state = Some(b.into_state());
        done
    }
}

/// The file as the engine's reader reads it during the run.
struct Streamed {
    path: PathBuf,
    lines: Lines,
    skip: bool,
    /// A recording, read in time order.
    timed: bool,
    encoding: Encoding,
    pass: Pass,
    /// A recording's first time, ns (its entries' times are offsets from it).
    first_ns: i128,
    laps: bool,
    /// Entries this lap.
    in_lap: usize,
    /// Entries it may still give (`-n` of plain targets; `None`: no end but the file's).
    left: Option<u64>,
}

impl FeedSource for Streamed {
    fn fill(&mut self, block: &mut Block) -> Result<(), String> {
        while !block.is_full() && self.left != Some(0) {
            let Some((t, e)) = self.pass.next()? else {
                if !self.laps || self.in_lap == 0 {
                    return Ok(());
                }
                // The next lap: the file again, names numbered again as the first pass did.
                self.pass = Pass::open(&self.path, &self.lines, self.skip, self.timed)?;
                self.encoding.state = None;
                self.in_lap = 0;
                continue;
            };
            let recorded_ns = (t - self.first_ns).max(0) as u64;
            self.encoding
                .encode(self.in_lap, &e, |bytes, head, name| {
                    block.push(bytes, head, name, recorded_ns)
                })
                .map_err(|e| e.0)?;
            self.in_lap += 1;
            if let Some(left) = &mut self.left {
                *left -= 1;
            }
        }
        Ok(())
    }
}

/// The first pass over `path` (see the module's text), then the engine's feed that reads it
/// again during the run; `Ok(None)` when an entry has templates (it is read whole then).
pub(crate) fn prepare(
    spec: &LoadSpec,
    path: &Path,
    format: TargetsFormat,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Option<(Scan, pelt_engine::Feed)>, SpecError> {
    let file = path.display().to_string();
    let lines = match format {
        TargetsFormat::Json => Lines::Json,
        _ => {
            let (format, origin) = super::log_layout(spec, &file)?;
            Lines::Log { format, origin }
        }
    };
    let skip = spec.skip_bad_lines;
    let timed = spec.replay.on;
    let mut pass = Pass::open(path, &lines, skip, timed).map_err(SpecError)?;
    let from: From = (pelt_stats::SetFrom::Targets, Some(file.clone()));
    let mut encoding: Option<Encoding> = None;
    let mut scan = Scan::default();
    let (mut first_ns, mut last_ns) = (0i128, 0i128);
    let mut methods: Vec<String> = Vec::new();
    while let Some((t, e)) = pass.next().map_err(SpecError)? {
        let enc = match &mut encoding {
            Some(enc) => enc,
            None => {
                // The run's origin: the URL argument's, else the first request's.
                let origin = match spec.url.is_empty() {
                    true => e.url.clone(),
                    false => spec.url.clone(),
                };
                scan.first_url.clone_from(&e.url);
                first_ns = t;
                encoding
                    .insert(Encoding::new(spec, &from, headers, body, &origin).map_err(SpecError)?)
            }
        };
        let method = e.method.as_deref().unwrap_or(&spec.method);
        if !methods.iter().any(|m| m == method) {
            methods.push(method.to_string());
        }
        let mut size = 0;
        if !enc.encode(scan.len as usize, &e, |bytes, _, _| size = bytes.len())? {
            return Ok(None);
        }
        scan.max_len = scan.max_len.max(size);
        scan.encoded_bytes += size as u64;
        scan.len += 1;
        last_ns = t;
    }
    let Some(encoding) = encoding else {
        let what = match format {
            TargetsFormat::Json => "no targets in it",
            _ => "no requests in it",
        };
        return Err(SpecError(format!("--targets {file}: {what}")));
    };
    scan.span_ns = (last_ns - first_ns).max(0) as u64;
    scan.methods = methods.join(",");
    let (names, recorded) = encoding.state.unwrap_or_default().into_names();
    scan.names = names;
    scan.recorded = recorded;
    if pass.bad.count > 0 {
        scan.skipped = Some(pelt_stats::SkippedInfo {
            bad_lines: pass.bad.count,
            first_bad: pass.bad.first.clone(),
            other_origins: 0,
            origin: None,
        });
    }
    let (spec, path) = (spec.clone(), path.to_path_buf());
    let (headers, body) = (headers.to_vec(), body.to_vec());
    let origin = match spec.url.is_empty() {
        true => scan.first_url.clone(),
        false => spec.url.clone(),
    };
    let feed = pelt_engine::Feed::new(Box::new(move || {
        let pass = Pass::open(&path, &lines, skip, timed)?;
        Ok(Box::new(Streamed {
            path: path.clone(),
            lines: lines.clone(),
            skip,
            timed,
            encoding: Encoding::new(&spec, &from, &headers, &body, &origin)?,
            pass,
            first_ns,
            // Plain targets loop until the run ends, or until `-n` (the source's end).
            laps: spec.replay.laps || !timed,
            in_lap: 0,
            left: spec.requests.filter(|_| !timed),
        }) as Box<dyn FeedSource>)
    }));
    Ok(Some((scan, feed)))
}

//! Many requests: a targets file, an access log or a HAR read into entries.

use super::*;

/// Where many requests came from: `targets` or `bodies`, and the file.
pub(crate) type From = (SetFrom, Option<String>);

/// A run's many requests: the entries, where they came from, and (a scenario's) each entry's
/// step, whose texts are encoded from their parts.
pub(crate) struct Entries {
    pub list: Vec<TargetEntry>,
    pub from: From,
    /// A scenario's steps' texts, entry k step k (empty otherwise).
    pub steps: Vec<StepText>,
    /// What the file held that is left out.
    pub skipped: Option<pelt_stats::SkippedInfo>,
}

/// A scenario step's texts as parts (literals and variables): its URL, its headers' values (in
/// the order of the entry's headers) and its body.
pub(crate) struct StepText {
    pub url: engine::scenario::Text,
    pub headers: Vec<engine::scenario::Text>,
    pub body: Option<engine::scenario::Text>,
}

impl Entries {
    pub(super) fn of(list: Vec<TargetEntry>, from: From) -> Entries {
        Entries {
            list,
            from,
            steps: Vec::new(),
            skipped: None,
        }
    }
}

/// The entries of `--targets` or `--bodies`, read completely (`None`: one request).
pub(crate) fn entries(spec: &LoadSpec, body: &[u8]) -> Result<Option<Entries>, SpecError> {
    let log = |f: &TargetsFormat| matches!(f, TargetsFormat::Nginx | TargetsFormat::Apache);
    if spec.log_format.is_some()
        && !matches!(&spec.requests_from, Requests::Targets { format, .. } if log(format))
    {
        return Err(bad(
            "--log-format is the layout of an access log: give it with --targets FILE \
             --targets-format nginx (or apache)",
        ));
    }
    match &spec.requests_from {
        Requests::One => {
            // A request with templates is a set of one: its bytes change per request.
            let templated = spec.url.contains("{{")
                || spec.headers.iter().any(|h| h.contains("{{"))
                || std::str::from_utf8(body).is_ok_and(|b| b.contains("{{"));
            Ok(templated.then(|| {
                let one = TargetEntry {
                    url: spec.url.clone(),
                    ..TargetEntry::default()
                };
                Entries::of(vec![one], (SetFrom::Url, None))
            }))
        }
        Requests::Targets { source, format } => match source {
            TargetsSource::List(list) if list.is_empty() => {
                Err(bad("no targets given (the list is empty)"))
            }
            TargetsSource::List(list) => {
                Ok(Some(Entries::of(list.clone(), (SetFrom::Targets, None))))
            }
            TargetsSource::File(path) => {
                let text = sources::read_input(path, "--targets").map_err(bad)?;
                let name = path.display().to_string();
                targets_file(spec, &text, name, format.of(&text)).map(Some)
            }
        },
        Requests::Bodies(path) => {
            if spec.url.is_empty() {
                return Err(bad("--bodies needs a URL to send them to"));
            }
            let text = sources::read_input(path, "--bodies").map_err(bad)?;
            let name = path.display().to_string();
            let bodies = sources::parse_bodies(&text, &name).map_err(bad)?;
            let list = bodies
                .into_iter()
                .map(|(line, b)| TargetEntry {
                    url: spec.url.clone(),
                    body: Some(b),
                    line,
                    ..TargetEntry::default()
                })
                .collect();
            Ok(Some(Entries::of(list, (SetFrom::Bodies, Some(name)))))
        }
        Requests::Prompts(prompts) => {
            if spec.url.is_empty() {
                return Err(bad("--prompts needs a URL to send them to"));
            }
            let list = prompts
                .entries(&spec.url, spec.seed.unwrap_or(0))
                .map_err(bad)?;
            let file = prompts.file.as_ref().map(|p| p.display().to_string());
            Ok(Some(Entries::of(list, (SetFrom::Prompts, file))))
        }
        // Compiled by `scenario_program`, made entries by `scenario_entries`.
        Requests::Scenario(_) => Ok(None),
    }
}

/// The entries of targets file `name` in `format`, with what was skipped.
pub(super) fn targets_file(
    spec: &LoadSpec,
    text: &[u8],
    name: String,
    format: TargetsFormat,
) -> Result<Entries, SpecError> {
    let mut bad_lines = sources::BadLines {
        skip: spec.skip_bad_lines,
        ..Default::default()
    };
    let (list, other) = match format {
        TargetsFormat::Nginx | TargetsFormat::Apache => {
            (access_log(spec, text, &name, &mut bad_lines)?, None)
        }
        TargetsFormat::Har => {
            let text = std::str::from_utf8(text)
                .map_err(|e| bad(format!("--targets {name}: not UTF-8 text ({e})")))?;
            let har = crate::har::parse(text, &name, &spec.url, &mut bad_lines).map_err(bad)?;
            let other = (har.other_origins > 0).then_some((har.other_origins, har.origin));
            (har.entries, other)
        }
        _ => (
            sources::parse_targets(text, &name, format, &mut bad_lines).map_err(bad)?,
            None,
        ),
    };
    let skipped = (bad_lines.count > 0 || other.is_some()).then(|| pelt_stats::SkippedInfo {
        bad_lines: bad_lines.count,
        first_bad: bad_lines.first,
        other_origins: other.as_ref().map_or(0, |o| o.0),
        origin: other.map(|o| o.1),
    });
    Ok(Entries {
        skipped,
        ..Entries::of(list, (SetFrom::Targets, Some(name)))
    })
}

/// An access log's requests, on the URL argument's origin.
pub(super) fn access_log(
    spec: &LoadSpec,
    text: &[u8],
    file: &str,
    bad_lines: &mut sources::BadLines,
) -> Result<Vec<TargetEntry>, SpecError> {
    let (format, origin) = log_layout(spec, file)?;
    let text = std::str::from_utf8(text)
        .map_err(|e| bad(format!("--targets {file}: not UTF-8 text ({e})")))?;
    crate::access_log::parse(text, file, &origin, &format, bad_lines).map_err(bad)
}

/// An access log's layout (`--log-format`, else the combined format) and the origin its
/// requests go to (the URL argument's).
pub(crate) fn log_layout(
    spec: &LoadSpec,
    file: &str,
) -> Result<(crate::access_log::LogFormat, String), SpecError> {
    let format = crate::access_log::LogFormat::new(
        spec.log_format
            .as_deref()
            .unwrap_or(crate::access_log::COMBINED),
    )
    .map_err(bad)?;
    let origin = url::Url::parse(&spec.url)
        .ok()
        .filter(|u| u.has_host())
        .map(|u| u.origin().ascii_serialization())
        .ok_or_else(|| {
            bad(format!(
                "--targets {file} is an access log: give the URL of the server to send its \
                 requests to (a log has no host)"
            ))
        })?;
    Ok((format, origin))
}

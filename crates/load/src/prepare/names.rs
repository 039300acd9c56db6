//! What the messages and the report call each entry: where it came from, and its per-target
//! name.

use super::*;

/// Names an entry in a message: `--targets FILE line N`, `target N` of a program's list, or
/// nothing for the command line's own request.
pub(super) struct Where<'a>(pub(super) &'a From, pub(super) usize, pub(super) usize);

impl Where<'_> {
    /// `WHERE: ` before a message (empty for the command line's request).
    pub(super) fn prefix(&self) -> String {
        match self.0 .0 {
            SetFrom::Url => String::new(),
            _ => format!("{self}: "),
        }
    }

    /// `WHERE, PART` (or `PART` for the command line's request).
    pub(super) fn with(&self, part: &str) -> String {
        match self.0 .0 {
            SetFrom::Url => part.to_string(),
            _ => format!("{self}, {part}"),
        }
    }
}

impl std::fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            (SetFrom::Url, _) => write!(f, "the request"),
            (kind, Some(file)) => write!(f, "--{} {file} line {}", kind.name(), self.1),
            (kind, None) => write!(f, "{} {}", kind.name().trim_end_matches('s'), self.2 + 1),
        }
    }
}

/// Per-target names: a target's `name`, else its method and path without the query (with any
/// template as typed). The first [`pelt_stats::MAX_TARGET_NAMES`] distinct names get figures
/// of their own; the rest share [`pelt_stats::OTHER`].
#[derive(Default)]
pub(crate) struct Names {
    /// Each distinct name and its number (kept once: a name may be as long as its URL).
    pub(super) index: std::collections::HashMap<String, u32>,
    pub(super) name_of: Vec<u32>,
    pub(super) other: Option<u32>,
    /// The recording's latencies (`recorded_us`), by name number.
    pub(super) recorded: Vec<Option<pelt_stats::LatencyHistogram>>,
}

impl Names {
    /// Names entry `e`, whose URL's path is `path`.
    pub(super) fn add(&mut self, e: &TargetEntry, method: &str, path: &str) {
        let name = match &e.name {
            Some(n) => n.clone(),
            None => {
                let path = path.split('?').next().unwrap_or("/");
                format!("{method} {}", as_typed(path))
            }
        };
        let next = self.index.len() as u32 + u32::from(self.other.is_some());
        let n = match self.index.get(&name) {
            Some(&n) => n,
            None if self.other.is_none() && self.index.len() < pelt_stats::MAX_TARGET_NAMES => {
                self.index.insert(name, next);
                next
            }
            None => *self.other.get_or_insert(next),
        };
        self.name_of.push(n);
        if let Some(us) = e.recorded_us {
            if self.recorded.len() <= n as usize {
                self.recorded.resize(n as usize + 1, None);
            }
            self.recorded[n as usize]
                .get_or_insert_with(pelt_stats::LatencyHistogram::coarse)
                .record(us);
        }
    }

    /// The names in order of their numbers, each entry's number, and the recording's
    /// latencies by number.
    pub(super) fn into_parts(
        mut self,
    ) -> (
        Vec<String>,
        Vec<u32>,
        Vec<Option<pelt_stats::LatencyHistogram>>,
    ) {
        let count = self.index.len() + usize::from(self.other.is_some());
        let mut names = vec![String::new(); count];
        for (name, n) in self.index {
            names[n as usize] = name;
        }
        if let Some(n) = self.other {
            names[n as usize] = pelt_stats::OTHER.to_string();
        }
        self.recorded.resize(count, None);
        (names, self.name_of, self.recorded)
    }
}

/// A template's braces as typed (the URL parser percent-encodes them in the path).
pub(super) fn as_typed(path: &str) -> std::borrow::Cow<'_, str> {
    if path.contains("%7B%7B") || path.contains("%7D%7D") {
        path.replace("%7B%7B", "{{").replace("%7D%7D", "}}").into()
    } else {
        path.into()
    }
}

//! `--replay`: a recording's times become its requests' due times.
//!
//! Every target carries its recorded time (`"t"` in a JSON-lines file: milliseconds from the
//! start, or an RFC 3339 time). The targets are put in time order with a bounded look-ahead
//! (a recording written as requests end is a little out of order; one further out of order is
//! bad input, as a streaming read of a big recording would find it), then the engine's
//! [`Replay`](pelt_engine::Replay) sends request `i` at entry `i`'s time over the speed.

use crate::sources::{Recorded, TargetEntry};
use crate::spec::{LoadSpec, Requests};
use crate::SpecError;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How far out of time order a recording may be: a request recorded before one up to this
/// many entries ahead of it is put in its place; one further back is an error.
pub const LOOKAHEAD: usize = 10_000;

/// Checks what `--replay` goes with, puts `list` in time order and returns the due times;
/// `None` without `--replay`.
pub(crate) fn replay(
    spec: &LoadSpec,
    list: &mut Vec<TargetEntry>,
    file: Option<&str>,
) -> Result<Option<pelt_engine::Replay>, SpecError> {
    if !checked(spec)? {
        return Ok(None);
    }
    let at = file.map_or("--targets".to_string(), |f| format!("--targets {f}"));
    let times = in_time_order(list, &at).map_err(bad)?;
    pelt_engine::Replay::new(times, spec.replay.speed, spec.replay.laps)
        .map(Some)
        .map_err(|e| bad(format!("--replay: {e}")))
}

/// Checks what `--replay` goes with; whether it is on.
pub(crate) fn checked(spec: &LoadSpec) -> Result<bool, SpecError> {
    if !spec.replay.on {
        if spec.replay != Default::default() {
            return Err(bad("--replay-speed and --replay-loop go with --replay"));
        }
        return Ok(false);
    }
    if !matches!(spec.requests_from, Requests::Targets { .. }) {
        return Err(bad(
            "--replay replays a recording: give it with --targets (JSON lines with \"t\")",
        ));
    }
    let refuse = |what: &str, why: &str| Err(bad(format!("--replay and {what}: {why}")));
    if spec.rate.is_some() || !spec.stages.is_empty() {
        return refuse(
            "--rate or --stages",
            "the recording's times are the schedule (--replay-speed scales them)",
        );
    }
    if spec.arrival != pelt_stats::Arrival::Constant {
        return refuse("--arrival", "the recording's times are the arrivals");
    }
    if spec.warmup.is_some() {
        return refuse("--warmup", "every request of the recording is measured");
    }
    if spec.order != crate::spec::TargetOrder::Sequential {
        return refuse("--order random", "a recording is replayed in its order");
    }
    Ok(true)
}

/// Sorts `list` by recorded time with a look-ahead of [`LOOKAHEAD`] entries (stable: equal
/// times keep their order) and returns each entry's time, ns from the first.
fn in_time_order(list: &mut Vec<TargetEntry>, at: &str) -> Result<Vec<u64>, String> {
    let mut order = TimeOrder::new(at);
    let mut sorted = Vec::with_capacity(list.len());
    for (k, e) in std::mem::take(list).into_iter().enumerate() {
        sorted.extend(order.push(k, e)?);
    }
    sorted.extend(std::iter::from_fn(|| order.pop()));
    let first = sorted.first().map_or(0, |(t, _)| *t);
    let times = sorted.iter().map(|(t, _)| (t - first) as u64).collect();
    *list = sorted.into_iter().map(|(_, e)| e).collect();
    Ok(times)
}

/// Puts a recording's entries in time order as they are read, looking [`LOOKAHEAD`] entries
/// ahead (stable: equal times keep their order): an entry leaves when one more than the
/// look-ahead came after it. One recorded before an entry that has left is an error, as is one
/// without a time, or with a time of the other kind (offsets and RFC 3339 times mixed).
pub(crate) struct TimeOrder {
    /// Where the entries come from, for messages (`--targets FILE`).
    at: String,
    heap: BinaryHeap<Reverse<Keyed>>,
    /// The entries' times are RFC 3339 moments (else offsets); `None`: none read yet.
    absolute: Option<bool>,
    /// The latest entry that has left: its time, line and number.
    left: Option<(i128, usize, usize)>,
}

/// An entry with its time (ns) and its place in the file, ordered by those two.
struct Keyed(i128, usize, TargetEntry);

impl PartialEq for Keyed {
    fn eq(&self, other: &Keyed) -> bool {
        (self.0, self.1) == (other.0, other.1)
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Keyed) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Keyed) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(other.0, other.1))
    }
}

impl TimeOrder {
    pub fn new(at: &str) -> TimeOrder {
        TimeOrder {
            at: at.to_string(),
            heap: BinaryHeap::with_capacity(LOOKAHEAD + 1),
            absolute: None,
            left: None,
        }
    }

    /// Where the `k`th entry (from 0), on `line` (0: none), is, for a message.
    fn place(&self, line: usize, k: usize) -> String {
        match line {
            0 => format!("{} entry {}", self.at, k + 1),
            n => format!("{} line {n}", self.at),
        }
    }

    /// Takes the `k`th entry read; returns the entry that leaves, with its time (ns: from the
    /// epoch, or the recording's own offset).
    pub fn push(
        &mut self,
        k: usize,
        e: TargetEntry,
    ) -> Result<Option<(i128, TargetEntry)>, String> {
        let Some(t) = e.time else {
            return Err(format!(
                "{}: no \"t\": --replay needs every request's recorded time",
                self.place(e.line, k)
            ));
        };
        let (key, absolute) = match t {
            Recorded::Offset(ns) => (ns as i128, false),
            Recorded::At(ns) => (ns, true),
        };
        if *self.absolute.get_or_insert(absolute) != absolute {
            return Err(format!(
                "{}: \"t\" mixes offsets (milliseconds) and RFC 3339 times; use one kind",
                self.place(e.line, k)
            ));
        }
        if let Some(&(latest, line, j)) = self.left.as_ref().filter(|(t, ..)| key < *t) {
            return Err(format!(
                "{}: recorded {} ms before {}, over {LOOKAHEAD} requests ahead of it; pelt \
                 replays in time order, looking {LOOKAHEAD} requests ahead: sort the recording \
                 by time",
                self.place(e.line, k),
                (latest - key) / 1_000_000,
                self.place(line, j),
            ));
        }
        self.heap.push(Reverse(Keyed(key, k, e)));
        if self.heap.len() <= LOOKAHEAD {
            return Ok(None);
        }
        Ok(self.pop_keeping())
    }

    /// The earliest entry left, once every entry has been pushed.
    pub fn pop(&mut self) -> Option<(i128, TargetEntry)> {
        self.heap.pop().map(|Reverse(Keyed(t, _, e))| (t, e))
    }

    fn pop_keeping(&mut self) -> Option<(i128, TargetEntry)> {
        let Reverse(Keyed(t, k, e)) = self.heap.pop()?;
        if self.left.is_none_or(|(l, ..)| t > l) {
            self.left = Some((t, e.line, k));
        }
        Some((t, e))
    }
}

fn bad(message: impl Into<String>) -> SpecError {
    SpecError(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: usize, ms: u64) -> TargetEntry {
        TargetEntry {
            url: format!("http://127.0.0.1:1/{line}"),
            line,
            time: Some(Recorded::Offset(ms * 1_000_000)),
            ..TargetEntry::default()
        }
    }

    #[test]
    fn a_little_out_of_order_is_put_in_order_stably() {
        let mut list = vec![
            entry(1, 10),
            entry(2, 5),
            entry(3, 5),
            entry(4, 30),
            entry(5, 20),
        ];
        let times = in_time_order(&mut list, "--targets f").unwrap();
        let lines: Vec<usize> = list.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3, 1, 5, 4]);
        assert_eq!(times, [0, 0, 5_000_000, 15_000_000, 25_000_000]);
    }

    #[test]
    fn further_out_of_order_than_the_look_ahead_is_an_error() {
        let mut list: Vec<TargetEntry> = (0..LOOKAHEAD + 2)
            .map(|k| entry(k + 1, 100 + k as u64))
            .collect();
        list.push(entry(LOOKAHEAD + 3, 0));
        let e = in_time_order(&mut list, "--targets f").unwrap_err();
        assert!(
            e.starts_with(&format!(
                "--targets f line {}: recorded 101 ms before --targets f line 2",
                LOOKAHEAD + 3
            )),
            "{e}"
        );
        // Just within the look-ahead, it is put first.
        let mut list: Vec<TargetEntry> = (0..LOOKAHEAD)
            .map(|k| entry(k + 1, 100 + k as u64))
            .collect();
        list.push(entry(LOOKAHEAD + 1, 0));
        in_time_order(&mut list, "--targets f").unwrap();
        assert_eq!(list[0].line, LOOKAHEAD + 1);
    }

    #[test]
    fn every_request_needs_a_time_of_one_kind() {
        let mut list = vec![
            entry(1, 0),
            TargetEntry {
                line: 2,
                ..entry(2, 0)
            },
        ];
        list[1].time = None;
        let e = in_time_order(&mut list, "--targets f").unwrap_err();
        assert_eq!(
            e,
            "--targets f line 2: no \"t\": --replay needs every request's recorded time"
        );
        let mut list = vec![entry(1, 0), entry(2, 0)];
        list[1].time = Some(Recorded::At(5));
        let e = in_time_order(&mut list, "--targets f").unwrap_err();
        assert!(e.contains("mixes offsets"), "{e}");
    }
}

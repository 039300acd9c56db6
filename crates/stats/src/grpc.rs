//! gRPC runs (`grpc://`, `grpcs://`): each call's status, and the result's `grpc` section.
//!
//! A call is a request and its response a response, booked with its HTTP status as any HTTP/2
//! response is (so `requests`, latency and errors mean what they mean for HTTP): a call the
//! server answered with a status, any status, is a response. This section adds what gRPC's
//! users read: calls by **gRPC status** (from the `grpc-status` trailer, or the client's own
//! where the call broke gRPC's rules), the first `grpc-message` of each status, and the
//! messages the calls received. HTTP/2 failures (a reset stream, a closed
//! connection) are errors, apart.

use pelt_codec::grpc::{code_name, CODE_NAMES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Codes gRPC defines (0..=16), counted in place; any other is kept by number.
const KNOWN: usize = CODE_NAMES.len();

/// What one worker (or a merge of them) counted of its gRPC calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrpcStats {
    /// Calls that ended with a status, by code.
    calls: [u64; KNOWN],
    /// Calls with a code gRPC does not define (a server's own), by code.
    other: BTreeMap<u32, u64>,
    /// The first `grpc-message` (decoded) of each code that came with one.
    examples: BTreeMap<u32, String>,
    /// Response messages received whole.
    pub messages_received: u64,
}

impl GrpcStats {
    /// A call ended with status `code`; `message` (its `grpc-message`, decoded) is asked for
    /// only for the first call of a code.
    #[inline]
    pub fn record(&mut self, code: u32, message: impl FnOnce() -> Option<String>) {
        let first = match self.calls.get_mut(code as usize) {
            Some(n) => {
                *n += 1;
                *n == 1
            }
            None => {
                let n = self.other.entry(code).or_insert(0);
                *n += 1;
                *n == 1
            }
        };
        if first {
            if let Some(m) = message() {
                self.examples.insert(code, m);
            }
        }
    }

    /// Calls ended with status `code`.
    pub fn count(&self, code: u32) -> u64 {
        match self.calls.get(code as usize) {
            Some(n) => *n,
            None => self.other.get(&code).copied().unwrap_or(0),
        }
    }

    /// Every code counted, in ascending order, with its count.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let known = (0..KNOWN as u32).map(|c| (c, self.calls[c as usize]));
        known
            .chain(self.other.iter().map(|(c, n)| (*c, *n)))
            .filter(|(_, n)| *n > 0)
    }

    /// Calls by status name, the counts of `iter`.
    pub fn by_name(&self) -> BTreeMap<String, u64> {
        self.iter()
            .map(|(c, n)| (code_name(c).into_owned(), n))
            .collect()
    }

    /// Adds `other` (another worker's).
    pub fn merge(&mut self, other: &GrpcStats) {
        for (a, b) in self.calls.iter_mut().zip(other.calls) {
            *a += b;
        }
        for (c, n) in &other.other {
            *self.other.entry(*c).or_insert(0) += n;
        }
        for (c, m) in &other.examples {
            self.examples.entry(*c).or_insert_with(|| m.clone());
        }
        self.messages_received += other.messages_received;
    }

    /// The result's section.
    pub fn report(&self) -> GrpcReport {
        let status = self.by_name();
        GrpcReport {
            calls: status.values().sum(),
            ok: self.count(0),
            status,
            messages: self
                .examples
                .iter()
                .map(|(c, m)| (code_name(*c).into_owned(), m.clone()))
                .collect(),
            messages_received: self.messages_received,
        }
    }
}

/// One second's gRPC calls: those that ended with a status in it, and of them those OK (over
/// the whole timeline they add up to the `grpc` section's `calls` and `ok`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcPoint {
    pub calls: u64,
    pub ok: u64,
}

impl GrpcPoint {
    /// The second's calls by status name (`Detail::grpc`) as a point; `None` without calls.
    pub fn of(by_status: &BTreeMap<String, u64>) -> Option<GrpcPoint> {
        let calls: u64 = by_status.values().sum();
        (calls > 0).then(|| GrpcPoint {
            calls,
            ok: by_status.get("OK").copied().unwrap_or(0),
        })
    }

    /// Points joined (workers' or agents' same second, or the seconds a coarse point holds):
    /// `None` when none had calls.
    pub fn join<'a>(points: impl Iterator<Item = Option<&'a GrpcPoint>>) -> Option<GrpcPoint> {
        points.flatten().fold(None, |sum, p| {
            let sum = sum.unwrap_or_default();
            Some(GrpcPoint {
                calls: sum.calls + p.calls,
                ok: sum.ok + p.ok,
            })
        })
    }
}

/// The result's `grpc` section (a grpc:// or grpcs:// run; absent otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcReport {
    /// Calls that ended with a gRPC status (the run's responses).
    pub calls: u64,
    /// Of them, those with status OK.
    pub ok: u64,
    /// Calls by status name (`OK`, `UNAVAILABLE`, ...; a code gRPC does not define is
    /// `CODE_<n>`).
    pub status: BTreeMap<String, u64>,
    /// The first `grpc-message` of each status that came with one, by status name.
    pub messages: BTreeMap<String, String>,
    /// Response messages received whole.
    pub messages_received: u64,
}

impl GrpcReport {
    /// Adds `other` (another agent's or run's).
    pub fn merge(&mut self, other: &GrpcReport) {
        self.calls += other.calls;
        self.ok += other.ok;
        for (s, n) in &other.status {
            *self.status.entry(s.clone()).or_insert(0) += n;
        }
        for (s, m) in &other.messages {
            self.messages.entry(s.clone()).or_insert_with(|| m.clone());
        }
        self.messages_received += other.messages_received;
    }

    /// Calls with status `code`.
    pub fn count(&self, code: u32) -> u64 {
        self.status.get(&*code_name(code)).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_reports_equal_the_report_of_merged_stats() {
        let mut a = GrpcStats::default();
        a.record(0, || None);
        a.record(14, || Some("backend down".into()));
        a.record(14, || panic!("asked for the second call's message"));
        a.messages_received = 1;
        let mut b = GrpcStats::default();
        b.record(14, || Some("another".into()));
        b.record(42, || Some("custom".into()));
        b.record(0, || None);
        b.messages_received = 3;
        let mut whole = a.clone();
        whole.merge(&b);
        let mut merged = a.report();
        merged.merge(&b.report());
        assert_eq!(merged, whole.report());
        assert_eq!((merged.calls, merged.ok), (6, 2));
        assert_eq!(merged.status["UNAVAILABLE"], 3);
        assert_eq!(merged.status["CODE_42"], 1);
        assert_eq!(merged.messages["UNAVAILABLE"], "backend down");
        assert_eq!(merged.count(14), 3);
        assert_eq!(whole.count(42), 1);
        assert_eq!(
            whole.iter().collect::<Vec<_>>(),
            vec![(0, 2), (14, 3), (42, 1)]
        );
    }
}

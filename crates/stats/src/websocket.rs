//! WebSocket runs (`ws://`, `wss://`): what a worker counted of its sockets beyond the
//! messages themselves, and the result's `websocket` section.
//!
//! A message sent is a request and its reply a response (booked with the upgrade's status,
//! 101), so the run's latency is the messages' round trip; this section holds the rest: the
//! upgrades and their time, every data message received (replies and pushes), pings and
//! pongs, the server's close frames by code, and held sockets the server ended.

use crate::{LatencyHistogram, LatencySummary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one worker (or a merge of them) counted of its WebSocket connections.
#[derive(Debug, Clone, Default)]
pub struct WsStats {
    /// Upgrades the server accepted, and their time (handshake written -> 101 read), in
    /// microseconds.
    pub upgrades: u64,
    pub upgrade: LatencyHistogram,
    /// Data messages received, all of them, and their payload bytes.
    pub received: u64,
    pub received_bytes: u64,
    /// Of them, those that came with no message awaiting its reply (a server's pushes).
    pub pushed: u64,
    /// Pings the server sent (each answered with a pong), pings pelt sent, and pongs read.
    pub pings_received: u64,
    pub pings_sent: u64,
    pub pongs: u64,
    /// The server's close frames, by code (1005: a close frame without one).
    pub closes: BTreeMap<u16, u64>,
    /// Sockets the server ended (a close frame or a TCP close) that pelt had not asked to end.
    pub drops: u64,
    /// Sockets upgraded and open when the run ended (set at the end).
    pub held: u64,
}

impl WsStats {
    /// Adds `other` (another worker's).
    pub fn merge(&mut self, other: &WsStats) {
        self.upgrades += other.upgrades;
        self.upgrade.merge(&other.upgrade);
        self.received += other.received;
        self.received_bytes += other.received_bytes;
        self.pushed += other.pushed;
        self.pings_received += other.pings_received;
        self.pings_sent += other.pings_sent;
        self.pongs += other.pongs;
        for (code, n) in &other.closes {
            *self.closes.entry(*code).or_default() += n;
        }
        self.drops += other.drops;
        self.held += other.held;
    }

    /// The result's section, its rate over `duration_s`.
    pub fn report(&self, duration_s: f64) -> WebSocketReport {
        let mut r = WebSocketReport {
            upgrades: self.upgrades,
            upgrade_us: self.upgrade.summary(),
            held: self.held,
            drops: self.drops,
            messages_received: self.received,
            messages_received_per_s: 0.0,
            received_bytes: self.received_bytes,
            pushed: self.pushed,
            pings_received: self.pings_received,
            pings_sent: self.pings_sent,
            pongs: self.pongs,
            close_codes: self
                .closes
                .iter()
                .map(|(c, n)| (c.to_string(), *n))
                .collect(),
            histograms: WebSocketHistograms {
                upgrade_us: self.upgrade.clone(),
            },
        };
        r.set_rate(duration_s);
        r
    }
}

/// One second's WebSocket counts (`websocket` in a timeline point; absent for other runs):
/// what the second added to [`WsStats`]' counts, taken at each hand-over as the difference
/// of the totals (nothing is counted twice on the per-message path).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WsPoint {
    pub upgrades: u64,
    pub messages_received: u64,
    pub received_bytes: u64,
    pub pushed: u64,
    pub pings_received: u64,
    pub pings_sent: u64,
    pub pongs: u64,
    pub drops: u64,
}

impl WsPoint {
    /// The counts of `stats` (a worker's totals so far).
    pub fn of(stats: &WsStats) -> WsPoint {
        WsPoint {
            upgrades: stats.upgrades,
            messages_received: stats.received,
            received_bytes: stats.received_bytes,
            pushed: stats.pushed,
            pings_received: stats.pings_received,
            pings_sent: stats.pings_sent,
            pongs: stats.pongs,
            drops: stats.drops,
        }
    }

    /// What `now` (later totals) added to `self`.
    pub fn since(&self, now: &WsPoint) -> WsPoint {
        WsPoint {
            upgrades: now.upgrades - self.upgrades,
            messages_received: now.messages_received - self.messages_received,
            received_bytes: now.received_bytes - self.received_bytes,
            pushed: now.pushed - self.pushed,
            pings_received: now.pings_received - self.pings_received,
            pings_sent: now.pings_sent - self.pings_sent,
            pongs: now.pongs - self.pongs,
            drops: now.drops - self.drops,
        }
    }

    /// Adds `other` (another worker's same second, or the next seconds).
    pub fn merge(&mut self, other: &WsPoint) {
        self.upgrades += other.upgrades;
        self.messages_received += other.messages_received;
        self.received_bytes += other.received_bytes;
        self.pushed += other.pushed;
        self.pings_received += other.pings_received;
        self.pings_sent += other.pings_sent;
        self.pongs += other.pongs;
        self.drops += other.drops;
    }

    /// Points joined: `None` when none had WebSocket counts.
    pub fn join<'a>(points: impl Iterator<Item = Option<&'a WsPoint>>) -> Option<WsPoint> {
        points.flatten().fold(None, |sum, p| {
            let mut sum = sum.unwrap_or_default();
            sum.merge(p);
            Some(sum)
        })
    }
}

/// The result's `websocket` section (a ws:// or wss:// run; absent otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSocketReport {
    /// Upgrades the server accepted (101 with the right accept key).
    pub upgrades: u64,
    /// Upgrade time: the handshake request written -> the 101 read, microseconds.
    pub upgrade_us: LatencySummary,
    /// Sockets open and upgraded when the run ended.
    pub held: u64,
    /// Sockets the server ended while pelt held them (a close frame, or a TCP close).
    pub drops: u64,
    /// Data messages received: replies and pushes.
    pub messages_received: u64,
    pub messages_received_per_s: f64,
    /// Their payload bytes.
    pub received_bytes: u64,
    /// Messages received with none of pelt's awaiting a reply (the server pushed them).
    pub pushed: u64,
    pub pings_received: u64,
    pub pings_sent: u64,
    pub pongs: u64,
    /// The server's close frames by code ("1005": a close frame without a code).
    pub close_codes: BTreeMap<String, u64>,
    /// The histogram behind `upgrade_us`, so results merge exactly.
    pub histograms: WebSocketHistograms,
}

/// The histograms of the `websocket` section (HdrHistogram's compressed V2 encoding, base64).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSocketHistograms {
    pub upgrade_us: LatencyHistogram,
}

impl WebSocketReport {
    /// Sets `messages_received_per_s` over `duration_s`.
    pub fn set_rate(&mut self, duration_s: f64) {
        self.messages_received_per_s = if duration_s > 0.0 {
            self.messages_received as f64 / duration_s
        } else {
            0.0
        };
    }

    /// Adds `other` (another agent's or run's): counts add, the upgrade figures come from the
    /// merged histogram; the rate is the caller's to set.
    pub fn merge(&mut self, other: &WebSocketReport) {
        self.upgrades += other.upgrades;
        self.held += other.held;
        self.drops += other.drops;
        self.messages_received += other.messages_received;
        self.received_bytes += other.received_bytes;
        self.pushed += other.pushed;
        self.pings_received += other.pings_received;
        self.pings_sent += other.pings_sent;
        self.pongs += other.pongs;
        for (code, n) in &other.close_codes {
            *self.close_codes.entry(code.clone()).or_default() += n;
        }
        self.histograms
            .upgrade_us
            .merge(&other.histograms.upgrade_us);
        self.upgrade_us = self.histograms.upgrade_us.summary();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_reports_equal_the_report_of_merged_stats() {
        let mut a = WsStats {
            upgrades: 2,
            received: 5,
            held: 1,
            ..Default::default()
        };
        a.upgrade.record(100);
        a.upgrade.record(300);
        a.closes.insert(1000, 1);
        let mut b = WsStats {
            upgrades: 1,
            pushed: 3,
            received: 3,
            held: 2,
            ..Default::default()
        };
        b.upgrade.record(5000);
        b.closes.insert(1000, 2);
        b.closes.insert(1011, 1);
        let mut whole = a.clone();
        whole.merge(&b);
        let mut merged = a.report(2.0);
        merged.merge(&b.report(2.0));
        merged.set_rate(2.0);
        assert_eq!(merged, whole.report(2.0));
        assert_eq!(merged.held, 3);
        assert_eq!(merged.close_codes["1000"], 3);
        assert_eq!(merged.upgrade_us.p99_us, whole.upgrade.summary().p99_us);
        assert_eq!(merged.messages_received_per_s, 4.0);
    }

    #[test]
    fn a_seconds_counts_are_the_difference_of_the_totals() {
        let mut stats = WsStats {
            upgrades: 3,
            received: 10,
            ..Default::default()
        };
        let before = WsPoint::of(&stats);
        stats.upgrades += 1;
        stats.received += 7;
        stats.pushed += 2;
        stats.drops += 1;
        let second = before.since(&WsPoint::of(&stats));
        assert_eq!(
            second,
            WsPoint {
                upgrades: 1,
                messages_received: 7,
                pushed: 2,
                drops: 1,
                ..Default::default()
            }
        );
        let joined = WsPoint::join([Some(&before), None, Some(&second)].into_iter());
        assert_eq!(joined, Some(WsPoint::of(&stats)));
        assert_eq!(WsPoint::join([None, None].into_iter()), None);
    }
}

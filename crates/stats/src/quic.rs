//! HTTP/3 runs: what QUIC did underneath the requests, the result's `quic` section. The
//! requests, responses and errors are counted as for any HTTP run; these are the transport's
//! own counts a server's operator reads beside them (losses, congestion, flow control).

use serde::{Deserialize, Serialize};

/// What QUIC counted on one worker's connections (or a merge of them). Counts only: they add.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuicStats {
    /// UDP datagrams sent and received.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// QUIC packets sent, and those QUIC declared lost (their frames sent again as needed).
    pub packets_sent: u64,
    pub packets_lost: u64,
    /// The bytes of the packets lost.
    pub bytes_lost: u64,
    /// Losses that made pelt's sender slow down (its congestion window cut).
    pub congestion_events: u64,
    /// Flow control: DATA_BLOCKED, STREAM_DATA_BLOCKED and STREAMS_BLOCKED frames pelt sent
    /// (held back by the server's limits) and the server sent (held back by pelt's).
    pub blocked_by_server: u64,
    pub blocked_by_pelt: u64,
    /// `--tls-early-data`: connections whose requests went in 0-RTT and the server took
    /// them, or refused them; and the requests that went again after a refusal (each
    /// counted once, as sent and as answered).
    #[serde(default)]
    pub early_accepted: u64,
    #[serde(default)]
    pub early_refused: u64,
    #[serde(default)]
    pub early_resent: u64,
}

impl QuicStats {
    /// Adds `other` (another connection's, worker's or agent's).
    pub fn merge(&mut self, other: &QuicStats) {
        self.datagrams_sent += other.datagrams_sent;
        self.datagrams_received += other.datagrams_received;
        self.packets_sent += other.packets_sent;
        self.packets_lost += other.packets_lost;
        self.bytes_lost += other.bytes_lost;
        self.congestion_events += other.congestion_events;
        self.blocked_by_server += other.blocked_by_server;
        self.blocked_by_pelt += other.blocked_by_pelt;
        self.early_accepted += other.early_accepted;
        self.early_refused += other.early_refused;
        self.early_resent += other.early_resent;
    }

    /// What was counted since `before` (an earlier look at the same connection's counts).
    pub fn since(&self, before: &QuicStats) -> QuicStats {
        QuicStats {
            datagrams_sent: self.datagrams_sent - before.datagrams_sent,
            datagrams_received: self.datagrams_received - before.datagrams_received,
            packets_sent: self.packets_sent - before.packets_sent,
            packets_lost: self.packets_lost - before.packets_lost,
            bytes_lost: self.bytes_lost - before.bytes_lost,
            congestion_events: self.congestion_events - before.congestion_events,
            blocked_by_server: self.blocked_by_server - before.blocked_by_server,
            blocked_by_pelt: self.blocked_by_pelt - before.blocked_by_pelt,
            early_accepted: self.early_accepted - before.early_accepted,
            early_refused: self.early_refused - before.early_refused,
            early_resent: self.early_resent - before.early_resent,
        }
    }

    /// The sum of `points` (`None` when none is there: not an HTTP/3 run).
    pub fn join<'a>(points: impl Iterator<Item = Option<&'a QuicStats>>) -> Option<QuicStats> {
        points.flatten().fold(None, |sum, p| {
            let mut sum = sum.unwrap_or_default();
            sum.merge(p);
            Some(sum)
        })
    }

    /// The share of packets sent that were lost, in percent.
    pub fn loss_percent(&self) -> f64 {
        if self.packets_sent == 0 {
            return 0.0;
        }
        self.packets_lost as f64 * 100.0 / self.packets_sent as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_and_differences_undo_them() {
        let a = QuicStats {
            datagrams_sent: 10,
            datagrams_received: 9,
            packets_sent: 12,
            packets_lost: 3,
            bytes_lost: 3600,
            congestion_events: 1,
            blocked_by_server: 2,
            blocked_by_pelt: 5,
            early_accepted: 4,
            early_refused: 1,
            early_resent: 16,
        };
        let mut b = a;
        b.merge(&a);
        assert_eq!(b.packets_sent, 24);
        assert_eq!(b.blocked_by_pelt, 10);
        assert_eq!(b.early_resent, 32);
        assert_eq!(b.since(&a), a);
        assert_eq!(a.loss_percent(), 25.0);
        assert_eq!(QuicStats::default().loss_percent(), 0.0);
        let json = serde_json::to_value(a).unwrap();
        assert_eq!(json["packets_lost"], 3);
        assert_eq!(serde_json::from_value::<QuicStats>(json).unwrap(), a);
        // A result written before 0-RTT was counted reads as none.
        let mut old = serde_json::to_value(a).unwrap();
        for k in ["early_accepted", "early_refused", "early_resent"] {
            old.as_object_mut().unwrap().remove(k);
        }
        let old: QuicStats = serde_json::from_value(old).unwrap();
        assert_eq!((old.early_accepted, old.packets_lost), (0, 3));
    }
}

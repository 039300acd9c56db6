//! The closed sets of the result document (`io`, `http`, `load_model`, `arrival`,
//! `stopped_by`, `latency_from`): enums in the code, the same strings in the JSON.

use serde::{Deserialize, Serialize};

/// An enum whose variants serialize as the given strings, with `name()` and `Display`
/// giving the same string. Variants are listed in their order of `Ord`.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// The string the JSON result and the summary use.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// The I/O backend a run used.
    Io {
        Uring = "io_uring",
        Epoll = "epoll",
    }
}

named_enum! {
    /// The HTTP version a run spoke.
    Http {
        Http1 = "1.1",
        Http2 = "2",
        Http3 = "3",
    }
}

named_enum! {
    /// Closed loop: each connection sends its next request when a response completes. Open
    /// loop: requests are due on a fixed schedule (`--rate`).
    LoadModel {
        Closed = "closed",
        Open = "open",
    }
}

named_enum! {
    /// Open loop: how due times are spaced.
    Arrival {
        /// Evenly spaced: request i is due at i / rate.
        Constant = "constant",
        /// A Poisson process of the same mean rate (exponential gaps, seeded, reproducible).
        Poisson = "poisson",
    }
}

named_enum! {
    /// What ended a run, least significant first: when several workers (or merged runs) stopped
    /// for different reasons, the greatest is the run's.
    StopReason {
        /// Every request of the request-count limit ended.
        Requests = "requests",
        /// The duration elapsed.
        Duration = "duration",
        /// The caller's stop flag was set (Ctrl-C).
        Signal = "signal",
    }
}

named_enum! {
    /// Where a request's latency is measured from.
    LatencyFrom {
        /// Its actual send (closed loop).
        Send = "send",
        /// Its due time (open loop), so a stall shows in the requests behind it.
        Due = "due",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_as_the_documented_strings() {
        let all = serde_json::json!([
            Io::Uring,
            Io::Epoll,
            Http::Http1,
            Http::Http2,
            Http::Http3,
            LoadModel::Closed,
            LoadModel::Open,
            Arrival::Constant,
            Arrival::Poisson,
            StopReason::Requests,
            StopReason::Duration,
            StopReason::Signal,
            LatencyFrom::Send,
            LatencyFrom::Due,
        ]);
        assert_eq!(
            all.to_string(),
            r#"["io_uring","epoll","1.1","2","3","closed","open","constant","poisson","requests","duration","signal","send","due"]"#
        );
        let back: StopReason = serde_json::from_str("\"signal\"").unwrap();
        assert_eq!(back, StopReason::Signal);
        assert_eq!(Http::Http2.to_string(), "2");
        assert!(serde_json::from_str::<Io>("\"kqueue\"").is_err());
        assert!(StopReason::Signal > StopReason::Duration);
        assert!(StopReason::Duration > StopReason::Requests);
    }
}

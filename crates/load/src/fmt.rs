//! Numbers as the summary, the notes and the tables write them: pelt-stats' own, so the
//! verdict's sentences (made there) and the summary's write them alike.

pub use pelt_stats::fmt::*;

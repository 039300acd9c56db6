//! Studies: several runs that answer one question. `compare`: the same load against several
//! targets and settings, interleaved and repeated; `find_max`: the highest open-loop rate at
//! which every objective holds. Each prepares every run before any traffic and returns a
//! document the front ends render (the CLI as a table, CSV, HTML; Node.js as an object).

pub mod compare;
pub mod find_max;

pub use compare::{prepare_compare, Compare, CompareDoc, CompareSettings};
pub use find_max::{prepare_find_max, FindMax, FindMaxDoc, FindMaxSettings};

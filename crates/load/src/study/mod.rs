//! Studies: several runs that answer one question. `find_max`: the highest open-loop rate at
//! which every objective holds. Each prepares every run before any traffic and returns a
//! document the front ends render (the CLI as a table, CSV, HTML; Node.js as an object).

pub mod find_max;

pub use find_max::{prepare_find_max, FindMax, FindMaxDoc, FindMaxSettings};

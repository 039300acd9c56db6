//! `pelt find-max`'s own options (and Node.js's `findMax`): how the search goes. The run's
//! options are [`super::RUN`]'s.

use super::{Flag, Form, OptionError};
use crate::study::find_max::{FindMaxSettings, DEFAULT_PRECISION};
use crate::values;
use serde_json::{Map, Value};

type Row = Flag<FindMaxSettings>;
const BASE: Row = Flag::BASE;

fn precision(s: &str) -> Result<f64, String> {
    let v = values::share(s)?;
    if v < 0.001 {
        return Err("must be at least 0.1%".into());
    }
    Ok(v)
}

fn max_steps(s: &str) -> Result<usize, String> {
    values::count_at_most(s, 100)
}

fn rate(s: &str) -> Result<f64, String> {
    values::rate(s).map(|r| r.as_f64())
}

/// The search's settings of `options` (names as in [`FIND_MAX`]); at least one objective.
pub fn find_max(options: &Map<String, Value>) -> Result<FindMaxSettings, OptionError> {
    let mut s = FindMaxSettings::default();
    super::read_into(FIND_MAX, options, &mut s)?;
    if s.slo.is_empty() {
        return Err(super::range_error(format!(
            "the following required arguments were not provided: {}",
            FIND_MAX[0].shown()
        )));
    }
    Ok(s)
}

/// Every option of `pelt find-max` besides the run's, in its help's order.
pub static FIND_MAX: &[Row] = &[
    Row {
        name: "slo",
        long: "slo",
        value: "EXPR",
        form: Form::Many,
        hyphen: true,
        help: "An objective every step must meet, as --expect: p99<20ms, errors<0.1%, 5xx<1% \
               (repeatable, at least one).",
        example: r#"["p99<20ms"]"#,
        read: |s, g| {
            s.slo = super::expectations(g)?;
            Ok(())
        },
        write: |s| Ok(super::expectations_value(&s.slo)),
        ..BASE
    },
    Row {
        name: "start",
        long: "start",
        value: "RATE",
        help: "The first rate to try [default: half of what a closed-loop probe reaches].",
        ts: "number | string",
        example: r#""10k""#,
        read: |s, g| {
            s.start = Some(g.parse(rate)?);
            Ok(())
        },
        write: |s| Ok(s.start.map(Value::from)),
        ..BASE
    },
    Row {
        name: "maxRate",
        long: "max-rate",
        value: "RATE",
        help: "Never try more than this rate.",
        ts: "number | string",
        example: r#""200k""#,
        read: |s, g| {
            s.max_rate = Some(g.parse(rate)?);
            Ok(())
        },
        write: |s| Ok(s.max_rate.map(Value::from)),
        ..BASE
    },
    Row {
        name: "precision",
        long: "precision",
        value: "SHARE",
        help: "Stop bisecting when the rate that held and the one that failed are this close.",
        ts: "number | string",
        example: r#""2%""#,
        read: |s, g| {
            s.precision = g.parse(precision)?;
            Ok(())
        },
        write: |s| {
            Ok(Some(match s.precision == DEFAULT_PRECISION {
                true => "5%".into(),
                false => s.precision.into(),
            }))
        },
        ..BASE
    },
    Row {
        name: "maxSteps",
        long: "max-steps",
        value: "N",
        help: "Run at most this many steps (the probe not counted).",
        ts: "Count",
        example: "10",
        read: |s, g| {
            s.max_steps = g.parse(max_steps)?;
            Ok(())
        },
        write: |s| Ok(Some(s.max_steps.into())),
        ..BASE
    },
];

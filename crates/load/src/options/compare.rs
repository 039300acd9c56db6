//! `pelt compare`'s own options (and Node.js's `compare`): the targets, what varies and how
//! often. The runs' options are [`super::RUN`]'s.

use super::{Flag, Form, Given, OptionError};
use crate::study::compare::CompareSettings;
use crate::values;
use serde_json::{Map, Value};

type Row = Flag<CompareSettings>;
const BASE: Row = Flag::BASE;

/// A list of `KEY=VALUE` texts, or (Node.js) an object of keys and values, each value a text,
/// a number or (`values`) a list of them joined by commas.
fn pairs(g: &Given, values: bool) -> Result<Vec<String>, OptionError> {
    let Value::Object(map) = g.value else {
        return g.list();
    };
    map.iter()
        .map(|(k, v)| {
            let item = |v: &Value| g.with(v).text();
            let text = match v {
                Value::Array(all) if values => all
                    .iter()
                    .map(item)
                    .collect::<Result<Vec<_>, _>>()?
                    .join(","),
                v => item(v)?,
            };
            Ok(format!("{k}={text}"))
        })
        .collect()
}

/// The comparison's settings of `options` (names as in [`COMPARE`]).
pub fn compare(options: &Map<String, Value>) -> Result<CompareSettings, OptionError> {
    let mut s = CompareSettings::default();
    super::read_into(COMPARE, options, &mut s)?;
    Ok(s)
}

/// Every option of `pelt compare` besides the runs', in its help's order.
pub static COMPARE: &[Row] = &[
    Row {
        name: "target",
        long: "target",
        value: "NAME=URL",
        form: Form::Many,
        help: "A target, NAME=URL (or just URL, named by its host:port); repeatable. Node.js \
               also takes an object of names and URLs.",
        ts: "Record<string, string> | string[] | string",
        example: r#"["nginx=http://127.0.0.1:8080/"]"#,
        read: |s, g| {
            s.targets = pairs(g, false)?;
            Ok(())
        },
        write: |s| Ok((!s.targets.is_empty()).then(|| serde_json::json!(s.targets))),
        ..BASE
    },
    Row {
        name: "vary",
        long: "vary",
        value: "KEY=VALUES",
        form: Form::Many,
        help: "A setting to compare, KEY=V1,V2,...: every combination runs against every \
               target. Repeatable. KEY is any load flag by its long name (connections, threads, \
               rate, pipeline, streams, method, timeout, ...), plus keepalive=on,off, \
               http=1.1,2,3 and tls=resume,full,0rtt (0rtt: HTTP/3 only). Node.js also takes an object of keys and lists of values.",
        ts: "Record<string, (string | number)[] | string | number> | string[] | string",
        example: r#"["connections=16,256"]"#,
        read: |s, g| {
            s.vary = pairs(g, true)?;
            Ok(())
        },
        write: |s| Ok((!s.vary.is_empty()).then(|| serde_json::json!(s.vary))),
        ..BASE
    },
    Row {
        name: "repeat",
        long: "repeat",
        value: "N",
        help: "Run every combination this many times, interleaved; the table shows medians.",
        ts: "Count",
        example: "3",
        read: |s, g| {
            s.repeat = g.parse(|t| values::count_at_most(t, 1000))?;
            Ok(())
        },
        write: |s| Ok(Some(s.repeat.into())),
        ..BASE
    },
];

//! The readers of `--targets` (vegeta's http format and JSON lines) and `--bodies`: no input
//! panics, what is accepted has a URL, and a refusal is one short line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_load::sources::{parse_bodies, parse_targets};
use pelt_load::TargetsFormat;

fuzz_target!(|data: &[u8]| {
    // A body line (`@path`) reads a file: never let the fuzzer name one.
    if data.windows(1).any(|w| w == b"@") {
        return;
    }
    for format in [TargetsFormat::Auto, TargetsFormat::Http, TargetsFormat::Json] {
        match parse_targets(data, "t.txt", format) {
            Ok(targets) => {
                assert!(!targets.is_empty());
                assert!(targets.iter().all(|t| !t.url.is_empty() && t.line > 0));
            }
            Err(e) => assert!(!e.contains('\n') && e.len() < 2048, "{e}"),
        }
    }
    match parse_bodies(data, "b.txt") {
        Ok(bodies) => assert!(bodies.iter().all(|(line, b)| *line > 0 && !b.contains(&b'\n'))),
        Err(e) => assert!(!e.contains('\n')),
    }
});

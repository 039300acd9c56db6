//! The parsers of what users type (durations, counts, rates, sizes, shares, statuses, ports,
//! headers, URLs): no input panics, and what is accepted is in range. URLs are parsed, never
//! resolved (no DNS from a fuzzer).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/load/src/values.rs"]
#[allow(dead_code)]
mod values;

#[path = "../../crates/load/src/target.rs"]
#[allow(dead_code)]
mod target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(d) = values::duration(s) {
        assert!(!d.is_zero());
    }
    let _ = values::duration_or_zero(s);
    if let Ok(n) = values::count(s) {
        assert!(n > 0);
    }
    if let Ok(r) = values::rate(s) {
        assert!(r.as_f64() > 0.0 && r.as_f64().is_finite());
    }
    if let Ok(r) = values::per_second(s) {
        assert!(r > 0.0 && r <= 1e9);
    }
    let _ = values::size(s);
    if let Ok(x) = values::share(s) {
        assert!((0.0..=1.0).contains(&x));
    }
    if let Ok(c) = values::status(s) {
        assert!((100..=999).contains(&c));
    }
    let _ = values::port(s);
    assert!(!values::quote(s).contains(['\n', '\r']));
    if let Ok((name, value)) = pelt_codec::request::parse_header(s) {
        assert!(name.bytes().all(pelt_codec::request::is_token_char));
        assert!(!value.chars().any(|c| c.is_ascii_control() && c != '\t'));
    }
    if let Ok(p) = target::parse(s) {
        assert!(p.path.starts_with('/'));
        assert!(!p.path.contains([' ', '\r', '\n']));
        assert!(p.port != 0);
    }
});

//! Properties of everything that parses user input, run by proptest in the normal test suite
//! (the same properties as the cargo-fuzz targets in fuzz/, without nightly): no input panics,
//! and whatever is accepted is in range and safe to put on the wire or in a report.

use crate::{target, values};
use proptest::prelude::*;

/// Strings near the shapes users type: digits, units, signs, dots, separators, and noise.
fn value_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9._kKmMgGhsu/%+ -]{0,12}",
        "[0-9]{0,25}(ms|s|m|h|us|k|m|g|%|/s)?",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn value_parsers_never_panic_and_stay_in_range(s in value_like()) {
        if let Ok(d) = values::duration(&s) {
            prop_assert!(!d.is_zero());
        }
        let _ = values::duration_or_zero(&s);
        if let Ok(n) = values::count(&s) {
            prop_assert!(n > 0);
        }
        if let Ok(r) = values::rate(&s) {
            prop_assert!(r.as_f64() > 0.0 && r.as_f64().is_finite());
        }
        if let Ok(r) = values::per_second(&s) {
            prop_assert!(r > 0.0 && r <= 1e9);
        }
        if let Ok(n) = values::count_at_most(&s, 1024) {
            prop_assert!((1..=1024).contains(&n));
        }
        let _ = values::size(&s);
        if let Ok(x) = values::share(&s) {
            prop_assert!((0.0..=1.0).contains(&x));
        }
        if let Ok(c) = values::status(&s) {
            prop_assert!((100..=999).contains(&c));
        }
        let _ = values::port(&s);
        // The quoted form of any input is one line.
        prop_assert!(!values::quote(&s).contains(['\n', '\r']));
    }

    #[test]
    fn accepted_headers_are_safe_on_the_wire(line in "[ -~\t\r\n\x00\x01\x7f]{0,40}") {
        if let Ok((name, value)) = pelt_codec::request::parse_header(&line) {
            prop_assert!(!name.is_empty());
            prop_assert!(name.bytes().all(pelt_codec::request::is_token_char));
            prop_assert!(!value.chars().any(|c| c.is_ascii_control() && c != '\t'));
        }
        let masked = values::masked_header(&line);
        if line.to_ascii_lowercase().starts_with("authorization:") {
            prop_assert!(masked.ends_with("***"));
        }
    }

    #[test]
    fn urls_never_panic_and_never_show_credentials(
        raw in "[a-z]{0,6}(://)?[a-z0-9.:@\\[\\]/?#%-]{0,30}",
        user in "[a-z]{1,8}",
        pass in "[a-z0-9]{4,12}",
        port in 1u16..,
    ) {
        let _ = target::parse(&raw);
        let with_creds = format!("http://{user}:{pass}@127.0.0.1:{port}/p?q=1");
        let p = target::parse(&with_creds).unwrap();
        prop_assert!(!p.display.contains(&format!(":{pass}@")), "{}", p.display);
        prop_assert!(p.path.starts_with('/'));
        prop_assert!(!p.path.contains([' ', '\r', '\n']));
    }
}

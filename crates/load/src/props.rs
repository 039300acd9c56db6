//! Properties of everything that parses user input, run by proptest in the normal test suite
//! (the same properties as the cargo-fuzz targets in fuzz/, without nightly): no input panics,
//! and whatever is accepted is in range and safe to put on the wire or in a report.

use crate::sources::{parse_bodies, parse_targets, BadLines};
use crate::{options, target, values, TargetsFormat};
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

    /// The readers of `--targets` and `--bodies` (fuzz target `sources`).
    #[test]
    fn targets_and_bodies_files_never_panic(
        text in prop_oneof![
            "((GET|POST|get) )?(http://h:1)?/[a-z{}]{0,6}\n([A-Za-z-]{0,6}: ?[ -~]{0,8}\n){0,2}\n?",
            r#"(\{"url": ?"[ -~]{0,12}"[ -~]{0,20}\}\n){0,3}"#,
            "[ -?A-~\n\t\r]{0,60}",
        ]
    ) {
        for format in [TargetsFormat::Auto, TargetsFormat::Http, TargetsFormat::Json] {
            match parse_targets(text.as_bytes(), "t.txt", format, &mut BadLines::default()) {
                Ok(targets) => prop_assert!(targets.iter().all(|t| !t.url.is_empty() && t.line > 0)),
                Err(e) => prop_assert!(!e.contains('\n'), "{}", e),
            }
        }
        if let Ok(bodies) = parse_bodies(text.as_bytes(), "b.txt") {
            prop_assert!(bodies.iter().all(|(line, b)| *line > 0 && !b.contains(&b'\n')));
        }
    }

    /// `--stages` (fuzz target `stages`): what parses makes a schedule whose peak is a
    /// stage's target, or a refusal.
    #[test]
    fn stages_never_panic(s in "([0-9.]{0,4}(ms|s|m)?:[0-9.]{0,5}[kK]?(/s)?,?){0,4}|[ -~]{0,20}") {
        if let Ok(stages) = values::stages(&s) {
            prop_assert!(!stages.is_empty());
            for (of, start) in [(pelt_engine::Ramped::Rate, 100.0), (pelt_engine::Ramped::Connections, 0.0)] {
                if let Ok(sched) = pelt_engine::Stages::new(of, start, stages.clone()) {
                    let peak = stages.iter().map(|st| st.target).fold(start, f64::max);
                    prop_assert!(sched.peak() <= peak);
                }
            }
        }
    }

    /// Options by name (fuzz target `options`): any object is a spec or one line, and a
    /// spec's own options read back.
    #[test]
    fn options_by_name_never_panic(
        entries in proptest::collection::vec(
            (
                prop_oneof![
                    proptest::sample::select(options::RUN.iter().map(|f| f.name.to_string()).collect::<Vec<_>>()),
                    "[a-zA-Z]{1,8}".prop_map(String::from),
                ],
                prop_oneof![
                    any::<bool>().prop_map(serde_json::Value::from),
                    any::<u32>().prop_map(serde_json::Value::from),
                    value_like().prop_map(serde_json::Value::from),
                    Just(serde_json::json!(["p99<1s", "x"])),
                ],
            ),
            0..6,
        )
    ) {
        let mut map: serde_json::Map<String, serde_json::Value> = entries.into_iter().collect();
        map.insert("url".into(), "http://127.0.0.1:1/".into());
        for file in ["bodyFile", "targets", "bodies", "scenario", "script", "prompts"] {
            map.remove(file);
        }
        match options::spec(&map) {
            Ok(spec) => {
                let again = options::inline(&spec, None).unwrap();
                prop_assert!(options::spec(&again).is_ok(), "{:?}", again);
            }
            Err(e) => prop_assert!(!e.message.contains('\n'), "{}", e),
        }
        let _ = options::serve(&map);
    }
}

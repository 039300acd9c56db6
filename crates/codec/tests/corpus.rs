//! The llhttp response corpus (tests/corpus/, MIT, Copyright (c) 2018 Fedor Indutny): every
//! case is fed whole and one byte at a time, followed by EOF, and the first final response's
//! outcome must be one the corpus accepts.

use base64::Engine as _;
use pelt_codec::response::{Parsed, ParserOptions, ResponseParser};
use std::path::PathBuf;

fn corpus_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/llhttp-responses.json")
}

/// Outcome of the first final response, the way one request per connection sees it.
fn first_outcome(raw: &[u8], step: usize, head: bool) -> (&'static str, Option<u16>) {
    let mut p = ResponseParser::new(ParserOptions::default());
    p.set_head_request(head);
    let mut pos = 0;
    while pos < raw.len() {
        let end = (pos + step).min(raw.len());
        let mut piece = &raw[pos..end];
        pos = end;
        while !piece.is_empty() {
            match p.parse(piece) {
                Ok((_, Parsed::Complete(r))) => return ("complete", Some(r.status)),
                Ok((n, Parsed::Partial)) => piece = &piece[n..],
                Err(_) => return ("error", None),
            }
        }
    }
    match p.finish() {
        Ok(Some(r)) => ("complete", Some(r.status)),
        Ok(None) | Err(_) => ("error", None),
    }
}

#[test]
fn llhttp_response_corpus() {
    let Ok(text) = std::fs::read_to_string(corpus_path()) else {
        panic!("corpus missing at {}", corpus_path().display());
    };
    let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    let mut failures = vec![];
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(case["raw_b64"].as_str().unwrap())
            .unwrap();
        let head = case["head_request"].as_bool().unwrap_or(false);
        let accept: Vec<&str> = case["accept"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for step in [raw.len().max(1), 1] {
            let (got, status) = first_outcome(&raw, step, head);
            if !accept.contains(&got) {
                failures.push(format!(
                    "{name} (step {step}): got {got}, accept {accept:?}"
                ));
            } else if got == "complete" && case["client_expect"] == "complete" {
                let want = case["client_status"].as_u64().map(|s| s as u16);
                if status != want {
                    failures.push(format!("{name}: status {status:?}, expected {want:?}"));
                }
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 85);
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

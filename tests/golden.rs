//! Stored results rendered against committed copies: one real result of each kind of run
//! (plain, open loop with a warm-up, scenario, server-sent events, WebSocket, replay, fleet,
//! monitored; tests/golden/make.sh made them) goes through `pelt report` to its summary, JSON,
//! HTML, timeline CSV and targets CSV, and each must be byte for byte the committed copy in
//! tests/golden/rendered/. A change to how pelt writes a result shows here as a diff; one meant
//! is committed with `PELT_BLESS=1 cargo test --test golden`.
//!
//! The HTML page is compared without its inlined scripts and stylesheet (Chart.js, the drawing
//! code and the style, the same for every result; tests/report.rs draws them in a browser): its
//! head, its body and its data block are.

mod util;

use std::path::{Path, PathBuf};
use util::*;

const KINDS: [&str; 8] = [
    "plain",
    "open-loop",
    "scenario",
    "sse",
    "websocket",
    "replay",
    "fleet",
    "monitored",
];

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The page without the bodies of its scripts but its data block, and of its stylesheet: what
/// every page inlines alike.
fn without_scripts(html: &str) -> String {
    let mut page = html.to_string();
    for (open, close) in [("<script>", "</script>"), ("<style>", "</style>")] {
        let mut out = String::with_capacity(page.len());
        let mut rest = page.as_str();
        while let Some(at) = rest.find(open) {
            let body = at + open.len();
            let end = rest[body..].find(close).map_or(rest.len(), |e| body + e);
            out.push_str(&rest[..body]);
            out.push_str("...");
            rest = &rest[end..];
        }
        out.push_str(rest);
        page = out;
    }
    page
}

/// `kind`'s outputs, each as (the copy's file name, its bytes).
fn rendered(kind: &str, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let path = |ext: &str| dir.join(format!("{kind}.{ext}"));
    let result = golden().join(format!("{kind}.json"));
    let (out, _) = run(&[
        "report",
        result.to_str().unwrap(),
        "--json",
        path("json").to_str().unwrap(),
        "--html",
        path("html").to_str().unwrap(),
        "--csv",
        path("csv").to_str().unwrap(),
        "--csv-targets",
        path("targets.csv").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{kind}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |ext: &str| std::fs::read(path(ext)).unwrap();
    let html = String::from_utf8(read("html")).unwrap();
    vec![
        (format!("{kind}.txt"), out.stdout),
        (format!("{kind}.json"), read("json")),
        (format!("{kind}.html"), without_scripts(&html).into_bytes()),
        (format!("{kind}.csv"), read("csv")),
        (format!("{kind}.targets.csv"), read("targets.csv")),
    ]
}

#[test]
fn stored_results_render_as_their_committed_copies() {
    let dir = std::env::temp_dir().join(format!("pelt-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copies = golden().join("rendered");
    let bless = std::env::var_os("PELT_BLESS").is_some();
    let mut differ = Vec::new();
    for kind in KINDS {
        for (name, bytes) in rendered(kind, &dir) {
            let copy = copies.join(&name);
            if bless {
                std::fs::create_dir_all(&copies).unwrap();
                std::fs::write(&copy, &bytes).unwrap();
                continue;
            }
            let want = std::fs::read(&copy).unwrap_or_default();
            if want != bytes {
                let (want, got) = (
                    String::from_utf8_lossy(&want),
                    String::from_utf8_lossy(&bytes),
                );
                let line = want
                    .lines()
                    .zip(got.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(want.lines().count().min(got.lines().count()));
                differ.push(format!(
                    "{name}, from line {}:\n  committed: {}\n  now:       {}",
                    line + 1,
                    want.lines().nth(line).unwrap_or("(end)"),
                    got.lines().nth(line).unwrap_or("(end)")
                ));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        differ.is_empty(),
        "rendered differently from tests/golden/rendered (if meant: PELT_BLESS=1 cargo test \
         --test golden, and commit the copies):\n{}",
        differ.join("\n")
    );
}

/// The copies are what they claim: each kind's result has what makes it that kind, so a
/// section's renderer is exercised by at least one copy.
#[test]
fn each_stored_result_is_of_its_kind() {
    let kind = |k: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(golden().join(format!("{k}.json"))).unwrap()).unwrap()
    };
    assert_eq!(kind("plain")["load_model"], "closed");
    assert_eq!(kind("open-loop")["load_model"], "open");
    assert!(kind("open-loop")["warmup"].is_object());
    assert!(kind("scenario")["scenario"].is_object());
    assert!(kind("sse")["event_streams"].is_object());
    assert!(kind("websocket")["websocket"].is_object());
    assert!(kind("replay")["replay"].is_object());
    assert!(!kind("replay")["targets"].as_array().unwrap().is_empty());
    assert!(kind("fleet")["fleet"].is_object());
    assert!(kind("monitored")["resources"].is_object());
    for k in KINDS {
        assert_schema(&kind(k));
    }
}

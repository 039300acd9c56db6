//! LLM serving figures beside a real client of that trade: NVIDIA's AIPerf (PyPI, pinned in
//! tests/llm/requirements.txt, installed by .ci/run into tests/llm/.venv; skipped outside CI
//! without it). Both send the same dataset to the same `pelt serve --sse-body openai` at the
//! same rate: the counts agree exactly with each other and with the server's own log, and the
//! latencies within the stub's jitter. The CPU each spends is bench/llm.py's business.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;
use util::*;

/// AIPerf's command in tests/llm/.venv, or `None` (the test is skipped, outside CI).
fn aiperf() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/llm/.venv/bin/aiperf");
    if !bin.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "AIPerf is missing from tests/llm/.venv; .ci/run installs it"
        );
        eprintln!("SKIPPED: AIPerf is not installed (tests/llm/.venv)");
        return None;
    }
    Some(bin)
}

fn ms(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn pelt_and_aiperf_agree_on_an_openai_stub() {
    let Some(aiperf) = aiperf() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("pelt-llm-peers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A word-level tokenizer (the stub counts a word a token), built with AIPerf's own Python.
    let words = ["the", "a", "of", "and", "to", "in", "is", "it"];
    let tokenizer = dir.join("tokenizer");
    let made = Command::new(aiperf.with_file_name("python"))
        .arg(root.join("tests/llm/word_tokenizer.py"))
        .arg(&tokenizer)
        .args(words)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    // 60 prompts of 30 words, 32 tokens out each: AIPerf's single-turn `text` and
    // `output_length`, which pelt's --prompts reads too. Each line the same length, so the
    // totals do not hang on which lines AIPerf samples.
    let data = dir.join("prompts.jsonl");
    let lines: Vec<String> = (0..60)
        .map(|i| {
            let text: Vec<&str> = (0..30)
                .map(|j| words[(i * 7 + j * 3) % words.len()])
                .collect();
            serde_json::json!({"text": text.join(" "), "output_length": 32}).to_string()
        })
        .collect();
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let log = dir.join("streams.jsonl");
    let log_path = log.display().to_string();
    let (_serve, base) = ServeProcess::listening(&[
        "--port",
        "0",
        "--sse",
        "1000",
        "--sse-body",
        "openai",
        "--sse-tokens",
        "2",
        "--sse-first",
        "20ms",
        "--sse-interval",
        "15ms",
        "--sse-jitter",
        "5ms",
        "--sse-log",
        &log_path,
    ]);
    let chat = format!("{base}/v1/chat/completions");
    let data_path = data.display().to_string();
    let v = run_json(&[&chat, "--prompts", &data_path, "--rate", "20", "-n", "60"]);
    let out = dir.join("aiperf");
    let ran = Command::new(&aiperf)
        .args(["profile", "--model", "mock-model", "--tokenizer"])
        .arg(&tokenizer)
        .args(["--url", &base, "--endpoint-type", "chat", "--streaming"])
        .args(["--request-rate", "20", "--arrival-pattern", "constant"])
        .args(["--request-count", "60", "--input-file", &data_path])
        .args([
            "--custom-dataset-type",
            "single_turn",
            "--use-server-token-count",
        ])
        .args(["--ui-type", "none", "--artifact-dir"])
        .arg(&out)
        .current_dir(&dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success(), "AIPerf failed: {said}");
    let text = std::fs::read_to_string(out.join("profile_export_aiperf.json")).unwrap();
    let a: serde_json::Value = serde_json::from_str(&text).unwrap();

    // The counts: every request, every token, the same on both and as the server logged them.
    assert_eq!(count(&v, &["requests", "completed"]), 60, "{v}");
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    assert_eq!(ms(&a["request_count"]["avg"]), 60.0, "{text}");
    assert!(a["error_summary"].as_array().unwrap().is_empty(), "{text}");
    let tokens = &v["event_streams"]["tokens"];
    assert_eq!(count(tokens, &["output"]), 60 * 32, "{tokens}");
    assert_eq!(count(tokens, &["input"]), 60 * 30, "{tokens}");
    assert_eq!(ms(&a["total_osl"]["avg"]), (60 * 32) as f64, "{text}");
    assert_eq!(ms(&a["total_isl"]["avg"]), (60 * 30) as f64, "{text}");
    let logged: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // pelt's 60 streams come first; AIPerf may probe the endpoint before its run.
    let completion: u64 = logged[..60]
        .iter()
        .map(|r| r["completion_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(completion, 60 * 32, "{logged:?}");

    // The latencies: the first token 20 ms after the request, then 2 tokens every 15 ms +- 5
    // ms. Each client's TTFT and time per output token (AIPerf's ITL: the time after the first
    // token over the tokens after it) at the median agree within the stub's jitter, and the
    // output tokens per second within a tenth.
    let s = &v["event_streams"];
    let pelt_ttft = count(s, &["ttft_us", "p50"]) as f64 / 1000.0;
    let their_ttft = ms(&a["time_to_first_token"]["p50"]);
    assert!(
        (pelt_ttft - their_ttft).abs() <= 5.0 && (20.0..40.0).contains(&pelt_ttft),
        "TTFT p50: pelt {pelt_ttft} ms, AIPerf {their_ttft} ms"
    );
    let pelt_tpot = count(tokens, &["tpot_us", "p50"]) as f64 / 1000.0;
    let their_tpot = ms(&a["inter_token_latency"]["p50"]);
    assert!(
        (pelt_tpot - their_tpot).abs() <= 1.0 && (5.0..10.0).contains(&pelt_tpot),
        "TPOT p50: pelt {pelt_tpot} ms, AIPerf {their_tpot} ms"
    );
    let pelt_rate = tokens["output_per_s"].as_f64().unwrap();
    let their_rate = ms(&a["output_token_throughput"]["avg"]);
    assert!(
        (pelt_rate / their_rate - 1.0).abs() < 0.1,
        "output tokens/s: pelt {pelt_rate}, AIPerf {their_rate}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

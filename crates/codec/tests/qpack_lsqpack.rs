//! pelt's QPACK (`pelt_codec::h3`) against ls-qpack, the QPACK of LiteSpeed's servers and of
//! aioquic (through its Python binding, pylsqpack, from tests/interop/.venv, which .ci/run
//! makes): every static table entry and a server's responses as ls-qpack encodes them
//! (Huffman-coded strings among them) decode to the same fields here, and the requests pelt
//! encodes decode to the same fields there. Both sides allow no dynamic table, as pelt's
//! SETTINGS say.

use pelt_codec::h3::{decode_fields, encode_headers, STATIC};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// ls-qpack's side: encodes `encode` (lists of fields) and decodes `decode` (hex field
/// sections), static table only.
const LSQPACK: &str = r#"
import json, sys
import pylsqpack
job = json.load(sys.stdin)
enc = pylsqpack.Encoder()
enc.apply_settings(0, 0)
encoded = []
for i, fields in enumerate(job["encode"]):
    _, block = enc.encode(4 * i, [(n.encode("latin-1"), v.encode("latin-1")) for n, v in fields])
    encoded.append(block.hex())
dec = pylsqpack.Decoder(0, 0)
decoded = []
for i, section in enumerate(job["decode"]):
    _, fields = dec.feed_header(4 * i, bytes.fromhex(section))
    decoded.append([[n.decode("latin-1"), v.decode("latin-1")] for n, v in fields])
json.dump({"encoded": encoded, "decoded": decoded}, sys.stdout)
"#;

fn python() -> Option<PathBuf> {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/.venv/bin/python");
    let has = python.exists()
        && Command::new(&python)
            .args(["-c", "import pylsqpack"])
            .status()
            .is_ok_and(|s| s.success());
    if !has {
        assert!(
            std::env::var_os("CI").is_none(),
            "pylsqpack is missing from tests/interop/.venv; .ci/run installs it"
        );
        eprintln!("SKIPPED: pylsqpack is not in tests/interop/.venv");
    }
    has.then_some(python)
}

fn lsqpack(python: &PathBuf, job: Value) -> Value {
    let mut child = Command::new(python)
        .args(["-c", LSQPACK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn decoded(section: &[u8]) -> Vec<(String, String)> {
    let mut out = vec![];
    decode_fields(section, &mut Default::default(), |n, v| {
        // As latin-1, as the Python side reads them.
        let text = |b: &[u8]| b.iter().map(|&c| c as char).collect::<String>();
        out.push((text(n), text(v)))
    })
    .unwrap_or_else(|e| panic!("{e}: {section:02x?}"));
    out
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn ls_qpack_and_pelt_read_each_others_field_sections() {
    let Some(python) = python() else {
        return;
    };
    // What ls-qpack encodes: each static entry alone (an indexed field line when the tables
    // agree), and responses as servers send them.
    let mut lists: Vec<Vec<(String, String)>> = STATIC
        .iter()
        .map(|(n, v)| vec![(n.to_string(), v.to_string())])
        .collect();
    let long = "v".repeat(300);
    lists.push(
        [
            (":status", "200"),
            ("content-type", "text/html; charset=utf-8"),
            ("content-type", "text/event-stream"),
            ("server", "Caddy"),
            ("alt-svc", "h3=\":443\"; ma=2592000"),
            ("date", "Sun, 06 Dec 2026 09:00:00 GMT"),
            ("x-long", long.as_str()),
            ("x-binary", "\u{1}\u{ff}"),
            ("content-length", "12345"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect(),
    );
    for status in ["100", "204", "302", "418", "503", "599"] {
        lists.push(vec![
            (":status".into(), status.into()),
            ("set-cookie".into(), "a=b; Path=/".into()),
        ]);
    }
    // What pelt encodes: requests.
    let requests = [
        encode_headers("GET", "https", "example.com", "/", &[], 0),
        encode_headers(
            "POST",
            "https",
            "127.0.0.1:4433",
            "/api/v1/items?page=2&q=%20x",
            &[
                ("Content-Type".into(), "application/json".into()),
                ("Authorization".into(), format!("Bearer {long}")),
                ("Connection".into(), "close".into()),
            ],
            17,
        ),
        encode_headers(
            "PATCH",
            "http",
            "h:80",
            "/x",
            &[("TE".into(), "trailers".into())],
            0,
        ),
    ];
    let job = json!({
        "encode": lists,
        "decode": requests.iter().map(|r| r.iter().map(|b| format!("{b:02x}")).collect::<String>()).collect::<Vec<_>>(),
    });
    let answer = lsqpack(&python, job);
    let encoded = answer["encoded"].as_array().unwrap();
    assert_eq!(encoded.len(), lists.len());
    for (fields, section) in lists.iter().zip(encoded) {
        assert_eq!(&decoded(&hex(section.as_str().unwrap())), fields);
    }
    // Each static entry came as one indexed field line (its index, static): ls-qpack's table
    // is this one, entry for entry.
    for (i, section) in encoded.iter().take(STATIC.len()).enumerate() {
        let bytes = hex(section.as_str().unwrap());
        let mut line = vec![];
        let first = if i < 63 { 0xc0 | i as u8 } else { 0xff };
        line.push(first);
        if i >= 63 {
            line.push((i - 63) as u8);
        }
        assert_eq!(&bytes[2..], &line[..], "entry {i}: {:?}", STATIC[i]);
    }
    let theirs: Vec<Vec<(String, String)>> =
        serde_json::from_value(answer["decoded"].clone()).unwrap();
    for (ours, theirs) in requests.iter().zip(&theirs) {
        assert_eq!(&decoded(ours), theirs);
    }
    assert_eq!(
        theirs[1][4..],
        [
            ("content-type".to_string(), "application/json".to_string()),
            ("authorization".to_string(), format!("Bearer {long}")),
            ("content-length".to_string(), "17".to_string()),
        ]
    );
    assert_eq!(theirs[2].last().unwrap(), &("te".into(), "trailers".into()));
}

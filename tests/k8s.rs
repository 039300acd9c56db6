//! `pelt k8s`: the manifests it writes are valid for the Kubernetes API, checked against the
//! real API schemas (the kubernetes-validate package from PyPI carries them, generated from
//! Kubernetes' OpenAPI; strict: an unknown field fails), and say what the fleet needs: an
//! Indexed Job of N agents, the coordinator behind a headless Service, the token Secret.
//!
//! `.ci/run` installs kubernetes-validate in tests/interop/.venv; elsewhere without it the
//! schema checks are skipped with a line saying so.

mod util;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use util::*;

/// The Kubernetes versions checked: the first where every field used is GA (Job's
/// backoffLimitPerIndex, 1.33), and the newest the package knows.
const VERSIONS: &[&str] = &["1.33.0", "1.37.0"];

fn venv_bin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop/.venv/bin")
        .join(name)
}

/// Whether the validator is installed (under CI it must be).
fn validator() -> Option<PathBuf> {
    let bin = venv_bin("kubernetes-validate");
    if bin.exists() {
        return Some(bin);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "kubernetes-validate is missing from tests/interop/.venv; .ci/run installs it"
    );
    eprintln!("SKIPPED: kubernetes-validate (python3 -m venv tests/interop/.venv && tests/interop/.venv/bin/pip install -r tests/interop/requirements.txt)");
    None
}

/// `pelt k8s ARGS` writes a file: its text.
fn render(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, String) {
    let path = dir.join(name);
    let mut all = vec!["k8s", "-o", path.to_str().unwrap()];
    all.extend(args);
    let (out, _) = run(&all);
    assert!(
        out.status.success(),
        "pelt {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

/// The manifests as JSON, read by PyYAML (a YAML parser that is not pelt's writer).
fn documents(path: &Path) -> Option<Vec<serde_json::Value>> {
    let python = venv_bin("python");
    if !python.exists() {
        return None;
    }
    let out = Command::new(python)
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1]))]))",
            path.to_str().unwrap(),
        ])
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success());
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pelt-k8s-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_manifests_pass_the_kubernetes_api_schemas() {
    let d = dir("schemas");
    let targets = d.join("targets.txt");
    std::fs::write(
        &targets,
        "GET http://api.shop.svc:8080/a\n\nPOST http://api.shop.svc:8080/b\n",
    )
    .unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec![
            "http://my-service.default.svc:8080/",
            "-d",
            "5m",
            "--rate",
            "100k",
            "-c",
            "1000",
            "--agents",
            "8",
        ],
        vec![
            "https://shop.example/",
            "-n",
            "1m",
            "-c",
            "60",
            "--http2",
            "--agents",
            "3",
            "--name",
            "shop-load",
            "--namespace",
            "load",
            "--cpu",
            "500m",
            "--memory",
            "512Mi",
            "--expect",
            "p99<50ms",
        ],
        vec![
            "--targets",
            targets.to_str().unwrap(),
            "-d",
            "30s",
            "--agents",
            "2",
            "--image",
            "registry.example.com/pelt:1",
            "--metrics-push",
            "http://prometheus.monitoring.svc:9090/api/v1/write",
        ],
    ]
    .into_iter()
    .map(|c| c.into_iter().map(String::from).collect())
    .collect();
    let Some(validate) = validator() else {
        return;
    };
    for (k, case) in cases.iter().enumerate() {
        let args: Vec<&str> = case.iter().map(String::as_str).collect();
        let (path, _) = render(&d, &format!("fleet{k}.yaml"), &args);
        for version in VERSIONS {
            let out = Command::new(&validate)
                .args(["--strict", "--quiet", "-k", version])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{args:?} against Kubernetes {version}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // The validator does fail: a field Kubernetes does not know.
    let (path, text) = render(
        &d,
        "broken.yaml",
        &["http://svc/", "-n", "10", "--agents", "2"],
    );
    std::fs::write(&path, text.replace("completionMode", "completionMod")).unwrap();
    let out = Command::new(&validate)
        .args(["--strict", "--quiet"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_manifests_say_what_the_fleet_needs() {
    let d = dir("contents");
    let body = d.join("body.bin");
    std::fs::write(&body, [0u8, 1, 2, 255]).unwrap();
    let (path, text) = render(
        &d,
        "fleet.yaml",
        &[
            "http://api.shop.svc:8080/",
            "-n",
            "1m",
            "-c",
            "300",
            "-m",
            "POST",
            "--body-file",
            body.to_str().unwrap(),
            "--agents",
            "5",
            "--name",
            "shop",
            "-t",
            "2",
        ],
    );
    assert!(
        text.contains("kubectl logs job/shop-coordinator > result.json"),
        "{text}"
    );
    let Some(docs) = documents(&path) else {
        eprintln!("SKIPPED: reading the manifests needs tests/interop/.venv (PyYAML)");
        return;
    };
    let kinds: Vec<(&str, &str)> = docs
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("Secret", "shop"),
            ("Service", "shop-coordinator"),
            ("Job", "shop-coordinator"),
            ("Job", "shop-agents")
        ]
    );
    let (secret, service, coord, agents) = (&docs[0], &docs[1], &docs[2], &docs[3]);
    let token = secret["stringData"]["token"].as_str().unwrap();
    assert_eq!(token.len(), 64, "a fresh random token");
    assert_eq!(
        secret["data"]["file-0.bin"], "AAEC/w==",
        "the body file, shipped"
    );
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(
        service["spec"]["selector"]["app.kubernetes.io/component"],
        "coordinator"
    );
    let pod = &coord["spec"]["template"];
    assert_eq!(
        pod["metadata"]["labels"]["app.kubernetes.io/component"],
        "coordinator"
    );
    let args: Vec<&str> = pod["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "http://api.shop.svc:8080/",
            "-n",
            "1m",
            "-c",
            "300",
            "-m",
            "POST",
            "--body-file",
            "/var/run/pelt/file-0.bin",
            "-t",
            "2",
            "--agents",
            "5",
            "--listen",
            "0.0.0.0:7070",
            "--token-file",
            "/var/run/pelt/token",
            "--join-timeout",
            "300s",
            "-q",
            "--json",
            "-"
        ]
    );
    let job = &agents["spec"];
    assert_eq!(job["completionMode"], "Indexed");
    assert_eq!(
        (job["completions"].as_u64(), job["parallelism"].as_u64()),
        (Some(5), Some(5))
    );
    assert_eq!(job["backoffLimitPerIndex"], 0);
    assert!(job["podFailurePolicy"]["rules"].as_array().unwrap().len() >= 2);
    assert!(job["ttlSecondsAfterFinished"].as_u64().is_some());
    assert!(job["activeDeadlineSeconds"].as_u64().unwrap() > 300);
    let c = &job["template"]["spec"]["containers"][0];
    assert_eq!(c["args"][0], "agent");
    let env: Vec<(String, String)> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(env.contains(&("PELT_COORDINATOR".into(), "shop-coordinator:7070".into())));
    assert!(env.contains(&("PELT_AGENTS".into(), "5".into())));
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
    let spread = &job["template"]["spec"]["topologySpreadConstraints"][0];
    assert_eq!(spread["topologyKey"], "kubernetes.io/hostname");
    std::fs::remove_dir_all(&d).unwrap();
}

/// deploy/k8s/example.yaml is what this pelt renders for the command in its header.
#[test]
fn the_example_in_deploy_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join("deploy/k8s/example.yaml")).unwrap();
    let command = example
        .lines()
        .find_map(|l| l.strip_prefix("# Rendered by: pelt "))
        .expect("the command in the header");
    let args: Vec<&str> = command.split(' ').collect();
    let out = Command::new(env!("CARGO_BIN_EXE_pelt"))
        .args(&args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = String::from_utf8(out.stdout).unwrap();
    let body = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with("# Rendered by:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        body(&example),
        body(&rendered),
        "deploy/k8s/example.yaml is stale: run `pelt {command}` (its header line says how)"
    );
}

#[test]
fn bad_input_is_one_line_and_nothing_is_written() {
    let d = dir("bad");
    let out_path = d.join("never.yaml");
    let o = out_path.to_str().unwrap();
    for (args, says) in [
        (vec!["k8s", "http://svc/", "-o", o], "--agents"),
        (
            vec![
                "k8s",
                "http://svc/",
                "--agents",
                "2",
                "--name",
                "Load_Test",
                "-o",
                o,
            ],
            "lowercase letters",
        ),
        (
            vec![
                "k8s",
                "http://svc/",
                "--agents",
                "2",
                "--html",
                "r.html",
                "-o",
                o,
            ],
            "pelt report",
        ),
        (
            vec![
                "k8s",
                "http://svc/",
                "--agents",
                "2",
                "--cpu",
                "lots",
                "-o",
                o,
            ],
            "expected CPUs",
        ),
        (vec!["k8s", "ftp://svc/", "--agents", "2", "-o", o], "ftp"),
        (
            vec![
                "k8s",
                "http://svc/",
                "--agents",
                "2",
                "--bodies",
                "-",
                "-o",
                o,
            ],
            "standard input",
        ),
    ] {
        assert_bad_input(&args, says);
        assert!(!out_path.exists(), "{args:?} wrote a file");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_grpc_fleet_ships_its_proto_and_refuses_import_folders() {
    let d = dir("grpc");
    let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/greeter.proto");
    let (path, text) = render(
        &d,
        "grpc.yaml",
        &[
            "grpc://greeter.default.svc:50051/pelt.test.Greeter/SayHello",
            "--proto",
            proto,
            "-b",
            r#"{"name": "k8s"}"#,
            "-n",
            "10k",
            "--agents",
            "2",
        ],
    );
    // The proto rides in the Secret under a name that keeps its extension; the pods read it there.
    assert!(text.contains("file-0.proto"), "{text}");
    assert!(text.contains("/var/run/pelt/file-0.proto"), "{text}");
    if let Some(docs) = documents(&path) {
        let secret = docs.iter().find(|d| d["kind"] == "Secret").unwrap();
        use base64::Engine as _;
        let shipped = base64::engine::general_purpose::STANDARD
            .decode(secret["data"]["file-0.proto"].as_str().unwrap())
            .unwrap();
        assert_eq!(shipped, std::fs::read(proto).unwrap());
    }
    let o = d.join("never.yaml");
    let o = o.to_str().unwrap();
    let url = "grpc://greeter.default.svc:50051/pelt.test.Greeter/SayHello";
    assert_bad_input(
        &[
            "k8s", url, "--proto", proto, "-I", "/tmp", "--agents", "2", "-o", o,
        ],
        "--protoset",
    );
    assert_bad_input(
        &["k8s", url, "--reflect", "--agents", "2", "-o", o],
        "--reflect",
    );
}

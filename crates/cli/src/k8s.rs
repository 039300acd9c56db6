//! `pelt k8s`: the Kubernetes manifests for a fleet run, on stdout (or `-o FILE`).
//!
//! One Secret (the fleet's token, and the files the run names), a headless Service in front
//! of the coordinator, the coordinator's Job, and the agents' Indexed Job (each pod's rank is
//! its `JOB_COMPLETION_INDEX`). The run's flags are checked as `pelt` checks them (the host is
//! not resolved: it may resolve only in the cluster), then handed to the coordinator as typed,
//! with the paths of the files they name pointing at the Secret's copies.
//!
//! The YAML is written here: the maintained serde YAML crate (serde_yaml) is archived, and
//! what is needed is small: block mappings and sequences, with every string double-quoted as
//! JSON writes it (a JSON string is a valid YAML double-quoted scalar), so no value can be
//! misread (`no`, `1.10`, `*`).

use crate::args::K8sArgs;
use crate::bad;
use crate::run::prepare_with;
use anyhow::{anyhow, Result};
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::fmt::Write;
use std::process::ExitCode;

/// The flags of `pelt k8s` itself, with whether each takes a value; the rest are the run's.
const OWN_FLAGS: &[(&str, bool)] = &[
    ("--agents", true),
    ("--image", true),
    ("--name", true),
    ("--namespace", true),
    ("--cpu", true),
    ("--memory", true),
    ("--deadline", true),
    ("--ttl", true),
    ("--join-timeout", true),
    ("--token-file", true),
    ("--output", true),
    ("-o", true),
];

/// Flags whose value is a file the run reads: shipped in the Secret.
const FILE_FLAGS: &[&str] = &[
    "--body-file",
    "--targets",
    "--bodies",
    "--cacert",
    "--cert",
    "--key",
    "--proto",
    "--protoset",
    "--script",
    "-s",
];

/// Run flags that make no sense in a cluster's pod, with what to do instead.
const REFUSED: &[(&str, &str)] = &[
    ("--json", "the coordinator writes its result to its log: kubectl logs job/NAME-coordinator > result.json"),
    ("--jsonl", "the coordinator writes its result to its log"),
    ("--csv", "render the result with pelt report result.json --csv FILE"),
    ("--csv-targets", "render the result with pelt report result.json --csv-targets FILE"),
    ("--html", "render the result with pelt report result.json --html FILE"),
    ("--hdr-log", "render the result with pelt report result.json --hdr-log FILE"),
    ("--unix-socket", "agents in pods connect over the network"),
    ("--import-path", "ship one file: protoc --descriptor_set_out=svc.protoset --include_imports, then --protoset svc.protoset"),
    ("-I", "ship one file: protoc --descriptor_set_out=svc.protoset --include_imports, then --protoset svc.protoset"),
    ("--quiet", "the coordinator runs with -q so that its log is the result"),
    ("-q", "the coordinator runs with -q so that its log is the result"),
];

/// Where the Secret is mounted in every pod.
const MOUNT: &str = "/var/run/pelt";

/// The control port.
const PORT: u16 = pelt_load::fleet::DEFAULT_PORT;

/// `pelt k8s URL [run flags] --agents N ...`; `raw` is the command line after `k8s`.
pub fn k8s(a: &K8sArgs, raw: &[OsString]) -> Result<ExitCode> {
    let raw: Vec<String> = raw
        .iter()
        .map(|s| {
            s.to_str()
                .map(String::from)
                .ok_or_else(|| bad(anyhow!("an argument is not UTF-8: {}", s.to_string_lossy())))
        })
        .collect::<Result<_>>()?;
    let (run_args, files) = run_args(&raw)?;
    // The run checked as pelt checks it, but for the host: it may resolve only in the cluster.
    prepare_with(&a.load, pelt_load::fleet::validate_elsewhere)?;
    let token = match &a.token_file {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| bad(anyhow!("cannot read --token-file {}: {e}", p.display())))?,
        None => pelt_load::fleet::wire::nonce(),
    };
    pelt_load::fleet::Token::new(&token).map_err(|e| bad(anyhow!(e)))?;
    let deadline = a.deadline.unwrap_or_else(|| {
        // Long enough to gather the agents, run, and finish; an -n run gets an hour.
        let run = match a.load.spec.duration {
            Some(d) => d + a.load.spec.warmup.unwrap_or_default(),
            None => std::time::Duration::from_secs(3600),
        };
        a.join_timeout + run + std::time::Duration::from_secs(300)
    });
    let m = Manifests {
        a,
        labels: json!({
            "app.kubernetes.io/name": "pelt",
            "app.kubernetes.io/instance": a.name,
            "app.kubernetes.io/version": env!("CARGO_PKG_VERSION"),
        }),
        deadline_s: deadline.as_secs().max(1),
    };
    let mut docs = vec![
        m.secret(token.trim(), &files),
        m.service(),
        m.coordinator(&run_args),
    ];
    docs.push(m.agents());
    let mut out = format!(
        "# A pelt fleet of {} agents, rendered by pelt {} (pelt k8s).\n\
         # Start: kubectl apply -f this file. Follow: kubectl logs -f --prefix\n\
         #   -l app.kubernetes.io/instance={n},app.kubernetes.io/component=agent\n\
         # The result: kubectl logs job/{n}-coordinator > result.json (then pelt report\n\
         #   result.json --html report.html). Remove: kubectl delete -f this file.\n",
        a.agents,
        env!("CARGO_PKG_VERSION"),
        n = a.name
    );
    for d in &docs {
        out.push_str("---\n");
        yaml(d, 0, &mut out);
    }
    match &a.output {
        Some(path) => crate::output::write_atomic(path, out.as_bytes())?,
        None => print!("{out}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// A file the run names, shipped in the Secret under `key`.
struct Shipped {
    key: String,
    bytes: Vec<u8>,
}

/// The coordinator's arguments: the run's flags as typed, less `pelt k8s`'s own, with each
/// file's path replaced by its copy's in the pods; and the files.
fn run_args(raw: &[String]) -> Result<(Vec<String>, Vec<Shipped>)> {
    let mut args = Vec::new();
    let mut files = Vec::new();
    let mut it = raw.iter().peekable();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if let Some(&(_, takes)) = OWN_FLAGS.iter().find(|f| f.0 == name) {
            if takes && inline.is_none() {
                it.next();
            }
            continue;
        }
        if let Some((flag, instead)) = REFUSED.iter().find(|f| f.0 == name) {
            return Err(bad(anyhow!("pelt k8s does not take {flag}: {instead}")));
        }
        if FILE_FLAGS.contains(&name) {
            let path = match inline {
                Some(v) => v,
                None => it.next().cloned().unwrap_or_default(),
            };
            if path == "-" {
                return Err(bad(anyhow!(
                    "pelt k8s cannot ship {name} from standard input; give a file"
                )));
            }
            let bytes =
                std::fs::read(&path).map_err(|e| bad(anyhow!("cannot read {name} {path}: {e}")))?;
            // The name keeps its extension: a gRPC message in a .bin file is binary, and
            // protoc's tools name their files by it.
            let ext = std::path::Path::new(&path)
                .extension()
                .and_then(|e| e.to_str())
                .filter(|e| e.len() <= 8 && e.chars().all(|c| c.is_ascii_alphanumeric()))
                .map_or(String::new(), |e| format!(".{e}"));
            let key = format!("file-{}{ext}", files.len());
            args.push(name.to_string());
            args.push(format!("{MOUNT}/{key}"));
            files.push(Shipped { key, bytes });
            continue;
        }
        args.push(arg.clone());
    }
    let size: usize = files.iter().map(|f| f.bytes.len()).sum();
    if size > 900 << 10 {
        return Err(bad(anyhow!(
            "the files the run names hold {} KiB; a Kubernetes Secret holds at most 1 MiB \
             (mount bigger ones into the pods yourself)",
            size >> 10
        )));
    }
    Ok((args, files))
}

struct Manifests<'a> {
    a: &'a K8sArgs,
    labels: Value,
    deadline_s: u64,
}

impl Manifests<'_> {
    fn meta(&self, name: &str, role: Option<&str>) -> Value {
        let mut labels = self.labels.clone();
        if let Some(r) = role {
            labels["app.kubernetes.io/component"] = json!(r);
        }
        let mut m = json!({ "name": name, "labels": labels });
        if let Some(ns) = &self.a.namespace {
            m["namespace"] = json!(ns);
        }
        m
    }

    fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.a.name)
    }

    /// The pods' selector labels for `role`.
    fn selector(&self, role: &str) -> Value {
        json!({
            "app.kubernetes.io/instance": self.a.name,
            "app.kubernetes.io/component": role,
        })
    }

    fn secret(&self, token: &str, files: &[Shipped]) -> Value {
        use base64::Engine as _;
        let mut data = Map::new();
        for f in files {
            let b64 = base64::engine::general_purpose::STANDARD.encode(&f.bytes);
            data.insert(f.key.clone(), json!(b64));
        }
        let mut s = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": self.meta(&self.a.name, None),
            "type": "Opaque",
            "stringData": { "token": token },
        });
        if !data.is_empty() {
            s["data"] = Value::Object(data);
        }
        s
    }

    fn service(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": self.meta(&self.name("coordinator"), Some("coordinator")),
            "spec": {
                "clusterIP": "None",
                // The agents look the name up before the coordinator is ready.
                "publishNotReadyAddresses": true,
                "selector": self.selector("coordinator"),
                "ports": [{ "name": "control", "port": PORT, "targetPort": PORT, "protocol": "TCP" }],
            },
        })
    }

    /// A pod that runs pelt with `args`, as `role`.
    fn pod(&self, role: &str, args: Vec<String>, env: Value, resources: Value) -> Value {
        let mut labels = self.labels.clone();
        labels["app.kubernetes.io/component"] = json!(role);
        let mut spec = json!({
            "restartPolicy": "Never",
            "enableServiceLinks": false,
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": 65532,
                "runAsGroup": 65532,
                // The Secret's files are group-readable (0440) by this group.
                "fsGroup": 65532,
                "seccompProfile": { "type": "RuntimeDefault" },
            },
            "containers": [{
                "name": role,
                "image": self.a.image,
                "args": args,
                "env": env,
                "resources": resources,
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": { "drop": ["ALL"] },
                },
                "volumeMounts": [{ "name": "pelt", "mountPath": MOUNT, "readOnly": true }],
            }],
            "volumes": [{ "name": "pelt", "secret": { "secretName": self.a.name, "defaultMode": 0o440 } }],
        });
        if role == "agent" {
            // One agent per node where the nodes allow: each has the node's cores and NIC.
            spec["topologySpreadConstraints"] = json!([{
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": { "matchLabels": self.selector("agent") },
            }]);
        }
        json!({ "metadata": { "labels": labels }, "spec": spec })
    }

    fn coordinator(&self, run: &[String]) -> Value {
        let mut args: Vec<String> = run.to_vec();
        args.extend([
            "--agents".to_string(),
            self.a.agents.to_string(),
            "--listen".into(),
            format!("0.0.0.0:{PORT}"),
            "--token-file".into(),
            format!("{MOUNT}/token"),
            "--join-timeout".into(),
            format!("{}s", self.a.join_timeout.as_secs()),
            "-q".into(),
            "--json".into(),
            "-".into(),
        ]);
        let mut pod = self.pod(
            "coordinator",
            args,
            json!([]),
            json!({
                "requests": { "cpu": "500m", "memory": "256Mi" },
                "limits": { "memory": "1Gi" },
            }),
        );
        pod["spec"]["containers"][0]["ports"] =
            json!([{ "name": "control", "containerPort": PORT, "protocol": "TCP" }]);
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": self.meta(&self.name("coordinator"), Some("coordinator")),
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": self.deadline_s,
                "ttlSecondsAfterFinished": self.a.ttl.as_secs(),
                "template": pod,
            },
        })
    }

    fn agents(&self) -> Value {
        let n = self.a.agents;
        let env = json!([
            { "name": "PELT_COORDINATOR", "value": format!("{}:{PORT}", self.name("coordinator")) },
            { "name": "PELT_AGENTS", "value": n.to_string() },
            { "name": "PELT_FLEET_TOKEN_FILE", "value": format!("{MOUNT}/token") },
        ]);
        let size = json!({ "cpu": self.a.cpu, "memory": self.a.memory });
        let args = vec![
            "agent".to_string(),
            "--join-timeout".into(),
            format!("{}s", self.a.join_timeout.as_secs()),
        ];
        let pod = self.pod(
            "agent",
            args,
            env,
            json!({ "requests": size, "limits": size }),
        );
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": self.meta(&self.name("agents"), Some("agent")),
            "spec": {
                "completionMode": "Indexed",
                "completions": n,
                "parallelism": n,
                // An agent that fails cannot rejoin a run under way: no retry, and the Job
                // fails with it (the coordinator has already named it and stopped the rest).
                "backoffLimitPerIndex": 0,
                "maxFailedIndexes": 0,
                "podFailurePolicy": {
                    "rules": [
                        // Bad input: every index would fail alike.
                        { "action": "FailJob", "onExitCodes": { "containerName": "agent", "operator": "In", "values": [2] } },
                        // Could not join, or lost the coordinator (4), or was evicted: that index.
                        { "action": "FailIndex", "onExitCodes": { "containerName": "agent", "operator": "In", "values": [4] } },
                        { "action": "FailIndex", "onPodConditions": [{ "type": "DisruptionTarget", "status": "True" }] },
                    ],
                },
                "activeDeadlineSeconds": self.deadline_s,
                "ttlSecondsAfterFinished": self.a.ttl.as_secs(),
                "template": pod,
            },
        })
    }
}

/// Keys written before the others, in this order.
const FIRST: &[&str] = &["apiVersion", "kind", "metadata", "name", "type", "spec"];

/// Writes `v` as a YAML block at `indent` spaces (see the module's note on why by hand).
fn yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) => {
            // Kubernetes' own order first (apiVersion, kind, metadata, name ...), then A-Z.
            let rank = |k: &str| FIRST.iter().position(|f| *f == k).unwrap_or(FIRST.len());
            let mut keys: Vec<(&String, &Value)> = map.iter().collect();
            keys.sort_by_key(|(k, _)| rank(k));
            for (k, val) in keys {
                let _ = write!(out, "{pad}{}:", key(k));
                nested(val, indent, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                let mut block = String::new();
                match item {
                    Value::Object(m) if !m.is_empty() => yaml(item, indent + 2, &mut block),
                    Value::Array(a) if !a.is_empty() => yaml(item, indent + 2, &mut block),
                    _ => {
                        let _ = writeln!(block, "{pad}  {}", scalar(item));
                    }
                }
                // The item's first line carries the dash.
                let _ = write!(out, "{pad}- {}", &block[indent + 2..]);
            }
        }
        _ => {
            let _ = writeln!(out, "{pad}{}", scalar(v));
        }
    }
}

/// After `key:`, a value: on the same line if it is a scalar or empty, else as a block.
fn nested(val: &Value, indent: usize, out: &mut String) {
    match val {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml(val, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml(val, indent, out);
        }
        _ => {
            let _ = writeln!(out, " {}", scalar(val));
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        // JSON's string, number, boolean and null are YAML's too.
        v => v.to_string(),
    }
}

/// A key as written: plain when it is a simple name, else double-quoted.
fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && k.starts_with(|c: char| c.is_ascii_alphabetic());
    if plain {
        k.to_string()
    } else {
        Value::String(k.into()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_blocks_nest_and_every_string_is_quoted() {
        let v = json!({
            "a": "no",
            "n": 3,
            "empty": {},
            "list": [1, "x", { "k": "v", "m": [true] }, []],
            "m": { "app.kubernetes.io/name": "pelt", "weird key": "a\"b\n" },
        });
        let mut out = String::new();
        yaml(&v, 0, &mut out);
        assert_eq!(
            out,
            "a: \"no\"\nempty: {}\nlist:\n- 1\n- \"x\"\n- k: \"v\"\n  m:\n  - true\n- []\nm:\n  app.kubernetes.io/name: \"pelt\"\n  \"weird key\": \"a\\\"b\\n\"\nn: 3\n"
        );
    }

    #[test]
    fn the_run_flags_pass_through_and_files_are_shipped() {
        let dir = std::env::temp_dir().join(format!("pelt-k8s-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("body.json");
        std::fs::write(&body, "{}").unwrap();
        let raw: Vec<String> = [
            "http://svc:8080/",
            "--agents",
            "3",
            "--image=x",
            "-c",
            "300",
            "--body-file",
            body.to_str().unwrap(),
            "--name",
            "load",
            "-H",
            "A: b",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (args, files) = run_args(&raw).unwrap();
        assert_eq!(
            args,
            [
                "http://svc:8080/",
                "-c",
                "300",
                "--body-file",
                "/var/run/pelt/file-0.json",
                "-H",
                "A: b"
            ]
        );
        assert_eq!(files[0].bytes, b"{}");
        for (flag, says) in [
            ("--html", "pelt report"),
            ("-q", "log is the result"),
            ("--unix-socket", "network"),
        ] {
            let raw = vec!["http://svc/".to_string(), flag.to_string(), "x".to_string()];
            let e = run_args(&raw).err().unwrap().to_string();
            assert!(e.contains(says), "{flag}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

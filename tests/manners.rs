//! The command line as a new user meets it: shell completions and the manual page made from
//! the one definition clap parses, a mistyped command answered with the one it is close to,
//! and a URL typed without its scheme taken as http://, as curl takes it.

mod util;

use std::process::{Command, Stdio};
use util::*;

/// pelt's output for `args`, which must succeed.
fn stdout_of(args: &[&str]) -> String {
    let (out, _) = run(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// What bash's completion (pelt's script, loaded as a user loads it) offers for `line`.
fn bash_completes(script: &str, words: &[&str]) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("pelt-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pelt.bash");
    std::fs::write(&file, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = words.join(" ");
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE='{line}'\nCOMP_POINT={}\n\
         _pelt pelt '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        file.display(),
        quoted.join(" "),
        words.len() - 1,
        line.len(),
        words[words.len() - 1],
        words[words.len().saturating_sub(2)],
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &program])
        .stderr(Stdio::inherit())
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_flags_and_commands() {
    let script = stdout_of(&["completions", "bash"]);
    assert_eq!(bash_completes(&script, &["pelt", "--rat"]), ["--rate"]);
    assert_eq!(bash_completes(&script, &["pelt", "se"]), ["serve"]);
    // A command's own flags.
    let serve = bash_completes(&script, &["pelt", "serve", "--h"]);
    assert!(serve.contains(&"--h2".to_string()), "{serve:?}");
    // Every shell clap_complete writes for, each a script that names pelt.
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let s = stdout_of(&["completions", shell]);
        assert!(s.contains("pelt") && s.contains("--rate"), "{shell}: {s}");
    }
    assert_bad_input(&["completions", "tcsh"], "invalid value 'tcsh'");
}

#[test]
fn the_manual_page_renders_with_every_command() {
    let page = stdout_of(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH pelt"),
        "{page}"
    );
    let mut man = Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", "100")
        .env("MAN_KEEP_FORMATTING", "0")
        .env("PAGER", "cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("man runs");
    use std::io::Write;
    man.stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = man.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for want in ["pelt", "--rate", "serve", "find-max", "completions"] {
        assert!(text.contains(want), "{want} not in the page: {text}");
    }
    // One page per command.
    let dir = std::env::temp_dir().join(format!("pelt-man-{}", std::process::id()));
    stdout_of(&["man", "--dir", dir.to_str().unwrap()]);
    for page in ["pelt.1", "pelt-serve.1", "pelt-find-max.1", "pelt-ghz.1"] {
        assert!(dir.join(page).exists(), "{page}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mistyped_command_is_answered_with_the_one_meant() {
    assert_bad_input(&["serv"], "did you mean `pelt serve`?");
    assert_bad_input(&["completion", "bash"], "did you mean `pelt completions`?");
    assert_bad_input(&["compar", "--target", "x"], "did you mean `pelt compare`?");
    assert_bad_input(&["find-mx"], "did you mean `pelt find-max`?");
}

#[test]
fn a_url_without_its_scheme_is_http() {
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    for typed in [
        format!("127.0.0.1:{port}"),
        format!(":{port}"),
        format!("127.0.0.1:{port}/x"),
    ] {
        let (out, _) = run(&[&typed, "-n", "5", "-c", "1", "--json", "-"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{typed}: {err}");
        assert!(
            err.contains(&format!("{typed} has no scheme: taking it as http://")),
            "{typed}: {err}"
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(count(&v, &["requests", "completed"]), 5, "{typed}");
        assert!(v["target"].as_str().unwrap().starts_with("http://"), "{v}");
    }
    // -q keeps stderr quiet.
    let (out, _) = run(&[&format!(":{port}"), "-n", "1", "-q"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no scheme"));
}

#[test]
fn results_written_to_dev_null_leave_it_a_device() {
    use std::os::unix::fs::FileTypeExt;
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let (out, _) = run(&[
        &url,
        "-n",
        "50",
        "-c",
        "2",
        "--json",
        "/dev/null",
        "--html",
        "/dev/null",
        "--csv",
        "/dev/null",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kind = std::fs::metadata("/dev/null").unwrap().file_type();
    assert!(
        kind.is_char_device(),
        "a result is written into /dev/null, never over it"
    );
}

//! The scenario tests' shop (`tests/scenario-app/app.py`) as a child process, and folders of
//! scenario files.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The shop, as a child process; ended by its PID when dropped.
pub struct Shop {
    child: Child,
    pub url: String,
}

impl Shop {
    pub fn start() -> Shop {
        Shop::start_with(&[], "http")
    }

    /// Over HTTPS, with this certificate and key (PEM files).
    pub fn start_tls(cert: &str, key: &str) -> Shop {
        Shop::start_with(&["--tls", cert, key], "https")
    }

    fn start_with(args: &[&str], scheme: &str) -> Shop {
        let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scenario-app/app.py");
        let mut child = Command::new("python3")
            .arg(app)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the shop");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the shop prints its port");
        Shop {
            child,
            url: format!("{scheme}://127.0.0.1:{}/", line.trim()),
        }
    }

    /// What the shop counted: "login ann", "items ann", "cart ann 7", "refused /items"...
    pub fn stats(&self) -> serde_json::Value {
        // Python's client, over HTTP or HTTPS (the shop's own certificate, not verified).
        let fetch = "import ssl, sys, urllib.request; \
            print(urllib.request.urlopen(sys.argv[1], context=ssl._create_unverified_context()).read().decode())";
        let out = Command::new("python3")
            .args(["-c", fetch, &format!("{}stats", self.url)])
            .output()
            .expect("python3 reads the shop's counts");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A folder with a scenario and its data, removed at the end.
pub struct Files(pub PathBuf);

impl Files {
    pub fn new(name: &str, files: &[(&str, &str)]) -> Files {
        let dir = std::env::temp_dir().join(format!("pelt-scenario-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        Files(dir)
    }

    pub fn path(&self, file: &str) -> String {
        self.0.join(file).display().to_string()
    }

    /// Writes `text` to `file` in the folder; returns its path.
    pub fn write(&self, file: &str, text: &str) -> String {
        std::fs::write(self.0.join(file), text).unwrap();
        self.path(file)
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `users.csv` of `n` users, u0 .. u(n-1).
pub fn users(n: usize) -> String {
    let mut text = String::from("user\n");
    for k in 0..n {
        text.push_str(&format!("u{k}\n"));
    }
    text
}

/// What the shop counted under keys that start with `prefix`, added up.
pub fn shop_count(stats: &serde_json::Value, prefix: &str) -> u64 {
    stats
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, n)| n.as_u64().unwrap())
        .sum()
}

/// The shop's journey: log in once (its token captured, its cookie in the jar), then list the
/// items (the second's id captured), think 1 to 3 ms, and add that item to the cart.
pub const SHOP: &str = r#"
config:
  data:
    - file: users.csv
      order: unique
scenarios:
  - name: shopper
    once:
      - post:
          url: /login
          name: login
          body: "user={{user}}"
          capture:
            - json: $.token
              as: token
          check:
            - status: 200
              name: logged in
          on_failure: stop
    flow:
      - get:
          url: /items
          name: items
          headers: {authorization: "Bearer {{token}}"}
          capture:
            - json: /items/1/id
              as: id
          check:
            - status: 200
              name: listed
      - think: 1ms..3ms
      - post:
          url: "/cart/{{id}}"
          name: cart
          headers: {authorization: "Bearer {{token}}"}
          check:
            - status: 201
              name: added
"#;

/// Every cart request the shop counted was for the id captured from the list (the second
/// item's).
pub fn assert_carts_took_the_captured_id(stats: &serde_json::Value) {
    assert!(
        stats
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.starts_with("cart "))
            .all(|k| k.ends_with(" 8")),
        "{stats}"
    );
}

/// A result's figures for the step `name` (its entry of `targets`).
pub fn target<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {}", v["targets"]))
}

/// The [`SHOP`] journey's steps completed, in result `v`, are what the shop counted (`stats`).
pub fn assert_steps_are_the_shops(v: &serde_json::Value, stats: &serde_json::Value, run: &str) {
    for (step, prefix) in [("login", "login "), ("items", "items "), ("cart", "cart ")] {
        assert_eq!(
            target(v, step)["completed"].as_u64(),
            Some(shop_count(stats, prefix)),
            "{run} {step}: {stats}"
        );
    }
}

use super::*;
use pelt_engine::scenario::{Next, Outcome, Rows, User};
use std::io::Write;

/// A folder with the files a scenario names, removed at the end.
struct Dir(PathBuf);

impl Dir {
    fn new(files: &[(&str, &str)]) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "pelt-scenario-{}-{}",
            std::process::id(),
            fastrand_name()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::File::create(dir.join(name))
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        Dir(dir)
    }

    fn compile(&self, text: &str) -> Result<Program, String> {
        compile(text, &self.0.join("shop.yaml"))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fastrand_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

const SHOP: &str = r#"
config:
  target: http://127.0.0.1:8080
  headers:
    accept: application/json
  data:
    - file: users.csv
scenarios:
  - name: shopper
    weight: 3
    once:
      - post:
          url: /login
          name: login
          json: {user: "{{user}}", password: "{{password}}"}
          capture:
            - json: $.token
              as: token
          check:
            - status: 200
          on_failure: stop
    flow:
      - get:
          url: /products?page={{seq}}
          capture:
            - json: /items/0/id
              as: id
            - regex: 'csrf_([a-z]+)'
              as: csrf
          check:
            - body: true
              contains: items
      - think: 1s..3s
      - post:
          url: /cart
          headers:
            authorization: Bearer {{token}}
          body: '{"id": {{id}}, "csrf": "{{csrf}}"}'
          check:
            - status: [200, 201]
            - header: content-type
              matches: json
  - name: browser
    flow:
      - get:
          url: /
      - think: exp(2s)
"#;

#[test]
fn a_journey_compiles_into_steps_variables_captures_and_checks() {
    let dir = Dir::new(&[("users.csv", "user,password\nann,a1\nbob,b2\n")]);
    let p = dir.compile(SHOP).unwrap();
    assert_eq!(p.target.as_deref(), Some("http://127.0.0.1:8080"));
    assert_eq!(p.variables, ["user", "password", "token", "id", "csrf"]);
    assert_eq!(p.data[0].rows, [["ann", "a1"], ["bob", "b2"]]);
    assert_eq!(p.data[0].columns, [0, 1]);
    assert_eq!(
        p.steps,
        ["login", "GET /products?page={{seq}}", "POST /cart", "GET /"]
    );
    assert_eq!(
        p.checks,
        [
            "status 200",
            "body contains items",
            "status 200,201",
            "header content-type matches json"
        ]
    );
    let shop = &p.scenarios[0];
    assert_eq!((shop.name.as_str(), shop.weight), ("shopper", 3.0));
    assert_eq!(p.scenarios[1].weight, 1.0);
    let Op::Request(login) = &shop.once[0] else {
        panic!("a request")
    };
    assert!(login.stop_on_failure);
    assert!(login.headers.iter().any(|(k, _)| k == "content-type"));
    assert!(
        login.headers.iter().any(|(k, _)| k == "accept"),
        "config headers on every step"
    );
    let mut body = String::new();
    login
        .body
        .as_ref()
        .unwrap()
        .render_into(&["ann".into(), "a1".into()], &mut body);
    assert_eq!(body, r#"{"password":"a1","user":"ann"}"#);
    let Op::Request(list) = &shop.flow[0] else {
        panic!("a request")
    };
    // pelt's own templates stay for the request's template.
    assert_eq!(
        list.url,
        Text(vec![Part::Lit("/products?page={{seq}}".into())])
    );
    assert!(list.keeps_body());
    assert!(
        !login.checks.is_empty() && login.keeps_body(),
        "the json capture reads the body"
    );
    assert_eq!(
        think(&shop.flow[1]),
        Some(Think::Uniform(
            Duration::from_secs(1),
            Duration::from_secs(3)
        ))
    );
    assert_eq!(
        think(&p.scenarios[1].flow[1]),
        Some(Think::Exponential(Duration::from_secs(2)))
    );
    let Op::Request(cart) = &shop.flow[2] else {
        panic!("a request")
    };
    assert!(
        !cart.keeps_body(),
        "a status and a header check leave the body unread"
    );
    let vars: Vec<String> = ["ann", "a1", "T", "42", "x\"y"].map(String::from).to_vec();
    let mut out = String::new();
    cart.body.as_ref().unwrap().render_into(&vars, &mut out);
    assert_eq!(out, r#"{"id": 42, "csrf": "x"y"}"#);
    let auth = &cart
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .unwrap()
        .1;
    assert_eq!(auth.vars().collect::<Vec<_>>(), [2]);
}

fn think(op: &Op) -> Option<Think> {
    match op {
        Op::Think(t) => Some(*t),
        Op::Request(_) => None,
    }
}

#[test]
fn captures_and_checks_read_the_response() {
    let dir = Dir::new(&[("users.csv", "user,password\nann,a1\n")]);
    let p = dir.compile(SHOP).unwrap();
    let Op::Request(list) = &p.scenarios[0].flow[0] else {
        panic!()
    };
    let headers = vec![("content-type".to_string(), "application/json".to_string())];
    let body = br#"{"items": [{"id": 42}], "x": "csrf_tok"}"#;
    let r = Response {
        status: 200,
        headers: &headers,
        body,
    };
    let taken: Vec<_> = list
        .captures
        .iter()
        .map(|c| (c.var, c.take(&r, None).map(|v| v.into_owned())))
        .collect();
    assert_eq!(
        taken,
        [(3, Some("42".to_string())), (4, Some("tok".to_string()))]
    );
    assert!(list.checks.iter().all(|c| c.passes(&r)));
    let empty = Response {
        status: 200,
        headers: &headers,
        body: b"{}",
    };
    assert_eq!(
        list.captures[0].take(&empty, None),
        None,
        "a capture that finds nothing"
    );
    assert!(!list.checks[0].passes(&empty));
    let Op::Request(cart) = &p.scenarios[0].flow[2] else {
        panic!()
    };
    assert!(cart.checks.iter().all(|c| c.passes(&Response {
        status: 201,
        headers: &headers,
        body: b""
    })));
    assert!(!cart.checks[0].passes(&Response {
        status: 500,
        headers: &headers,
        body: b""
    }));
    assert!(!cart.checks[1].passes(&Response {
        status: 200,
        headers: &[],
        body: b""
    }));
}

#[test]
fn jsonpath_of_names_and_indexes_is_a_pointer() {
    assert_eq!(
        jsonpath_pointer("$.items[0].id").as_deref(),
        Some("/items/0/id")
    );
    assert_eq!(
        jsonpath_pointer("$['a/b'][12]").as_deref(),
        Some("/a~1b/12")
    );
    assert_eq!(jsonpath_pointer("$"), Some(String::new()));
    assert_eq!(jsonpath_pointer("$..id"), None);
    assert_eq!(jsonpath_pointer("$.items[*]"), None);
    assert_eq!(jsonpath_pointer("items.id"), None);
}

/// Each mistake: the file's text, and where and what the one line says.
#[test]
fn every_mistake_is_one_line_with_its_file_line_and_column() {
    let dir = Dir::new(&[
        ("users.csv", "user,password\nann,a1\n"),
        ("empty.csv", "user\n"),
        ("users.jsonl", "{\"user\": \"ann\"}\n{\"name\": \"bob\"}\n"),
    ]);
    let flow =
        |step: &str| format!("scenarios:\n  - flow:\n      - get:\n          url: /\n{step}");
    let cases: Vec<(String, &str)> = vec![
        (flow("          bogus: 1\n"), ":5:11: unknown field `bogus`"),
        ("scenarios:\n  - flow:\n      - fetch:\n          url: /\n".into(), ":3:9: unknown variant `fetch`"),
        (flow("          headers: {x-a: \"{{token}}\"}\n"), ":5:26: variable 'token' is used before any step captures it"),
        (flow("          capture:\n            - regex: '(unclosed'\n              as: x\n"), ":6:22: bad regex '(unclosed'"),
        (flow("          capture:\n            - json: items.id\n              as: x\n"), ":6:21: 'items.id' is neither a JSON pointer"),
        (flow("          capture:\n            - header: x-id\n              as: seq\n"), ":7:19: 'seq' cannot name a variable"),
        (flow("          capture:\n            - header: x-id\n              json: /a\n              as: a\n"), ":6:15: a capture takes one of json, regex, header and status"),
        (flow("          check:\n            - status: 200\n              contains: x\n"), ":6:15: a status check lists the codes it takes"),
        (flow("          check:\n            - header: x\n"), ":6:15: a check takes one of equals, contains, matches and exists"),
        ("scenarios:\n  - weight: 0\n    flow:\n      - get: {url: /}\n".into(), ":2:13: weight 0 must be above 0"),
        ("scenarios:\n  - weight: -2\n    flow:\n      - get: {url: /}\n".into(), ":2:13: weight -2 must be above 0"),
        ("scenarios:\n  - flow:\n      - think: 2x\n".into(), ":3:16: think:"),
        ("scenarios:\n  - flow:\n      - think: 3s..1s\n".into(), ":3:16: think: the range 3s..1s ends before it starts"),
        ("scenarios:\n  - flow:\n      - think: 1s\n".into(), ": scenario 'scenario 1': its flow sends no request"),
        ("scenarios:\n  - flow:\n      - get: {url: products}\n".into(), ":3:20: url 'products' must be a path"),
        ("config:\n  data:\n    - file: missing.csv\nscenarios:\n  - flow:\n      - get: {url: /}\n".into(), ":3:13: cannot read data file"),
        ("config:\n  data:\n    - file: empty.csv\nscenarios:\n  - flow:\n      - get: {url: /}\n".into(), ":3:13: data file"),
        ("config:\n  data:\n    - file: users.jsonl\nscenarios:\n  - flow:\n      - get: {url: /}\n".into(), ":3:13: "),
        ("config:\n  data:\n    - file: users.csv\nscenarios:\n  - flow:\n      - get: {url: \"/{{name}}\"}\n".into(), "variable 'name' is used before any step captures it, and no data file has a column of that name"),
        ("config:\n  target: ftp://x\nscenarios:\n  - flow:\n      - get: {url: /}\n".into(), ":2:11: target must be an http://, https://, grpc:// or grpcs:// URL"),
        ("scenarios:\n  - flow:\n      - grpc: {call: a.B/C}\n      - get: {url: /}\n".into(), ":4:9: a scenario file's steps are all HTTP requests or all grpc calls"),
        ("config:\n  target: http://x\nscenarios:\n  - flow:\n      - grpc: {call: a.B/C}\n".into(), ":5:9: a grpc step needs a grpc:// or grpcs:// target"),
        ("config:\n  target: grpc://x:1\nscenarios:\n  - flow:\n      - get: {url: /}\n".into(), ":5:9: a grpc:// target's steps are grpc calls"),
        ("scenarios:\n  - flow:\n      - grpc: {call: nomethod}\n".into(), ":3:22: call 'nomethod' must name a method"),
        ("scenarios:\n  - flow:\n      - grpc: {call: a.B/C, check: [{status: NOPE}]}\n".into(), ":3:46: 'NOPE' is not a gRPC status"),
        ("scenarios:\n  - flow:\n      - grpc: {call: a.B/C, check: [{status: 200}]}\n".into(), ":3:46: a grpc step's status is a gRPC code"),
        ("scenarios:\n  - flow:\n      - grpc: {call: a.B/C, metadata: {te: x}}\n".into(), "metadata 'te': pelt sets it on a gRPC call"),
        ("scenarios:\n  - flow:\n      - grpc: {call: a.B/C, json: {}, body: '{}'}\n".into(), "a grpc step has one of json and body"),
        (flow("          check:\n            - status: OK\n"), ":6:23: status 'OK': an HTTP step's status is a number"),
        ("scenarios: []\n".into(), ": no scenarios"),
        ("scenarios:\n  - flow:\n      - get:\n          url: \"/{{ bad name }}\"\n".into(), ":4:16: '{{bad name}}' is not a variable name"),
    ];
    for (text, want) in cases {
        let e = dir.compile(&text).expect_err(&text);
        assert!(
            e.starts_with(&dir.0.join("shop.yaml").display().to_string()),
            "{e}"
        );
        assert!(e.contains(want), "{text}\nsaid: {e}\nwanted: {want}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn a_variable_is_known_after_the_step_that_captures_it_in_order() {
    let dir = Dir::new(&[]);
    // Captured in the flow, used by a later step of the flow: fine.
    let ok = "scenarios:\n  - flow:\n      - get:\n          url: /a\n          capture:\n            - status: true\n              as: code\n      - get:\n          url: /b/{{code}}\n";
    assert!(dir.compile(ok).is_ok());
    // Used by a step before the one that captures it: the first iteration has no value.
    let late = "scenarios:\n  - flow:\n      - get:\n          url: /b/{{code}}\n      - get:\n          url: /a\n          capture:\n            - status: true\n              as: code\n";
    assert!(dir
        .compile(late)
        .unwrap_err()
        .contains(":4:16: variable 'code' is used before"));
    // Another scenario's captures are not this one's.
    let other = "scenarios:\n  - flow:\n      - get:\n          url: /a\n          capture:\n            - status: true\n              as: code\n  - flow:\n      - get:\n          url: /b/{{code}}\n";
    assert!(dir
        .compile(other)
        .unwrap_err()
        .contains(":10:16: variable 'code'"));
    // JSON files are YAML too.
    let json = r#"{"scenarios": [{"flow": [{"get": {"url": "/j"}}]}]}"#;
    assert_eq!(dir.compile(json).unwrap().steps, ["GET /j"]);
}

/// A user's journey driven by hand, as the worker drives it: login once (a token and a
/// cookie), then list, think, cart, again and again.
const JOURNEY: &str = r#"
config:
  data:
    - file: users.csv
scenarios:
  - name: shopper
    once:
      - post:
          url: /login
          name: login
          body: "user={{user}}"
          capture:
            - json: /token
              as: token
          check:
            - status: 200
          on_failure: stop
    flow:
      - get:
          url: /items
          capture:
            - json: /items/0
              as: id
          check:
            - status: 200
              name: listed
          on_failure: stop
      - think: 2s
      - post:
          url: "/cart/{{id}}"
          headers: {authorization: "Bearer {{token}}"}
"#;

fn step_name<'p>(p: &'p Program, next: &Next) -> &'p str {
    match next {
        Next::Request(step) => &p.steps[step.id as usize],
        other => panic!("a request, not {other:?}"),
    }
}

#[test]
fn a_user_logs_in_once_then_iterates_with_its_captures_and_cookies() {
    let dir = Dir::new(&[("users.csv", "user\nann\nbob\n")]);
    let p = dir.compile(JOURNEY).unwrap();
    let mut rows = Rows::new(&p, 0, 1, 7);
    let mut user = User::new(&p, 0, &mut rows, 1).unwrap();
    let mut counts = ScenarioCounts::new(&p);
    // A name, not 127.0.0.1: the jar counts loopback as a secure origin, as browsers do.
    let url = |path: &str| url::Url::parse(&format!("http://shop.test{path}")).unwrap();
    let var = |u: &User, name: &str| {
        u.vars()[p.variables.iter().position(|v| v == name).unwrap()].clone()
    };
    assert_eq!(
        var(&user, "user"),
        "ann",
        "the first row for the first user"
    );

    let next = user.next(&p, &mut rows);
    assert_eq!(step_name(&p, &next), "login");
    assert!(!user.started(), "the login is not an iteration");
    let login_headers = vec![
        (
            "set-cookie".to_string(),
            "sid=abc; Path=/; HttpOnly".to_string(),
        ),
        ("set-cookie".to_string(), "tls=1; Secure".to_string()),
    ];
    let r = Response {
        status: 200,
        headers: &login_headers,
        body: br#"{"token": "T1"}"#,
    };
    let outcome = user.respond(&p, &url("/login"), &r, &mut counts);
    assert_eq!(outcome, Outcome::default());
    assert_eq!(var(&user, "token"), "T1");
    // The jar sends sid on every path of the origin, never the Secure cookie over http.
    assert_eq!(user.cookie_header(2, &url("/cart/1")), "sid=abc");

    for round in 0..2 {
        let next = user.next(&p, &mut rows);
        assert_eq!(step_name(&p, &next), "GET /items");
        assert!(user.started(), "round {round}: an iteration starts");
        let body = format!(r#"{{"items": [{}]}}"#, 40 + round);
        let r = Response {
            status: 200,
            headers: &[],
            body: body.as_bytes(),
        };
        assert_eq!(
            user.respond(&p, &url("/items"), &r, &mut counts)
                .iteration_ended,
            None
        );
        assert_eq!(var(&user, "id"), (40 + round).to_string());
        match user.next(&p, &mut rows) {
            Next::Think {
                pause,
                iteration_ended: None,
            } => assert_eq!(pause, Duration::from_secs(2)),
            other => panic!("a think time, not {other:?}"),
        }
        assert_eq!(
            step_name(&p, &user.next(&p, &mut rows)),
            "POST /cart/{{id}}"
        );
        let outcome = user.respond(
            &p,
            &url("/cart/1"),
            &Response {
                status: 201,
                headers: &[],
                body: b"",
            },
            &mut counts,
        );
        assert_eq!(
            outcome.iteration_ended,
            Some(false),
            "the flow's last step ends a good iteration"
        );
    }
    // Counted by name: login's status check once, "listed" twice; captures by step and name.
    assert_eq!(counts.checks, [[1, 0], [2, 0]]);
    assert_eq!(p.captures, ["login: token", "GET /items: id"]);
    assert_eq!(counts.captures, [[1, 0], [2, 0]]);
}

#[test]
fn a_failed_step_that_says_stop_ends_the_iteration_as_failed_and_a_failed_login_retries() {
    let dir = Dir::new(&[("users.csv", "user\nann\n")]);
    let p = dir.compile(JOURNEY).unwrap();
    let mut rows = Rows::new(&p, 0, 1, 7);
    let mut user = User::new(&p, 0, &mut rows, 1).unwrap();
    let mut counts = ScenarioCounts::new(&p);
    let url = url::Url::parse("http://127.0.0.1:8080/").unwrap();
    user.next(&p, &mut rows);
    // The login fails its check: the user tries it again, not the flow.
    let refused = user.respond(
        &p,
        &url,
        &Response {
            status: 403,
            headers: &[],
            body: b"{}",
        },
        &mut counts,
    );
    assert!(refused.stopped && refused.capture_failed && refused.failed_checks == 1);
    assert_eq!(refused.iteration_ended, None);
    assert_eq!(step_name(&p, &user.next(&p, &mut rows)), "login");
    user.respond(
        &p,
        &url,
        &Response {
            status: 200,
            headers: &[],
            body: br#"{"token": "T"}"#,
        },
        &mut counts,
    );
    assert_eq!(step_name(&p, &user.next(&p, &mut rows)), "GET /items");
    // The list fails (a 500 without items): the iteration ends, failed, and starts over.
    let failed = user.respond(
        &p,
        &url,
        &Response {
            status: 500,
            headers: &[],
            body: b"oops",
        },
        &mut counts,
    );
    assert_eq!((failed.stopped, failed.iteration_ended), (true, Some(true)));
    assert_eq!(step_name(&p, &user.next(&p, &mut rows)), "GET /items");
    assert!(user.started());
    // A transport error on the flow fails the iteration too.
    assert_eq!(user.fail(), Some(true));
    assert_eq!(step_name(&p, &user.next(&p, &mut rows)), "GET /items");
    assert_eq!(counts.checks, [[1, 1], [0, 1]]);
    assert_eq!(counts.captures, [[1, 1], [0, 1]], "found, missing");
}

#[test]
fn data_rows_go_to_users_and_iterations_without_repeats_across_workers() {
    let text = "config:\n  data:\n    - file: users.csv\n      order: unique\n    - file: items.csv\n      per: iteration\nscenarios:\n  - flow:\n      - get: {url: \"/{{user}}/{{item}}\"}\n";
    let dir = Dir::new(&[
        ("users.csv", "user\nu0\nu1\nu2\n"),
        ("items.csv", "item\ni0\ni1\n"),
    ]);
    let p = dir.compile(text).unwrap();
    let seen = |u: &User| format!("{}/{}", u.vars()[0], u.vars()[1]);
    // Two workers: rows interleave, and the unique file runs out after its three rows.
    let mut w0 = Rows::new(&p, 0, 2, 1);
    let mut w1 = Rows::new(&p, 1, 2, 1);
    let a = User::new(&p, 0, &mut w0, 1).unwrap();
    let b = User::new(&p, 0, &mut w1, 1).unwrap();
    let c = User::new(&p, 0, &mut w0, 1).unwrap();
    assert_eq!(
        [&a, &b, &c].map(|u| u.vars()[0].clone()),
        ["u0", "u1", "u2"]
    );
    assert!(User::new(&p, 0, &mut w1, 1).is_none(), "no unique row left");
    // Per iteration: each iteration takes the next row of its worker's share (rows offset,
    // offset + workers, ... round the file): with two workers and two rows, worker 0 takes
    // i0 and worker 1 i1, every time; over the run every row is taken as often.
    let (mut a, mut b) = (a, b);
    let mut items = Vec::new();
    for _ in 0..2 {
        for (u, rows) in [(&mut a, &mut w0), (&mut b, &mut w1)] {
            assert!(matches!(u.next(&p, rows), Next::Request(_)));
            items.push(seen(u));
            u.fail();
        }
    }
    assert_eq!(items, ["u0/i0", "u1/i1", "u0/i0", "u1/i1"]);
}

#[test]
fn each_user_has_its_own_cookie_jar() {
    let dir = Dir::new(&[]);
    let p = dir
        .compile("scenarios:\n  - flow:\n      - get: {url: /}\n")
        .unwrap();
    let mut rows = Rows::new(&p, 0, 1, 1);
    let mut a = User::new(&p, 0, &mut rows, 1).unwrap();
    let mut b = User::new(&p, 0, &mut rows, 2).unwrap();
    let home = url::Url::parse("http://shop.test/").unwrap();
    let mut counts = ScenarioCounts::new(&p);
    a.next(&p, &mut rows);
    let set = vec![("set-cookie".to_string(), "sid=a; Path=/account".to_string())];
    a.respond(
        &p,
        &home,
        &Response {
            status: 200,
            headers: &set,
            body: b"",
        },
        &mut counts,
    );
    assert_eq!(
        a.cookie_header(0, &url::Url::parse("http://shop.test/account/x").unwrap()),
        "sid=a"
    );
    assert_eq!(
        a.cookie_header(1, &home),
        "",
        "the cookie's path is /account"
    );
    assert_eq!(
        b.cookie_header(0, &url::Url::parse("http://shop.test/account/x").unwrap()),
        "",
        "never another user's"
    );
    let gone = vec![(
        "set-cookie".to_string(),
        "sid=; Path=/account; Max-Age=0".to_string(),
    )];
    a.next(&p, &mut rows);
    a.respond(
        &p,
        &home,
        &Response {
            status: 200,
            headers: &gone,
            body: b"",
        },
        &mut counts,
    );
    assert_eq!(
        a.cookie_header(0, &url::Url::parse("http://shop.test/account/x").unwrap()),
        "",
        "expired"
    );
}

#[test]
fn every_step_has_its_own_id_and_steps_of_one_name_share_it_in_the_figures() {
    let dir = Dir::new(&[]);
    let text = "scenarios:\n  - flow:\n      - get: {url: /a, name: home}\n  - flow:\n      - get: {url: /b, name: home}\n";
    let p = dir.compile(text).unwrap();
    assert_eq!(p.steps, ["home", "home"]);
    let ids: Vec<u32> = p
        .scenarios
        .iter()
        .map(|s| match &s.flow[0] {
            Op::Request(step) => step.id,
            Op::Think(_) => unreachable!(),
        })
        .collect();
    assert_eq!(ids, [0, 1]);
}

//! A virtual user allocates nothing per request in steady state: reading a response back
//! (`read_complete` into reused fields), its checks and JSON captures (walked in place, the
//! values written over the old ones), its cookie jar's `Cookie` value (made again only when the
//! jar changes). Counted by a global allocator over a thousand iterations of a journey whose
//! login sets a cookie and whose every step captures or checks.

use pelt_codec::response::{read_complete, Fields};
use pelt_load::scenario::{Next, Response, Rows, ScenarioCounts, User};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes straight to the system allocator; the count is a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const JOURNEY: &str = r#"
scenarios:
  - once:
      - post:
          url: /login
          name: login
          capture:
            - json: $.token
              as: token
            - header: x-user
              as: user
    flow:
      - get:
          url: /items
          name: items
          capture:
            - json: /items/1/id
              as: id
            - regex: '"name": "(\w+)"'
              as: name
          check:
            - status: 200
            - json: /items/0/id
              equals: 7
            - header: content-type
              matches: json
      - post:
          url: "/cart/{{id}}"
          name: cart
          check:
            - status: [200, 201]
            - body: true
              contains: added
"#;

const LOGIN: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-User: ann\r\nSet-Cookie: sid=S.ann; Path=/; HttpOnly\r\nContent-Length: 17\r\n\r\n{\"token\": \"T.an\"}";
const ITEMS: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2e\r\n{\"items\": [{\"id\": 7}, {\"id\": 8}], \"name\": \"x\"}\r\n0\r\n\r\n";
const CART: &[u8] = b"HTTP/1.1 201 Created\r\nServer: nginx\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"added\": \"8\"}\n";

#[test]
fn a_user_allocates_nothing_per_request_once_warm() {
    let dir = std::env::temp_dir().join(format!("pelt-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("journey.yaml");
    std::fs::write(&path, JOURNEY).unwrap();
    let program = pelt_load::scenario::load(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let urls: Vec<url::Url> = ["/login", "/items", "/cart/8"]
        .iter()
        .map(|p| url::Url::parse(&format!("http://shop.test{p}")).unwrap())
        .collect();
    let mut rows = Rows::new(&program, 0, 1, 1);
    let mut user = User::new(&program, 0, &mut rows, 1).unwrap();
    let mut counts = ScenarioCounts::new(&program);
    let (mut fields, mut body) = (Fields::default(), Vec::new());
    let mut sent = Vec::with_capacity(2);
    let mut step = |user: &mut User, counts: &mut ScenarioCounts| {
        let Next::Request(s) = user.next(&program, &mut rows) else {
            panic!("every op is a request")
        };
        let id = s.id as usize;
        let cookie_len = user.cookie_header(s.id, &urls[id]).len();
        let raw = [LOGIN, ITEMS, CART][id];
        let status = read_complete(raw, &mut fields, &mut body).unwrap();
        let r = Response {
            status,
            headers: fields.as_slice(),
            body: &body,
        };
        let outcome = user.respond(&program, &urls[id], &r, counts);
        (id, cookie_len, outcome)
    };
    // The login, then warm iterations: buffers and variables grow to their size.
    let (login, _, _) = step(&mut user, &mut counts);
    assert_eq!(login, 0);
    for _ in 0..10 {
        step(&mut user, &mut counts);
        step(&mut user, &mut counts);
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..1000 {
        sent.clear();
        for _ in 0..2 {
            let (id, cookie_len, outcome) = step(&mut user, &mut counts);
            assert!(outcome.failed_checks == 0 && !outcome.capture_failed);
            sent.push((id, cookie_len));
        }
    }
    let during = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(during, 0, "allocations over 2,000 requests");
    // It did the work: every check passed, every capture found its value, and every
    // request after the login carried the session cookie.
    assert_eq!(sent, [(1, "sid=S.ann".len()), (2, "sid=S.ann".len())]);
    assert!(counts
        .checks
        .iter()
        .all(|[passed, failed]| *passed > 0 && *failed == 0));
    assert!(counts
        .captures
        .iter()
        .all(|[found, missing]| *found > 0 && *missing == 0));
    let var =
        |name: &str| user.vars()[program.variables.iter().position(|v| v == name).unwrap()].clone();
    assert_eq!(
        (var("token"), var("user"), var("id"), var("name")),
        ("T.an".into(), "ann".into(), "8".into(), "x".into())
    );
}

//! A virtual user allocates nothing per request in steady state: reading a response back
//! (`read_complete` into reused fields), its checks and JSON captures (walked in place, the
//! values written over the old ones), its cookie jar's `Cookie` value (made again only when the
//! jar changes). Counted by a global allocator over a thousand iterations of a journey whose
//! login sets a cookie and whose every step captures or checks; over HTTP/1.1 and over HTTP/2
//! (the session's header fields and body bytes into the same reused storage, and each request,
//! rendered as text, turned into its header block). Each thread counts its own allocations, so
//! the test harness's thread (reporting another test's end) never lands in a test's count.

use pelt_codec::h2::{self, Event, Session};
use pelt_codec::response::{read_complete, Fields};
use pelt_load::scenario::{Next, Response, Rows, ScenarioCounts, User};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    /// This thread's allocations: const-initialised and without a destructor, so reading it
    /// never allocates.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // At a thread's teardown the slot may be gone: nothing to count then.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every call goes straight to the system allocator; the count is a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The tests share one temporary folder: one at a time.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

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

/// How a response reaches the user: from its HTTP/1.1 bytes, or from HTTP/2 frames.
enum Wire {
    Http1,
    Http2 {
        session: Box<Session>,
        out: Vec<u8>,
        /// Each response as the server's frames, on stream 1.
        frames: [Vec<u8>; 3],
        /// A request rendered as text, and its header block and body.
        text: Vec<u8>,
        block: Vec<u8>,
        request_body: Vec<u8>,
    },
}

/// `raw` (an HTTP/1.1 response) as an HTTP/2 server sends it: HEADERS with literal fields, then
/// its body in two DATA frames, the second ending the stream.
fn frames_of(raw: &[u8]) -> Vec<u8> {
    let mut fields = Fields::default();
    let mut body = Vec::new();
    let status = read_complete(raw, &mut fields, &mut body).unwrap();
    let mut block = Vec::new();
    let literal = |block: &mut Vec<u8>, name: &[u8], value: &[u8]| {
        block.push(0);
        block.push(name.len() as u8);
        block.extend_from_slice(name);
        block.push(value.len() as u8);
        block.extend_from_slice(value);
    };
    literal(&mut block, b":status", status.to_string().as_bytes());
    for (n, v) in fields.as_slice() {
        if n != "transfer-encoding" {
            literal(&mut block, n.as_bytes(), v.as_bytes());
        }
    }
    let mut wire = Vec::new();
    h2::frame_header(
        &mut wire,
        block.len(),
        h2::kind::HEADERS,
        h2::flag::END_HEADERS,
        1,
    );
    wire.extend_from_slice(&block);
    let (a, b) = body.split_at(body.len() / 2);
    h2::frame_header(&mut wire, a.len(), h2::kind::DATA, 0, 1);
    wire.extend_from_slice(a);
    h2::frame_header(&mut wire, b.len(), h2::kind::DATA, h2::flag::END_STREAM, 1);
    wire.extend_from_slice(b);
    wire
}

#[test]
fn a_user_allocates_nothing_per_request_once_warm() {
    journey_allocates_nothing(Wire::Http1);
}

#[test]
fn over_http2_too() {
    let mut session = Session::new();
    session.read_responses();
    journey_allocates_nothing(Wire::Http2 {
        session: Box::new(session),
        out: Vec::new(),
        frames: [frames_of(LOGIN), frames_of(ITEMS), frames_of(CART)],
        text: Vec::new(),
        block: Vec::new(),
        request_body: Vec::new(),
    });
}

fn journey_allocates_nothing(mut wire: Wire) {
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
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
        let status = match &mut wire {
            Wire::Http1 => read_complete(raw, &mut fields, &mut body).unwrap(),
            Wire::Http2 {
                session,
                out,
                frames,
                text,
                block,
                request_body,
            } => {
                // The request as the worker sends it: rendered, then made a header block.
                text.clear();
                text.extend_from_slice(b"POST /cart/8 HTTP/1.1\r\nHost: shop.test\r\n");
                text.extend_from_slice(b"Cookie: ");
                text.extend_from_slice(user.cookie().as_bytes());
                text.extend_from_slice(b"\r\nContent-Length: 2\r\n\r\n{}");
                block.clear();
                request_body.clear();
                h2::encode_request(text, "https", block, request_body).unwrap();
                assert_eq!(request_body, b"{}");
                fields.clear();
                body.clear();
                let mut status = 0;
                session
                    .receive(&frames[id], out, &mut |e| {
                        match e {
                            Event::Field { name, value, .. } if !name.starts_with(b":") => {
                                fields.push_bytes(name, value)
                            }
                            Event::Body { bytes, .. } => body.extend_from_slice(bytes),
                            Event::Headers { status: s, .. } => status = s.unwrap(),
                            _ => {}
                        }
                        0
                    })
                    .unwrap();
                out.clear();
                status
            }
        };
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
    let before = allocations();
    for _ in 0..1000 {
        sent.clear();
        for _ in 0..2 {
            let (id, cookie_len, outcome) = step(&mut user, &mut counts);
            assert!(outcome.failed_checks == 0 && !outcome.capture_failed);
            sent.push((id, cookie_len));
        }
    }
    let during = allocations() - before;
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

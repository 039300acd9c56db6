//! `--reflect`: a service's descriptors from the server's reflection service
//! (`grpc.reflection.v1.ServerReflection`, or `v1alpha` where the server has only that), as
//! grpcurl and ghz take them. Asked once while the run is prepared, before its load: one
//! connection, one call per question (the file that defines a symbol, then any file it imports
//! that did not come with it), each a bidirectional stream of one message.
//!
//! Over pelt's own HTTP/2 framing (`pelt_codec::h2`, sans-I/O) on a blocking socket, with
//! rustls's blocking stream for grpcs://: the run's TLS settings, verified as the run will be.
//! The reflection messages are declared here with prost's derive (seven fields of
//! grpc/reflection/v1/reflection.proto; the whole file is not needed).

use pelt_codec::grpc as wire;
use pelt_codec::h2::{self, Session};
use prost::Message;
use prost_reflect::DescriptorPool;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

#[derive(Clone, PartialEq, Message)]
struct Request {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

#[derive(Clone, PartialEq, Message)]
struct Response {
    #[prost(oneof = "Answer", tags = "4, 6, 7")]
    answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    #[prost(message, tag = "4")]
    Files(Files),
    #[prost(message, tag = "6")]
    Services(Services),
    #[prost(message, tag = "7")]
    Error(Refused),
}

#[derive(Clone, PartialEq, Message)]
struct Files {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct Services {
    #[prost(message, repeated, tag = "1")]
    service: Vec<Service>,
}

#[derive(Clone, PartialEq, Message)]
struct Service {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct Refused {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// A file's name and the files it imports, read from its descriptor's bytes.
#[derive(Clone, PartialEq, Message)]
struct FileHead {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, repeated, tag = "3")]
    dependency: Vec<String>,
}

/// Where the server is and how to reach it.
pub struct Server<'a> {
    pub addr: SocketAddr,
    /// `:authority` (the URL's host and port).
    pub authority: &'a str,
    /// grpcs://: the run's TLS client (ALPN h2).
    pub tls: Option<&'a pelt_engine::TlsClient>,
    /// The whole exchange's time limit.
    pub timeout: Duration,
}

/// The files that define `service` (`package.Service`) and everything they import, from the
/// server's reflection service, as a pool. An error says what the server said or did.
pub fn descriptors(server: &Server<'_>, service: &str) -> Result<DescriptorPool, String> {
    let mut conn = Connection::open(server)?;
    let mut version = "v1";
    let first = Ask::FileContainingSymbol(service.to_string());
    let answer = match conn.ask(version, &first) {
        // A server with only the older name answers UNIMPLEMENTED for v1.
        Err(Failed::Status(12, _)) => {
            version = "v1alpha";
            conn.ask(version, &first)
        }
        other => other,
    }
    .map_err(|e| e.say(server))?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    if let Answer::Error(_) = &answer {
        // Say which services it has.
        if let Ok(Answer::Services(list)) = conn.ask(version, &Ask::ListServices(String::new())) {
            let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
            return Err(format!(
                "--reflect: {} has no service {service} (it has {})",
                server.authority,
                names.join(", ")
            ));
        }
    }
    add(&mut files, answer, service)?;
    // Imports that did not come with it, asked for by name (bounded: a schema is finite).
    for _ in 0..256 {
        let missing: BTreeSet<String> = files
            .values()
            .filter_map(|b| FileHead::decode(b.as_slice()).ok())
            .flat_map(|h| h.dependency)
            .filter(|d| !files.contains_key(d))
            .collect();
        let Some(name) = missing.into_iter().next() else {
            break;
        };
        let answer = conn
            .ask(version, &Ask::FileByFilename(name.clone()))
            .map_err(|e| e.say(server))?;
        add(&mut files, answer, &name)?;
    }
    // A FileDescriptorSet is its files, each field 1.
    let mut set = Vec::new();
    for bytes in files.values() {
        prost::encoding::bytes::encode(1, bytes, &mut set);
    }
    DescriptorPool::decode(set.as_slice())
        .map_err(|e| format!("--reflect: the server's descriptors do not make a schema: {e}"))
}

/// Keeps the files of `answer` (to question `asked`), by name.
fn add(files: &mut BTreeMap<String, Vec<u8>>, answer: Answer, asked: &str) -> Result<(), String> {
    match answer {
        Answer::Files(f) => {
            for bytes in f.file_descriptor_proto {
                let head = FileHead::decode(bytes.as_slice()).map_err(|e| {
                    format!("--reflect: a file descriptor that does not decode: {e}")
                })?;
                files.entry(head.name).or_insert(bytes);
            }
            Ok(())
        }
        Answer::Error(r) => Err(format!(
            "--reflect: the server knows no {asked} ({}: {})",
            wire::code_name(r.error_code as u32),
            r.error_message
        )),
        Answer::Services(_) => Err(format!(
            "--reflect: the server answered {asked} with a list of services"
        )),
    }
}

/// Why a question got no answer.
enum Failed {
    /// The call ended with this status (and message) and no answer.
    Status(u32, String),
    /// The connection or the exchange failed.
    Io(String),
}

impl Failed {
    fn say(self, server: &Server<'_>) -> String {
        match self {
            Failed::Status(12, _) => format!(
                "--reflect: {} has no reflection service (UNIMPLEMENTED); give --proto or \
                 --protoset",
                server.authority
            ),
            Failed::Status(code, m) => format!(
                "--reflect: the reflection call ended {}: {m}",
                wire::code_name(code)
            ),
            Failed::Io(e) => format!("--reflect: {}: {e}", server.authority),
        }
    }
}

/// A blocking socket, plain or TLS.
enum Socket {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Socket {
    /// Reads what came, again when a signal cut the wait short (a Node.js process takes
    /// signals on every thread).
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = match self {
                Socket::Plain(s) => s.read(buf),
                Socket::Tls(s) => s.read(buf),
            };
            match n {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                n => return n,
            }
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Socket::Plain(s) => s.write_all(bytes),
            Socket::Tls(s) => s.write_all(bytes).and_then(|()| s.flush()),
        }
    }
}

/// One HTTP/2 connection to the server, asking one question per stream.
struct Connection<'a> {
    socket: Socket,
    session: Session,
    authority: &'a str,
    scheme: &'static str,
    deadline: Instant,
}

impl<'a> Connection<'a> {
    fn open(server: &Server<'a>) -> Result<Connection<'a>, String> {
        let io = |e: std::io::Error| format!("--reflect: {}: {e}", server.authority);
        let tcp = TcpStream::connect_timeout(&server.addr, server.timeout).map_err(io)?;
        tcp.set_read_timeout(Some(server.timeout)).map_err(io)?;
        tcp.set_write_timeout(Some(server.timeout)).map_err(io)?;
        let _ = tcp.set_nodelay(true);
        let socket = match server.tls {
            None => Socket::Plain(tcp),
            Some(t) => {
                let c = rustls::ClientConnection::new(t.config.clone(), t.server_name.clone())
                    .map_err(|e| format!("--reflect: TLS: {e}"))?;
                Socket::Tls(Box::new(rustls::StreamOwned::new(c, tcp)))
            }
        };
        let mut session = Session::new();
        session.read_responses();
        let mut conn = Connection {
            socket,
            session,
            authority: server.authority,
            scheme: if server.tls.is_some() {
                "https"
            } else {
                "http"
            },
            deadline: Instant::now() + server.timeout,
        };
        let mut out = Vec::new();
        h2::client_preface(&mut out);
        conn.socket.write_all(&out).map_err(io)?;
        Ok(conn)
    }

    /// One question, on a new stream: its answer, or why none came.
    fn ask(&mut self, version: &str, ask: &Ask) -> Result<Answer, Failed> {
        let request = Request {
            host: String::new(),
            ask: Some(ask.clone()),
        };
        let mut body = Vec::new();
        wire::frame(&request.encode_to_vec(), &mut body);
        let path = format!("/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo");
        let fields = [
            ("content-type".to_string(), "application/grpc".to_string()),
            ("te".to_string(), "trailers".to_string()),
        ];
        let block = h2::encode_headers("POST", self.scheme, self.authority, &path, &fields, 0);
        let id = self.session.open_stream();
        let mut out = Vec::new();
        self.session.headers(&mut out, id, &block, false);
        let (mut sent, mut window) = (0, self.session.initial_window() as i64);
        self.session
            .data(&mut out, id, &body, &mut sent, &mut window);
        self.send(&out)?;
        let (mut data, mut status, mut message, mut done) = (Vec::new(), None, Vec::new(), false);
        let mut buf = vec![0u8; 64 * 1024];
        while !done {
            if Instant::now() > self.deadline {
                return Err(Failed::Io("no answer in time".into()));
            }
            let n = self
                .socket
                .read(&mut buf)
                .map_err(|e| Failed::Io(e.to_string()))?;
            if n == 0 {
                return Err(Failed::Io("the server closed the connection".into()));
            }
            let mut out = Vec::new();
            let mut reset = None;
            self.session
                .receive(&buf[..n], &mut out, &mut |event| match event {
                    h2::Event::Body { stream, bytes } if stream == id => {
                        data.extend_from_slice(bytes);
                        0
                    }
                    h2::Event::Data {
                        stream,
                        len,
                        end_stream,
                    } => {
                        done |= stream == id && end_stream;
                        len
                    }
                    h2::Event::Field {
                        stream,
                        name,
                        value,
                    } if stream == id => {
                        match name {
                            b"grpc-status" => status = wire::parse_status(value),
                            b"grpc-message" => message = value.to_vec(),
                            _ => {}
                        }
                        0
                    }
                    h2::Event::Headers {
                        stream, end_stream, ..
                    } => {
                        done |= stream == id && end_stream;
                        0
                    }
                    h2::Event::Reset { stream, code } if stream == id => {
                        reset = Some(code);
                        0
                    }
                    _ => 0,
                })
                .map_err(|e| Failed::Io(e.to_string()))?;
            self.send(&out)?;
            if let Some(code) = reset {
                return Err(Failed::Io(format!("stream reset: {}", h2::code_name(code))));
            }
        }
        let mut answer = None;
        let mut reader = wire::MessageReader::default();
        let mut message_bytes = Vec::new();
        reader
            .feed(&data, &mut |piece| match piece {
                wire::Piece::Bytes(b) => message_bytes.extend_from_slice(b),
                wire::Piece::End if answer.is_none() => {
                    answer = Some(std::mem::take(&mut message_bytes))
                }
                _ => {}
            })
            .map_err(|e| Failed::Io(e.to_string()))?;
        match (answer, status) {
            (Some(bytes), _) => Response::decode(bytes.as_slice())
                .map_err(|e| Failed::Io(format!("an answer that does not decode: {e}")))?
                .answer
                .ok_or_else(|| Failed::Io("an empty answer".into())),
            (None, Some(code)) => Err(Failed::Status(code, wire::decode_message(&message))),
            (None, None) => Err(Failed::Io("the call ended without an answer".into())),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), Failed> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.socket
            .write_all(bytes)
            .map_err(|e| Failed::Io(e.to_string()))
    }
}

//! A small HTTP endpoint that answers `GET path` with text a closure makes at each request:
//! what `pelt --metrics-listen` serves Prometheus from. On hyper, like the target server, on
//! a one-thread runtime of its own.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

/// What an endpoint serves: the text, made when asked.
pub type Text = Arc<dyn Fn() -> String + Send + Sync>;

/// A running endpoint; stops on [`TextEndpoint::stop`] or when dropped.
pub struct TextEndpoint {
    serving: Serving,
}

impl TextEndpoint {
    /// Binds `addr` (errors such as "address in use" come back here) and serves `text` at
    /// `path` with `content_type`; any other path is 404, any other method 405.
    pub fn start(
        addr: SocketAddr,
        path: &'static str,
        content_type: &'static str,
        text: Text,
    ) -> std::io::Result<TextEndpoint> {
        let serving = Serving::start(addr, "pelt-endpoint", move |req| {
            answer(req, path, content_type, text.clone())
        })?;
        Ok(TextEndpoint { serving })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.serving.addr
    }

    /// Stops listening and drops the connections.
    pub fn stop(mut self) {
        self.serving.shutdown_now();
    }
}

/// HTTP/1.1 on a listener of its own, on a one-thread runtime of its own: each request
/// answered by `answer`; stops on [`Serving::shutdown_now`] or when dropped. What the text
/// endpoint and the live page (`live.rs`) are served by.
pub(crate) struct Serving {
    pub(crate) addr: SocketAddr,
    shutdown: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Serving {
    /// Binds `addr` (an error such as "address in use" comes back here) and serves on a
    /// thread named `name`.
    pub(crate) fn start<A, F, B>(
        addr: SocketAddr,
        name: &str,
        answer: A,
    ) -> std::io::Result<Serving>
    where
        A: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
        F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (tx, mut rx) = tokio::sync::watch::channel(false);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    loop {
                        tokio::select! {
                            accepted = listener.accept() => {
                                let Ok((stream, _)) = accepted else { continue };
                                let service = service_fn(answer.clone());
                                tokio::spawn(async move {
                                    let _ = http1::Builder::new()
                                        .serve_connection(TokioIo::new(stream), service)
                                        .await;
                                });
                            }
                            _ = rx.changed() => return,
                        }
                    }
                });
                runtime.shutdown_timeout(std::time::Duration::from_millis(100));
            })?;
        Ok(Serving {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// Stops listening and drops the connections.
    pub(crate) fn shutdown_now(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

async fn answer(
    req: Request<Incoming>,
    path: &'static str,
    content_type: &'static str,
    text: Text,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body, kind) = if req.uri().path() != path {
        (
            StatusCode::NOT_FOUND,
            format!("not found; try {path}\n"),
            "text/plain",
        )
    } else if req.method() != Method::GET && req.method() != Method::HEAD {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "GET only\n".into(),
            "text/plain",
        )
    } else {
        (StatusCode::OK, text(), content_type)
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(kind) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_fresh_text_at_its_path_only() {
        let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let c = n.clone();
        let e = TextEndpoint::start(
            "127.0.0.1:0".parse().unwrap(),
            "/metrics",
            "text/plain; version=0.0.4",
            Arc::new(move || {
                format!(
                    "x {}\n",
                    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                )
            }),
        )
        .unwrap();
        let a = get(e.addr(), "/metrics");
        assert!(a.starts_with("HTTP/1.1 200") && a.ends_with("x 0\n"), "{a}");
        assert!(a.contains("content-type: text/plain; version=0.0.4"), "{a}");
        assert!(get(e.addr(), "/metrics").ends_with("x 1\n"));
        assert!(get(e.addr(), "/").starts_with("HTTP/1.1 404"));
        let addr = e.addr();
        e.stop();
        assert!(std::net::TcpStream::connect(addr).is_err());
    }
}

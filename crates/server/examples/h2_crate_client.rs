//! A closed-loop HTTP/2 load client built on the `h2` crate (tokio, one thread), written only
//! to measure what pelt would cost if its HTTP/2 were the h2 crate instead of its own framer
//! (`bench/h2.py` runs both side by side; the decision is in docs/ARCHITECTURE.md). Not part
//! of pelt.
//!
//! Usage: `h2_crate_client http://127.0.0.1:PORT/ CONNECTIONS STREAMS SECONDS`; prints
//! `completed N seconds S`.

use std::time::{Duration, Instant};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: h2_crate_client URL CONNECTIONS STREAMS SECONDS");
        std::process::exit(2);
    }
    let uri: http::Uri = args[1].parse().expect("URL");
    let addr = format!(
        "{}:{}",
        uri.host().expect("host"),
        uri.port_u16().unwrap_or(80)
    );
    let conns: usize = args[2].parse().expect("CONNECTIONS");
    let streams: usize = args[3].parse().expect("STREAMS");
    let secs: u64 = args[4].parse().expect("SECONDS");
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let tcp = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        tcp.set_nodelay(true).expect("nodelay");
        let (client, connection) = h2::client::Builder::new()
            .initial_window_size((1 << 30) - 1)
            .initial_connection_window_size((1 << 30) - 1)
            .handshake::<_, bytes::Bytes>(tcp)
            .await
            .expect("h2 handshake");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        for _ in 0..streams {
            let mut client = client.clone();
            let uri = uri.clone();
            tasks.push(tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < deadline {
                    let request = http::Request::get(uri.clone()).body(()).expect("request");
                    client = client.ready().await.expect("ready");
                    let (response, _) = client.send_request(request, true).expect("send");
                    let mut body = response.await.expect("response").into_body();
                    while let Some(chunk) = body.data().await {
                        let chunk = chunk.expect("body");
                        let _ = body.flow_control().release_capacity(chunk.len());
                    }
                    done += 1;
                }
                done
            }));
        }
    }
    let mut completed = 0;
    for t in tasks {
        completed += t.await.expect("task");
    }
    println!(
        "completed {completed} seconds {:.3}",
        start.elapsed().as_secs_f64()
    );
}

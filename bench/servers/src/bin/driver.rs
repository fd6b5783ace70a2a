//! The load `bench/run` needs beyond what oha does: many 2025-era sessions
//! and many open `subscriptions/listen` streams. Plain HTTP/1.1 over tokio
//! sockets, so it depends on no client library's behaviour.
//!
//! ```text
//! bench-driver sessions URL COUNT CONCURRENCY
//!     initialize + notifications/initialized COUNT times, then exit (the
//!     sessions stay on the server, idle; no connection is kept)
//! bench-driver streams URL COUNT CONCURRENCY HOLD_SECS
//!     open COUNT subscriptions/listen streams, print "READY ok=N failed=M",
//!     hold them HOLD_SECS (or until killed), then close them all
//! ```
//!
//! `BENCH_TOKEN`, when set, is sent as `Authorization: Bearer`. Every step
//! has a timeout, and the target must be a loopback address.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::Semaphore,
};

const STEP_TIMEOUT: Duration = Duration::from_secs(15);
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

#[derive(Clone)]
struct Target {
    addr: SocketAddr,
    path: String,
    auth: String,
}

impl Target {
    fn parse(url: &str) -> Self {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let addr: SocketAddr = authority.parse().expect("URL host must be IP:PORT");
        assert!(
            addr.ip().is_loopback(),
            "the benchmark drives loopback only"
        );
        let auth = match std::env::var("BENCH_TOKEN") {
            Ok(token) if !token.is_empty() => format!("Authorization: Bearer {token}\r\n"),
            _ => String::new(),
        };
        Self {
            addr,
            path: format!("/{path}"),
            auth,
        }
    }

    fn request(&self, body: &str, headers: &[(&str, &str)], close: bool) -> String {
        let mut extra = String::new();
        for (name, value) in headers {
            extra.push_str(&format!("{name}: {value}\r\n"));
        }
        format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{auth}{extra}{connection}\
             Content-Length: {len}\r\n\r\n{body}",
            path = self.path,
            addr = self.addr,
            auth = self.auth,
            connection = if close { "Connection: close\r\n" } else { "" },
            len = body.len(),
        )
    }

    /// One request on its own connection; returns the whole response text.
    async fn exchange(&self, body: &str, headers: &[(&str, &str)]) -> std::io::Result<String> {
        let exchange = async {
            let mut tcp = TcpStream::connect(self.addr).await?;
            tcp.set_nodelay(true)?;
            tcp.write_all(self.request(body, headers, true).as_bytes())
                .await?;
            let mut response = Vec::new();
            tcp.read_to_end(&mut response).await?;
            Ok(String::from_utf8_lossy(&response).into_owned())
        };
        tokio::time::timeout(STEP_TIMEOUT, exchange)
            .await
            .map_err(|_| std::io::Error::other("timed out"))?
    }
}

fn status(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| -> &str {
        args.get(i).map(String::as_str).unwrap_or_else(|| {
            eprintln!("usage: see the header of bench/servers/src/bin/driver.rs");
            std::process::exit(2)
        })
    };
    let target = Target::parse(arg(2));
    let count: usize = arg(3).parse().expect("COUNT");
    let concurrency: usize = arg(4).parse().expect("CONCURRENCY");
    match arg(1) {
        "sessions" => sessions(target, count, concurrency).await,
        "streams" => {
            let hold: u64 = arg(5).parse().expect("HOLD_SECS");
            streams(target, count, concurrency, Duration::from_secs(hold)).await
        }
        other => panic!("unknown command {other}"),
    }
}

/// Opens `count` 2025-era sessions and leaves them idle.
async fn sessions(target: Target, count: usize, concurrency: usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let ok = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (target, next, ok) = (target.clone(), next.clone(), ok.clone());
        workers.spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < count {
                match open_session(&target).await {
                    Ok(()) => {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(error) => eprintln!("bench-driver: session failed: {error}"),
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    let ok = ok.load(Ordering::Relaxed);
    println!(
        "sessions ok={ok} failed={} secs={:.2}",
        count - ok,
        started.elapsed().as_secs_f64()
    );
}

async fn open_session(target: &Target) -> Result<(), String> {
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{LEGACY}","capabilities":{{}},"clientInfo":{{"name":"bench-driver","version":"0"}}}}}}"#
    );
    let response = target
        .exchange(&initialize, &[])
        .await
        .map_err(|e| e.to_string())?;
    let Some(session) = header(&response, "mcp-session-id") else {
        return Err(format!("no session id in: {}", truncate(&response)));
    };
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = target
        .exchange(
            initialized,
            &[
                ("Mcp-Session-Id", session),
                ("MCP-Protocol-Version", LEGACY),
            ],
        )
        .await
        .map_err(|e| e.to_string())?;
    match status(&response) {
        200..=299 => Ok(()),
        _ => Err(format!("initialized refused: {}", truncate(&response))),
    }
}

/// Opens `count` subscriptions/listen streams, holds them, then closes them.
async fn streams(target: Target, count: usize, concurrency: usize, hold: Duration) {
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut opening = tokio::task::JoinSet::new();
    for i in 0..count {
        let (target, permits) = (target.clone(), permits.clone());
        opening.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore");
            open_stream(&target, i).await
        });
    }
    let mut open = Vec::with_capacity(count);
    let mut failed = 0;
    while let Some(result) = opening.join_next().await {
        match result.expect("task") {
            Ok(tcp) => open.push(tcp),
            Err(error) => {
                if failed < 3 {
                    eprintln!("bench-driver: stream failed: {error}");
                }
                failed += 1;
            }
        }
    }
    println!(
        "READY ok={} failed={failed} secs={:.2}",
        open.len(),
        started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(hold).await;
    drop(open);
}

async fn open_stream(target: &Target, i: usize) -> Result<TcpStream, String> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"subscriptions/listen","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}}}},"notifications":{{"toolsListChanged":true}}}}}}"#
    );
    let open = async {
        let mut tcp = TcpStream::connect(target.addr)
            .await
            .map_err(|e| e.to_string())?;
        let request = target.request(
            &body,
            &[
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "subscriptions/listen"),
            ],
            false,
        );
        tcp.write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        // Open once the server acknowledged the subscription.
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = tcp.read(&mut buf).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!(
                    "closed before acknowledging: {}",
                    truncate(&String::from_utf8_lossy(&seen))
                ));
            }
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains("acknowledged") {
                return Ok(tcp);
            }
        }
    };
    tokio::time::timeout(STEP_TIMEOUT, open)
        .await
        .map_err(|_| "no acknowledgement in time".to_owned())?
}

fn truncate(text: &str) -> &str {
    let end = text
        .char_indices()
        .nth(400)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    &text[..end]
}

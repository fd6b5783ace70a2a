//! The accept loop: hyper with a header read timeout (a slow client is
//! dropped without holding anyone up), TCP_NODELAY on every socket, a cap
//! on open connections, and a graceful drain.

use std::{future::Future, sync::Arc, time::Duration};

use futures::FutureExt;
use hyper::server::conn::http1;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto::Builder, graceful::GracefulShutdown},
};
use tokio::{
    net::TcpListener,
    sync::{OwnedSemaphorePermit, Semaphore},
};
use tokio_util::sync::CancellationToken;

use axum::{Router, extract::ConnectInfo};
use hyper_util::service::TowerToHyperService;
use tower::ServiceExt;

pub struct ServeOptions {
    /// A client must send its request head within this time.
    pub header_read_timeout: Duration,
    pub max_connections: usize,
    /// Also accept HTTP/2 with prior knowledge (h2c), found by sniffing each
    /// connection's first bytes.
    pub h2c: bool,
    /// After the shutdown signal: keep accepting this long (readiness is
    /// already false, so balancers move traffic away first).
    pub drain_delay: Duration,
    /// Then: in-flight calls get this long to finish before streams end.
    pub grace: Duration,
}

/// Serves `router` on `listener` until `shutdown`; then drains. `on_drain`
/// runs when draining starts (readiness turns false); `end_streams` is
/// cancelled when the grace period is over, which ends open SSE streams.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_drain: impl FnOnce() + Send + 'static,
    end_streams: CancellationToken,
) -> std::io::Result<()> {
    let stop_accepting = CancellationToken::new();
    let stopper = stop_accepting.clone();
    let drain_delay = options.drain_delay;
    tokio::spawn(async move {
        shutdown.await;
        on_drain();
        tracing::info!(?drain_delay, "shutdown requested: draining");
        tokio::time::sleep(drain_delay).await;
        stopper.cancel();
    });

    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let protocols = Protocols::new(&options);
    loop {
        // Wait for a free connection slot before accepting: the kernel
        // backlog absorbs the excess instead of our memory.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("semaphore never closed"),
            () = stop_accepting.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop_accepting.cancelled() => break,
        };
        // rmcp writes an SSE reply in several small writes; without NODELAY,
        // Nagle plus delayed ACKs stall each of them by ~40 ms.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "could not set TCP_NODELAY");
        }
        let io = TokioIo::new(stream);
        // The edge step reads the peer's address from here (`edge.rs`).
        let service = TowerToHyperService::new(router.clone().map_request(
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            },
        ));
        match &protocols {
            Protocols::Http1(builder) => {
                spawn(graceful.watch(builder.serve_connection(io, service)), slot);
            }
            Protocols::Auto(builder) => {
                let connection = builder.serve_connection(io, service).into_owned();
                spawn(graceful.watch(connection), slot);
            }
        }
    }
    drop(listener);
    // In-flight requests finish; idle keep-alive connections close now.
    let all_closed = graceful.shutdown();
    tokio::pin!(all_closed);
    tokio::select! {
        () = &mut all_closed => {}
        () = tokio::time::sleep(options.grace) => {
            tracing::info!("grace period over: ending open streams");
            end_streams.cancel();
            // Ended streams close promptly; never wait forever for a stuck peer.
            let _ = tokio::time::timeout(Duration::from_secs(5), &mut all_closed).await;
        }
    }
    end_streams.cancel();
    Ok(())
}

/// The connection builder: hyper's HTTP/1 server alone, or (with h2c) the
/// auto builder that sniffs each connection for an HTTP/2 preface. HTTP/1
/// alone matters for memory: the sniffed bytes are replayed to hyper, which
/// then grows its read buffer from 8 to 16 KiB, and the auto connection's
/// task is sized for HTTP/2's state too; both are held for as long as a
/// listen stream stays open.
enum Protocols {
    Http1(http1::Builder),
    Auto(Builder<TokioExecutor>),
}

impl Protocols {
    fn new(options: &ServeOptions) -> Self {
        if options.h2c {
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(options.header_read_timeout);
            Self::Auto(builder)
        } else {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(options.header_read_timeout);
            Self::Http1(builder)
        }
    }
}

/// Runs one connection, holding its slot until it ends.
///
/// A combinator rather than an `async` block: a block that awaits a future
/// it captured keeps two copies of it (the capture and the awaited value),
/// and this task lives as long as its connection, so every open stream paid
/// for hyper's connection state twice (0.9 KiB).
fn spawn<E: std::fmt::Display>(
    connection: impl Future<Output = Result<(), E>> + Send + 'static,
    slot: OwnedSemaphorePermit,
) {
    tokio::spawn(connection.map(move |result| {
        drop(slot);
        if let Err(error) = result {
            tracing::debug!(%error, "connection ended with an error");
        }
    }));
}

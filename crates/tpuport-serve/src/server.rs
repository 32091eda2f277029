//! The listener: HTTP/1.1 and HTTP/2 (h2c, for gRPC) on one port, with connection, header and
//! body limits, and the drain sequence on shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, Request, State as AxState};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

use crate::config::ServeOptions;
use crate::error::{ErrorKind, InferError, ServeError};
use crate::state::{Entry, Reporter, State};

/// The whole HTTP surface: REST, gRPC, `/metrics`. Testable without a socket.
pub fn app(state: Arc<State>) -> Router {
    crate::rest::routes()
        .route("/metrics", get(metrics))
        .route("/inference.GRPCInferenceService/{method}", post(grpc_inference))
        .route("/grpc.health.v1.Health/Check", post(grpc_health))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), close_while_draining))
        .with_state(state)
}

/// While draining, HTTP/1 responses carry `Connection: close`: a keep-alive client then sends
/// its next request on a new connection (answered 503, or refused once the listener closes)
/// instead of on one the drain is about to close before reading it.
async fn close_while_draining(
    AxState(s): AxState<Arc<State>>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let h1 = req.version() < http::Version::HTTP_2;
    let mut r = next.run(req).await;
    if h1 && s.is_draining() {
        r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

async fn metrics(AxState(s): AxState<Arc<State>>) -> Response {
    s.refresh_device_memory();
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"))],
        s.metrics.render(),
    )
        .into_response()
}

async fn grpc_inference(
    AxState(s): AxState<Arc<State>>,
    Path(method): Path<String>,
    req: Request,
) -> Response {
    crate::grpc::inference(s, &method, req).await
}

async fn grpc_health(AxState(s): AxState<Arc<State>>, req: Request) -> Response {
    crate::grpc::health(s, req).await
}

async fn not_found() -> Response {
    let mut r =
        crate::rest::error_response(&InferError::new(ErrorKind::NotFound, "no such endpoint"));
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}

/// Runs the server until `shutdown` completes, then drains: readiness drops, new requests get
/// 503, queued and executing requests finish within the drain timeout, connections close.
///
/// # Errors
/// The repository cannot be opened, the address cannot be bound, or no model loaded (with
/// model control off there would be nothing to serve).
pub async fn serve(
    opts: ServeOptions,
    reporter: Arc<dyn Reporter>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    serve_state(Arc::new(State::new(opts)?), reporter, shutdown).await
}

/// [`serve`] with a state the caller keeps (to read its metrics after shutdown).
///
/// # Errors
/// As [`serve`].
pub async fn serve_state(
    state: Arc<State>,
    reporter: Arc<dyn Reporter>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let addr = state.opts.bind;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Listen { addr: addr.to_string(), source })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServeError::Listen { addr: addr.to_string(), source })?;
    reporter.listening(local);
    let stop = Arc::new(Notify::new());
    let graceful = Arc::new(GracefulShutdown::new());
    let acceptor =
        tokio::spawn(accept_loop(listener, state.clone(), stop.clone(), graceful.clone()));

    let names = if state.opts.models.is_empty() {
        state.repo.model_names()?
    } else {
        state.opts.models.clone()
    };
    let (st, rep) = (state.clone(), reporter.clone());
    let loader = tokio::task::spawn_blocking(move || {
        let mut failed = 0;
        for n in &names {
            if st.is_draining() {
                break;
            }
            if st.load_model(n, &*rep).is_err() {
                failed += 1;
            }
        }
        let loaded = names.len() - failed;
        st.set_ready(loaded > 0);
        rep.ready(loaded, failed);
        loaded
    });
    tokio::pin!(loader);
    tokio::pin!(shutdown);
    let mut loaded = None;
    tokio::select! {
        r = &mut loader => loaded = Some(r.unwrap_or(0)),
        () = &mut shutdown => {}
    }
    if loaded == Some(0) && state.opts.control_token.is_none() {
        stop.notify_one();
        let _ = acceptor.await;
        return Err(ServeError::Model {
            model: "*".into(),
            message: "no model loaded; nothing to serve".into(),
        });
    }
    if loaded.is_some() {
        shutdown.await;
    }
    // Drain.
    reporter.draining();
    state.start_draining();
    let deadline = Instant::now() + state.opts.drain_timeout;
    let batchers: Vec<_> = state
        .read_models()
        .values()
        .filter_map(|e| match e {
            Entry::Ready { batcher, .. } => Some(batcher.clone()),
            _ => None,
        })
        .collect();
    for b in &batchers {
        b.close();
    }
    let bs = batchers.clone();
    let idle = tokio::task::spawn_blocking(move || bs.iter().all(|b| b.wait_idle(deadline)))
        .await
        .unwrap_or(false);
    // Stop accepting, let open connections finish their responses.
    stop.notify_one();
    let _ = acceptor.await;
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
    if let Ok(g) = Arc::try_unwrap(graceful) {
        let _ = tokio::time::timeout(left, g.shutdown()).await;
    }
    let _ = tokio::task::spawn_blocking(move || {
        for b in &batchers {
            b.abort_and_join();
        }
    })
    .await;
    reporter.final_metrics(&state.metrics().render());
    reporter.stopped(!idle);
    Ok(())
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    stop: Arc<Notify>,
    graceful: Arc<GracefulShutdown>,
) {
    let limits = state.opts.limits.clone();
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let svc = TowerToHyperService::new(app(state));
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX))
        .max_concurrent_streams(limits.max_streams_per_connection);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            () = stop.notified() => break,
        };
        let (sock, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(_) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.notified() => break,
        };
        let _ = sock.set_nodelay(true);
        let conn = builder.serve_connection(TokioIo::new(sock), svc.clone()).into_owned();
        let watched = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = watched.await;
            drop(permit);
        });
    }
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Builds a runtime and serves until SIGTERM or Ctrl-C (the binary's entry point).
///
/// # Errors
/// As [`serve`]; also when the runtime cannot start.
pub fn serve_blocking(opts: ServeOptions, reporter: Arc<dyn Reporter>) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tpuport-serve")
        .build()
        .map_err(|e| ServeError::io("<tokio runtime>", e))?;
    let r = rt.block_on(serve(opts, reporter, shutdown_signal()));
    rt.shutdown_timeout(Duration::from_secs(1));
    r
}

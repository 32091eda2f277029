//! The server's options ([`ServeOptions`]) and the limits that protect it ([`Limits`]). Each
//! model's `config.toml` is the model repository format of `tpuport-exec`
//! ([`tpuport_exec::config`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Limits that protect the server from hostile or mistaken clients.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request body (HTTP, after any chunked decoding) and gRPC message, in bytes.
    pub max_body_bytes: usize,
    /// Largest request header block, in bytes (HTTP/1 read buffer, HTTP/2 header list).
    pub max_header_bytes: usize,
    /// Open connections at once; more wait in the kernel's accept queue.
    pub max_connections: usize,
    /// Concurrent HTTP/2 streams per connection.
    pub max_streams_per_connection: u32,
    /// Longest time to read a request's headers.
    pub header_read_timeout: Duration,
    /// Longest time to read a request's body (a slow or lying client gets 408).
    pub body_read_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body_bytes: 64 << 20,
            max_header_bytes: 64 << 10,
            max_connections: 1024,
            max_streams_per_connection: 256,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
        }
    }
}

/// How the server starts.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The model repository.
    pub repository: PathBuf,
    /// Address to listen on (REST and gRPC share it). Default `127.0.0.1:8000`.
    pub bind: SocketAddr,
    /// PJRT plugin (default: discovery as in `tpuport run`).
    pub plugin: Option<PathBuf>,
    /// Executable cache; `None` compiles every bucket without caching.
    pub cache: Option<tpuport_pjrt::ExecutableCache>,
    /// Model control (load/unload/index): `None` keeps it off; `Some(token)` turns it on and
    /// requires `Authorization: Bearer <token>`.
    pub control_token: Option<String>,
    /// Limits.
    pub limits: Limits,
    /// How long draining may take after SIGTERM before the remaining requests are dropped.
    pub drain_timeout: Duration,
    /// Only these models (default: every folder with a `config.toml`).
    pub models: Vec<String>,
}

impl ServeOptions {
    /// Defaults for a repository.
    #[must_use]
    pub fn new(repository: PathBuf) -> ServeOptions {
        ServeOptions {
            repository,
            bind: SocketAddr::from(([127, 0, 0, 1], 8000)),
            plugin: None,
            cache: Some(tpuport_pjrt::ExecutableCache::default_location()),
            control_token: None,
            limits: Limits::default(),
            drain_timeout: Duration::from_secs(30),
            models: Vec::new(),
        }
    }
}

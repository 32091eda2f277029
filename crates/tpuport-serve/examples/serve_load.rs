//! A load generator for `make bench-serve`'s overload and shutdown runs
//! (scripts/bench/bench_serve.py), where wrk falls short: it records every response's status and
//! latency (so the p99 of the accepted requests is known apart from the rejected ones) and can
//! offer a fixed rate.
//!
//! ```text
//! serve_load ADDR PATH BODY_FILE HEADER_FILE CONNECTIONS SECONDS RATE OUT_JSON
//! ```
//! One thread per keep-alive HTTP/1.1 connection. RATE > 0: open loop, request i is due at
//! i / RATE seconds and a connection takes the next due one when it is free (so the offered
//! rate falls short when every connection is busy; the JSON says what was sent). RATE = 0:
//! closed loop. HEADER_FILE holds extra header lines (`Name: value`). A request whose bytes
//! were all written but got no status line back (connection closed or reset) is counted apart
//! from requests that could not be sent (connect refused, write failed). Stops by itself after
//! SECONDS, or when connecting is refused for one second (the server has gone).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Tally {
    /// status -> latencies in µs
    by_status: BTreeMap<u16, Vec<u64>>,
    not_sent: u64,
    no_response: u64,
    /// Requests that left later than due by over 10 ms (open loop only).
    late: u64,
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let [addr, path, body, headers, conns, secs, rate, out] = a.as_slice() else {
        return Err(
            "usage: serve_load ADDR PATH BODY_FILE HEADER_FILE CONNECTIONS SECONDS RATE OUT_JSON"
                .into(),
        );
    };
    let addr: SocketAddr = addr.parse()?;
    let body = std::fs::read(body)?;
    let extra = std::fs::read_to_string(headers)?;
    let mut head =
        format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    for l in extra.lines().filter(|l| !l.trim().is_empty()) {
        head.push_str(l.trim());
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut req = head.into_bytes();
    req.extend_from_slice(&body);
    let req = Arc::new(req);
    let conns: usize = conns.parse()?;
    let secs: f64 = secs.parse()?;
    let rate: f64 = rate.parse()?;

    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let ticket = Arc::new(AtomicU64::new(0));
    let gone = Arc::new(AtomicBool::new(false));
    let total = Arc::new(Mutex::new(Tally::default()));
    let threads: Vec<_> = (0..conns)
        .map(|_| {
            let (req, ticket, gone, total) =
                (req.clone(), ticket.clone(), gone.clone(), total.clone());
            std::thread::spawn(move || {
                let mut t = Tally::default();
                let mut conn: Option<BufReader<TcpStream>> = None;
                let mut refused_since: Option<Instant> = None;
                while !gone.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if now >= end {
                        break;
                    }
                    if rate > 0.0 {
                        let i = ticket.fetch_add(1, Ordering::Relaxed);
                        let due = start + Duration::from_secs_f64(i as f64 / rate);
                        if due >= end {
                            break;
                        }
                        if due > now {
                            std::thread::sleep(due - now);
                        } else if now - due > Duration::from_millis(10) {
                            t.late += 1;
                        }
                    }
                    if conn.is_none() {
                        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                            Ok(s) => {
                                let _ = s.set_nodelay(true);
                                let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
                                conn = Some(BufReader::new(s));
                                refused_since = None;
                            }
                            Err(_) => {
                                t.not_sent += 1;
                                let since = *refused_since.get_or_insert(Instant::now());
                                if since.elapsed() > Duration::from_secs(1) {
                                    gone.store(true, Ordering::Relaxed);
                                }
                                std::thread::sleep(Duration::from_millis(5));
                                continue;
                            }
                        }
                    }
                    let Some(c) = conn.as_mut() else { continue };
                    let sent = Instant::now();
                    if c.get_mut().write_all(&req).is_err() {
                        t.not_sent += 1;
                        conn = None;
                        continue;
                    }
                    match read_response(c) {
                        Ok((status, keep)) => {
                            let us = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
                            t.by_status.entry(status).or_default().push(us);
                            if !keep {
                                conn = None;
                            }
                        }
                        Err(_) => {
                            t.no_response += 1;
                            conn = None;
                        }
                    }
                }
                let mut g = total.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                for (k, v) in t.by_status {
                    g.by_status.entry(k).or_default().extend(v);
                }
                g.not_sent += t.not_sent;
                g.no_response += t.no_response;
                g.late += t.late;
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let mut g = total.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut statuses = serde_json::Map::new();
    for (k, v) in &mut g.by_status {
        v.sort_unstable();
        let p = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
        statuses.insert(
            k.to_string(),
            serde_json::json!({"count": v.len(), "p50_us": p(0.5), "p99_us": p(0.99), "max_us": v[v.len() - 1]}),
        );
    }
    let doc = serde_json::json!({
        "elapsed_s": elapsed, "connections": conns, "rate": rate,
        "statuses": statuses, "not_sent": g.not_sent, "no_response": g.no_response, "late": g.late,
    });
    std::fs::write(out, serde_json::to_vec_pretty(&doc)?)?;
    Ok(())
}

/// Reads one response; returns its status and whether the connection stays open.
fn read_response(c: &mut BufReader<TcpStream>) -> std::io::Result<(u16, bool)> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "bad response");
    let mut line = String::new();
    if c.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let status: u16 = line.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let (mut len, mut keep) = (0usize, true);
    loop {
        line.clear();
        if c.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "content-length" {
                len = v.parse().map_err(|_| bad())?;
            } else if k == "connection" && v.eq_ignore_ascii_case("close") {
                keep = false;
            }
        }
    }
    std::io::copy(&mut c.by_ref().take(len as u64), &mut std::io::sink())?;
    Ok((status, keep))
}

//! A fixture HTTP/1.1 server on 127.0.0.1: replays vendor answers (whole bodies, SSE
//! streams chunk by chunk, streams cut mid-way, servers that never answer) and records
//! every request it receives. Shared by the integration tests and the benchmark.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the body goes out.
#[derive(Clone, Debug)]
pub enum Body {
    /// One piece with `content-length`.
    Full(Vec<u8>),
    /// `transfer-encoding: chunked`, one chunk per piece; `cut` closes the connection
    /// before the terminating chunk.
    Chunked {
        /// The pieces.
        chunks: Vec<Vec<u8>>,
        /// Close abruptly after the pieces.
        cut: bool,
    },
}

/// An answer computed from the request.
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// One scripted answer.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// Never answer (a server past every timeout).
    pub hang: bool,
    /// Read the request, then close the connection without a byte of answer (a server
    /// whose keep-alive ran out as the request arrived).
    pub close: bool,
    /// After the body's pieces, keep the connection open without ending the body (a
    /// stream that stalls).
    pub stall: bool,
    /// The status line's reason phrase (default: the usual one for the status).
    pub reason: Option<String>,
    /// A pause before each piece of a chunked body (a slow stream).
    pub pace: Duration,
    /// Computed from the request (overrides everything else).
    pub dynamic: Option<Responder>,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Body::Full(body.as_bytes().to_vec()),
            hang: false,
            close: false,
            stall: false,
            reason: None,
            pace: Duration::ZERO,
            dynamic: None,
        }
    }

    /// An SSE answer sent event by event (split at blank lines).
    pub fn sse(text: &str) -> Self {
        Self {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            body: Body::Chunked {
                chunks: split_events(text),
                cut: false,
            },
            hang: false,
            close: false,
            stall: false,
            reason: None,
            pace: Duration::ZERO,
            dynamic: None,
        }
    }

    /// The first `events` events of an SSE answer, then the connection drops.
    pub fn sse_cut(text: &str, events: usize) -> Self {
        let mut r = Self::sse(text);
        if let Body::Chunked { chunks, cut } = &mut r.body {
            chunks.truncate(events);
            *cut = true;
        }
        r
    }

    /// The status line and headers of an SSE answer, its first `events` events, then
    /// nothing more, the connection held open.
    pub fn sse_stall(text: &str, events: usize) -> Self {
        let mut r = Self::sse(text);
        if let Body::Chunked { chunks, .. } = &mut r.body {
            chunks.truncate(events);
        }
        r.stall = true;
        r
    }

    /// A pause before each piece of the body.
    pub fn paced(mut self, pause: Duration) -> Self {
        self.pace = pause;
        self
    }

    /// Another reason phrase on the status line.
    pub fn reason(mut self, reason: &str) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Read the request and close the connection without answering.
    pub fn close() -> Self {
        Self {
            close: true,
            ..Self::json(200, "")
        }
    }

    /// A server that accepts the request and never answers.
    pub fn hang() -> Self {
        let mut r = Self::json(200, "{}");
        r.hang = true;
        r
    }

    /// An answer computed from the request.
    pub fn dynamic(f: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let mut r = Self::json(200, "{}");
        r.dynamic = Some(Arc::new(f));
        r
    }

    /// Add a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// SSE text split into events, each keeping its terminating blank line.
pub fn split_events(text: &str) -> Vec<Vec<u8>> {
    let norm = text.replace("\r\n", "\n");
    norm.split_inclusive("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| e.as_bytes().to_vec())
        .collect()
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(String, String)>,
    pub raw: Vec<u8>,
    pub body: Value,
}

impl Recorded {
    /// A header's value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    queued: HashMap<String, VecDeque<Reply>>,
    always: HashMap<String, Reply>,
    requests: Vec<Recorded>,
}

/// The server. Dropping it leaves the task running until the runtime ends.
#[derive(Clone)]
pub struct FixtureServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl FixtureServer {
    /// Listen on an ephemeral port of 127.0.0.1.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let st = st.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, st).await;
                });
            }
        });
        Self { addr, state }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answer the next request to `path` (without query) with `reply`, in order.
    pub fn enqueue(&self, path: &str, reply: Reply) -> &Self {
        self.state
            .lock()
            .unwrap()
            .queued
            .entry(path.to_owned())
            .or_default()
            .push_back(reply);
        self
    }

    /// Answer every request to `path` with `reply` once the queue is empty.
    pub fn always(&self, path: &str, reply: Reply) -> &Self {
        self.state
            .lock()
            .unwrap()
            .always
            .insert(path.to_owned(), reply);
        self
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The last request.
    pub fn last(&self) -> Recorded {
        self.requests().pop().expect("a request was made")
    }

    /// How many requests so far.
    pub fn count(&self) -> usize {
        self.state.lock().unwrap().requests.len()
    }

    fn pick(&self, path: &str) -> Option<Reply> {
        pick(&self.state, path)
    }
}

fn pick(state: &Mutex<State>, path: &str) -> Option<Reply> {
    let mut s = state.lock().unwrap();
    if let Some(r) = s.queued.get_mut(path).and_then(VecDeque::pop_front) {
        return Some(r);
    }
    s.always.get(path).cloned()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn serve(mut sock: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    loop {
        // Head.
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i;
            }
            let mut tmp = [0u8; 8192];
            let n = sock.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or_default().to_owned();
        let mut parts = request_line.split(' ');
        let method = parts.next().unwrap_or_default().to_owned();
        let target = parts.next().unwrap_or_default().to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let body_start = head_end + 4;
        while buf.len() < body_start + len {
            let mut tmp = [0u8; 8192];
            let n = sock.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        let raw = buf[body_start..body_start + len].to_vec();
        buf.drain(..body_start + len);
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
            None => (target.clone(), None),
        };
        let recorded = Recorded {
            method,
            path: path.clone(),
            query,
            headers,
            body: serde_json::from_slice(&raw).unwrap_or(Value::Null),
            raw,
        };
        state.lock().unwrap().requests.push(recorded.clone());

        let mut reply = pick(&state, &path).unwrap_or_else(|| {
            Reply::json(
                404,
                &format!(r#"{{"error":{{"message":"no fixture for {path}"}}}}"#),
            )
        });
        while let Some(f) = reply.dynamic.clone() {
            reply = f(&recorded);
        }
        if reply.hang {
            std::future::pending::<()>().await;
        }
        if reply.close {
            return Ok(());
        }
        let reason = reply.reason.clone().unwrap_or_else(|| {
            match reply.status {
                200 => "OK",
                400 => "Bad Request",
                401 => "Unauthorized",
                404 => "Not Found",
                408 => "Request Timeout",
                429 => "Too Many Requests",
                500 => "Internal Server Error",
                503 => "Service Unavailable",
                529 => "Overloaded",
                _ => "Status",
            }
            .to_owned()
        });
        let mut out = format!("HTTP/1.1 {} {reason}\r\n", reply.status);
        for (k, v) in &reply.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        match &reply.body {
            Body::Full(b) => {
                out.push_str(&format!("content-length: {}\r\n\r\n", b.len()));
                let mut bytes = out.into_bytes();
                bytes.extend_from_slice(b);
                sock.write_all(&bytes).await?;
            }
            Body::Chunked { chunks, cut } => {
                out.push_str("transfer-encoding: chunked\r\n\r\n");
                sock.write_all(out.as_bytes()).await?;
                for c in chunks {
                    if !reply.pace.is_zero() {
                        tokio::time::sleep(reply.pace).await;
                    }
                    let mut piece = format!("{:x}\r\n", c.len()).into_bytes();
                    piece.extend_from_slice(c);
                    piece.extend_from_slice(b"\r\n");
                    sock.write_all(&piece).await?;
                    sock.flush().await?;
                    tokio::task::yield_now().await;
                }
                if reply.stall {
                    sock.flush().await?;
                    std::future::pending::<()>().await;
                }
                if *cut {
                    sock.flush().await?;
                    // Drop the connection mid-body.
                    return Ok(());
                }
                sock.write_all(b"0\r\n\r\n").await?;
            }
        }
        sock.flush().await?;
    }
}

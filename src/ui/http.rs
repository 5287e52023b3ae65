//! The viewer's HTTP/1.1 server, with limits before anything else: a thread per connection (at
//! most [`MAX_CONNECTIONS`]) reads and frames each request with `httparse` under a deadline, a
//! head of at most [`MAX_HEAD`] bytes and a declared body of at most [`MAX_BODY`], and hands it to
//! the one thread that owns the store. A client that is slow, sends nothing, declares a huge body
//! or floods headers costs its own thread a bounded time and memory, never the viewer: the store's
//! thread only ever sees whole requests that passed the screen (the guard), and never writes to a
//! socket. A connection whose requests never passed the screen is the first to go when the
//! connections run out, so strangers holding connections cannot lock the page out.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest request line and headers.
pub const MAX_HEAD: usize = 16 << 10;
/// The largest request body (an edited memory).
pub const MAX_BODY: usize = 1 << 20;
/// Connections served at once (see [`accept`] for who goes when there are more).
pub const MAX_CONNECTIONS: usize = 48;
/// Headers a request may carry.
const MAX_HEADERS: usize = 64;
/// How long a request may take to arrive, head and body, once its first byte has.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// How long a kept-alive connection may wait for its next request.
const IDLE: Duration = Duration::from_secs(15);
/// How long writing an answer may take.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// How long a connection waits for the store's thread to answer.
const ANSWER_DEADLINE: Duration = Duration::from_secs(30);
/// Requests waiting for the store's thread; more are answered 503 at once.
const QUEUE: usize = 32;

/// One whole request.
#[derive(Debug, Default)]
pub struct Request {
    /// Upper-case.
    pub method: String,
    /// The request target as sent (`/api/memories?bank=…`).
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first header of that name (names compare without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// One answer: its status, headers (no `Content-Length` or `Connection`: the server adds them)
/// and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A request and where its answer goes.
pub struct Incoming {
    pub request: Request,
    reply: SyncSender<Response>,
}

impl Incoming {
    /// Sends the answer (to a client that may have gone: then nothing happens).
    pub fn respond(self, response: Response) {
        let _ = self.reply.send(response);
    }
}

/// What a connection's thread answers itself, before the store's thread sees a request: `Some`
/// for a request refused (or one that needs nothing of the store), `None` for one that passed.
pub type Screen = Arc<dyn Fn(&Request) -> Option<Response> + Send + Sync>;

/// The listening server; requests arrive through [`Server::recv_timeout`] once it has started.
pub struct Server {
    port: u16,
    listener: Option<TcpListener>,
    requests: Option<Receiver<Incoming>>,
}

impl Server {
    /// Listens on 127.0.0.1:`port` (0: any free port); nothing is accepted until [`Server::start`].
    pub fn bind(port: u16) -> io::Result<Server> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let port = listener.local_addr()?.port();
        Ok(Server { port, listener: Some(listener), requests: None })
    }

    /// Starts accepting, each request first put to `screen`.
    pub fn start(&mut self, screen: Screen) -> io::Result<()> {
        let Some(listener) = self.listener.take() else { return Ok(()) };
        let (tx, requests) = mpsc::sync_channel(QUEUE);
        std::thread::Builder::new().name("ui-accept".into()).spawn(move || accept(listener, tx, screen))?;
        self.requests = Some(requests);
        Ok(())
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The next request, or `None` when none came within `wait`.
    pub fn recv_timeout(&self, wait: Duration) -> Option<Incoming> {
        match &self.requests {
            Some(r) => r.recv_timeout(wait).ok(),
            None => {
                std::thread::sleep(wait);
                None
            }
        }
    }
}

/// One open connection, as the accept thread sees it.
struct Open {
    id: u64,
    stream: TcpStream,
    /// One of its requests passed the screen.
    trusted: Arc<AtomicBool>,
}

/// Accepts for as long as the viewer runs. An error (no descriptor left, a connection reset
/// before it was taken) is waited out, never the end of the listener. When [`MAX_CONNECTIONS`]
/// are open, the oldest connection none of whose requests passed the screen is closed to make
/// room; when every one has, the new one is.
fn accept(listener: TcpListener, requests: SyncSender<Incoming>, screen: Screen) {
    let open: Arc<Mutex<Vec<Open>>> = Arc::default();
    let mut next = 0u64;
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let Ok(mine) = stream.try_clone() else { continue };
        let trusted = Arc::new(AtomicBool::new(false));
        {
            let mut all = open.lock().unwrap_or_else(|e| e.into_inner());
            if all.len() >= MAX_CONNECTIONS {
                match all.iter().position(|c| !c.trusted.load(Ordering::SeqCst)) {
                    Some(i) => {
                        let _ = all.remove(i).stream.shutdown(Shutdown::Both);
                    }
                    None => {
                        let _ = stream.shutdown(Shutdown::Both);
                        continue;
                    }
                }
            }
            next += 1;
            all.push(Open { id: next, stream: mine, trusted: trusted.clone() });
        }
        let (id, open2, requests, screen) = (next, open.clone(), requests.clone(), screen.clone());
        let started = std::thread::Builder::new().name("ui-conn".into()).stack_size(256 << 10).spawn(move || {
            serve(stream, &requests, &*screen, &trusted);
            open2.lock().unwrap_or_else(|e| e.into_inner()).retain(|c| c.id != id);
        });
        if started.is_err() {
            open.lock().unwrap_or_else(|e| e.into_inner()).retain(|c| c.id != id);
        }
    }
}

/// Why a connection stops reading requests.
enum Framing {
    /// The peer closed, or sent nothing in time: close without a word.
    Gone,
    /// Answer with this status and close.
    Refuse(u16, &'static str),
}

/// Serves one connection's requests, one at a time, until it closes, errs or idles.
fn serve(
    mut stream: TcpStream,
    requests: &SyncSender<Incoming>,
    screen: &(dyn Fn(&Request) -> Option<Response> + Send + Sync),
    trusted: &AtomicBool,
) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(WRITE_DEADLINE));
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let (request, keep) = match read_request(&mut stream, &mut buf) {
            Ok(r) => r,
            Err(Framing::Gone) => return,
            Err(Framing::Refuse(status, why)) => {
                let _ = write_response(&mut stream, &plain(status, why), false, false);
                linger(&mut stream);
                return;
            }
        };
        let head_only = request.method == "HEAD";
        let response = match screen(&request) {
            Some(answered) => answered,
            None => {
                trusted.store(true, Ordering::SeqCst);
                let (reply, answer) = mpsc::sync_channel(1);
                match requests.try_send(Incoming { request, reply }) {
                    Ok(()) => answer.recv_timeout(ANSWER_DEADLINE).unwrap_or_else(|_| plain(503, "the viewer is busy")),
                    Err(TrySendError::Full(_)) => plain(503, "the viewer is busy; try again"),
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
        };
        if write_response(&mut stream, &response, head_only, keep).is_err() || !keep {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// Closes after a refusal: what the client still sends is read and dropped for a moment (at most
/// [`MAX_BODY`], for at most a second), so that closing does not reset the connection before the
/// client has read the answer.
fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + Duration::from_secs(1);
    let (mut sink, mut dropped) = (Vec::new(), 0);
    while dropped < MAX_BODY && fill(stream, &mut sink, deadline, 8192).is_ok() {
        dropped += sink.len();
        sink.clear();
    }
}

fn plain(status: u16, why: &str) -> Response {
    let body = serde_json::json!({ "error": why }).to_string().into_bytes();
    Response { status, headers: vec![("Content-Type".into(), "application/json".into())], body }
}

/// Reads more of the stream into `buf`, at most until `deadline`; `Gone` on close or timeout.
fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant, cap: usize) -> Result<(), Framing> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Framing::Gone);
    }
    let _ = stream.set_read_timeout(Some(left));
    let mut chunk = [0u8; 8192];
    let want = chunk.len().min(cap.saturating_sub(buf.len()).max(1));
    match stream.read(&mut chunk[..want]) {
        Ok(0) | Err(_) => Err(Framing::Gone),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
    }
}

/// Reads one request (bytes past it stay in `buf` for the next); whether the connection may
/// serve another after it.
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(Request, bool), Framing> {
    // The wait for a request's first byte is the idle time; from there, the request's deadline.
    let mut deadline = Instant::now() + IDLE;
    let mut started = !buf.is_empty();
    if started {
        deadline = Instant::now() + REQUEST_DEADLINE;
    }
    let (head_len, mut request, version, declared) = loop {
        if !buf.is_empty() {
            if !started {
                started = true;
                deadline = Instant::now() + REQUEST_DEADLINE;
            }
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut parsed = httparse::Request::new(&mut headers);
            match parsed.parse(buf) {
                Ok(httparse::Status::Complete(len)) => {
                    let mut request = Request {
                        method: parsed.method.unwrap_or_default().to_ascii_uppercase(),
                        target: parsed.path.unwrap_or_default().to_string(),
                        headers: Vec::with_capacity(parsed.headers.len()),
                        body: Vec::new(),
                    };
                    for h in parsed.headers.iter() {
                        let value = String::from_utf8_lossy(h.value).into_owned();
                        request.headers.push((h.name.to_string(), value));
                    }
                    let declared = content_length(&request)?;
                    break (len, request, parsed.version.unwrap_or(1), declared);
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(Framing::Refuse(431, "too many headers"));
                }
                Err(_) => return Err(Framing::Refuse(400, "not an HTTP request")),
            }
            if buf.len() >= MAX_HEAD {
                return Err(Framing::Refuse(431, "the request's head is too large"));
            }
        }
        fill(stream, buf, deadline, MAX_HEAD)?;
    };
    if declared > MAX_BODY {
        return Err(Framing::Refuse(413, "the request body is too large"));
    }
    buf.drain(..head_len);
    // A client that asks first (curl does for a large body) is told to go on.
    let expects = request.header("Expect").is_some_and(|e| e.trim().eq_ignore_ascii_case("100-continue"));
    if expects && buf.len() < declared {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    while buf.len() < declared {
        fill(stream, buf, deadline, declared)?;
    }
    request.body = buf.drain(..declared).collect();
    let connection = request.header("Connection").unwrap_or_default().to_ascii_lowercase();
    let keep = if version == 0 { connection.contains("keep-alive") } else { !connection.contains("close") };
    Ok((request, keep))
}

/// The body's declared length: 0 when none is, an error for a chunked body (the page never sends
/// one) or for lengths that disagree or do not parse.
fn content_length(request: &Request) -> Result<usize, Framing> {
    if request.header("Transfer-Encoding").is_some() {
        return Err(Framing::Refuse(411, "send the body with a Content-Length"));
    }
    let mut length: Option<usize> = None;
    for (k, v) in &request.headers {
        if !k.eq_ignore_ascii_case("Content-Length") {
            continue;
        }
        let v = v.trim();
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Framing::Refuse(400, "Content-Length is not a number"));
        }
        // Anything longer than the limit's digits is over it; no overflow to care about.
        let n = if v.len() > 12 { usize::MAX } else { v.parse().unwrap_or(usize::MAX) };
        if length.is_some_and(|l| l != n) {
            return Err(Framing::Refuse(400, "two different Content-Length headers"));
        }
        length = Some(n);
    }
    Ok(length.unwrap_or(0))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

fn write_response(stream: &mut TcpStream, r: &Response, head_only: bool, keep: bool) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", r.status, reason(r.status));
    for (k, v) in &r.headers {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: {}\r\n\r\n",
        r.body.len(),
        if keep { "keep-alive" } else { "close" }
    ));
    let mut out = head.into_bytes();
    if !head_only {
        out.extend_from_slice(&r.body);
    }
    stream.write_all(&out)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// A server whose store thread answers every request with its method, target and body size.
    fn echo() -> u16 {
        let mut server = Server::bind(0).unwrap();
        let port = server.port();
        // Requests for `/stranger…` are refused by the screen, as the guard refuses a stranger's.
        let screen: Screen = Arc::new(|r: &Request| {
            r.target.starts_with("/stranger").then(|| Response { status: 401, headers: vec![], body: b"no".to_vec() })
        });
        server.start(screen).unwrap();
        std::thread::spawn(move || loop {
            if let Some(i) = server.recv_timeout(Duration::from_millis(100)) {
                let r = &i.request;
                let body = format!("{} {} {}", r.method, r.target, r.body.len()).into_bytes();
                i.respond(Response { status: 200, headers: vec![], body });
            }
        });
        port
    }

    fn exchange(port: u16, raw: &[u8]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = s.write_all(raw);
        let mut out = String::new();
        let _ = std::io::BufReader::new(s).read_line(&mut out);
        out
    }

    #[test]
    fn requests_are_framed_and_limits_refuse_before_reading() {
        let port = echo();
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        // Two requests on one connection, the second with a body.
        s.write_all(b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut text = Vec::new();
        let mut chunk = [0u8; 4096];
        while !String::from_utf8_lossy(&text).contains("POST /b 3") {
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&text));
            text.extend_from_slice(&chunk[..n]);
        }
        assert!(String::from_utf8_lossy(&text).contains("GET /a?x=1 0"));

        let huge = b"POST /x HTTP/1.1\r\nHost: evil\r\nContent-Length: 99999999999999\r\n\r\n";
        assert!(exchange(port, huge).contains(" 413 "));
        let twice = b"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
        assert!(exchange(port, twice).contains(" 400 "));
        let chunked = b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        assert!(exchange(port, chunked).contains(" 411 "));
        let mut flood = b"GET / HTTP/1.1\r\nX: ".to_vec();
        flood.extend(std::iter::repeat_n(b'a', 1 << 20));
        assert!(exchange(port, &flood).contains(" 431 "));
        assert!(exchange(port, b"\x16\x03\x01 not http\r\n\r\n").contains(" 400 "));
        let asks = b"POST /big HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n";
        assert!(exchange(port, asks).contains(" 100 "), "told to go on");
    }

    /// Clients that send nothing, or declare a body and never send it, hold only their own
    /// threads: a request on another connection is answered at once meanwhile.
    #[test]
    fn silent_and_slow_clients_hold_nobody_else() {
        let port = echo();
        let mut idle: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
        let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
        slow.write_all(b"POST / HTTP/1.1\r\nContent-Length: 5000\r\n\r\nab").unwrap();
        idle.push(slow);
        let started = Instant::now();
        assert!(exchange(port, b"GET /ok HTTP/1.1\r\n\r\n").contains(" 200 "));
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    /// Past the connection cap, the oldest connection that never passed the screen makes room;
    /// when every one has, a new connection is closed at once. Strangers holding every connection
    /// cannot lock out a client that has the token.
    #[test]
    fn strangers_holding_every_connection_make_room_for_the_page() {
        let port = echo();
        let mut strangers: Vec<TcpStream> =
            (0..MAX_CONNECTIONS).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
        for s in strangers.iter_mut().take(5) {
            s.write_all(b"GET /stranger HTTP/1.1\r\n\r\n").unwrap();
        }
        std::thread::sleep(Duration::from_millis(200));
        let mut page = TcpStream::connect(("127.0.0.1", port)).unwrap();
        page.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut answers = Vec::new();
        for i in 0..3 {
            page.write_all(format!("GET /page{i} HTTP/1.1\r\n\r\n").as_bytes()).unwrap();
            let mut chunk = [0u8; 4096];
            let n = page.read(&mut chunk).unwrap();
            answers.push(String::from_utf8_lossy(&chunk[..n]).into_owned());
            // More strangers keep coming; the page's connection stays.
            strangers.push(TcpStream::connect(("127.0.0.1", port)).unwrap());
            std::thread::sleep(Duration::from_millis(50));
        }
        for (i, a) in answers.iter().enumerate() {
            assert!(a.contains(" 200 ") && a.contains(&format!("GET /page{i} 0")), "{answers:?}");
        }
    }

    /// With every connection trusted, a new one is closed unanswered; the listener goes on.
    #[test]
    fn the_connection_cap_sheds_and_recovers() {
        let port = echo();
        let mut held: Vec<TcpStream> =
            (0..MAX_CONNECTIONS).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
        for h in &mut held {
            h.write_all(b"GET /trusted HTTP/1.1\r\n\r\n").unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(exchange(port, b"GET /over HTTP/1.1\r\n\r\n"), "", "closed unanswered");
        drop(held);
        let started = Instant::now();
        while !exchange(port, b"GET /again HTTP/1.1\r\n\r\n").contains(" 200 ") {
            assert!(started.elapsed() < Duration::from_secs(5), "the server never came back");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

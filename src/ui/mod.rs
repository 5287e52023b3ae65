//! `ovmem ui`: a local web viewer of what the agents remember, started on demand (no daemon).
//! One small HTTP server on 127.0.0.1 only, with a random token per run (`guard`), the page's
//! assets embedded in the binary (`page`; no build step, no CDN, works offline), the JSON API
//! (`api`) and live updates (`events`). It stops on Ctrl-C and after an idle time.

pub mod api;
pub mod events;
pub mod guard;
pub mod page;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use percent_encoding::percent_decode_str;
use tiny_http::{Header, Response, Server};

use crate::env::Env;
use crate::store::Store;
use guard::{Guard, Proof, Seen};

const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
const ICON: &str = include_str!("assets/icon.svg");

/// The largest request body read (an edited memory).
const MAX_BODY: u64 = 1 << 20;

/// Every answer forbids framing, sniffing, referrers (the URL holds the token) and caching, and
/// lets the page load nothing but its own files.
const SECURITY: [(&str, &str); 5] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
];

pub struct Options {
    /// 0: any free port.
    pub port: u16,
    pub open: bool,
    /// The bank listed first, as "this project".
    pub default_bank: Option<String>,
    /// Stop after this long without a request (an open page asks every second).
    pub idle: Duration,
}

/// Runs the viewer until Ctrl-C or the idle time; the URL (with the token) goes to stdout.
pub fn serve(opts: Options, env: &Env) -> Result<i32> {
    let db = env.ovmem_home().join("memory.db");
    let store = Store::open(&db, Duration::from_secs(5))?;
    // Every client holds two descriptors until it closes: a few hundred idle connections must not
    // use up the default 1,024 (tiny_http's accept thread ends on that error).
    crate::sys::raise_open_files_limit();
    let server = Server::http(("127.0.0.1", opts.port))
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("could not listen on 127.0.0.1:{}; choose another --port", opts.port))?;
    let port = server.server_addr().to_ip().map(|a| a.port()).context("the server has no TCP address")?;
    let guard = Guard::new(guard::new_token().context("could not read /dev/urandom for the token")?, port);
    let url = format!("http://127.0.0.1:{port}/?token={}", guard.token());
    println!("{url}");
    let _ = std::io::stdout().flush();
    eprintln!(
        "ovmem ui: serving the memory store `{}`; Ctrl-C stops it (it stops by itself after {} idle)",
        db.display(),
        human(opts.idle)
    );
    if opts.open {
        open_browser(&url);
    }
    crate::interrupt::arm();
    let viewer = Viewer { api: api::Api { store: &store, env, default_bank: opts.default_bank }, guard };
    let mut last = Instant::now();
    let why = loop {
        if let Err(e) = crate::interrupt::check() {
            break format!("stopped ({})", e.name);
        }
        if last.elapsed() >= opts.idle {
            break format!("stopped after {} idle", human(opts.idle));
        }
        match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(request)) => {
                // Only a request that passed the guard keeps the viewer up: a stranger's refused
                // ones do not.
                if viewer.handle(request) {
                    last = Instant::now();
                }
            }
            Ok(None) => {}
            Err(e) => break format!("stopped: the server failed ({e})"),
        }
    };
    eprintln!("ovmem ui: {why}");
    Ok(0)
}

struct Viewer<'a> {
    api: api::Api<'a>,
    guard: Guard,
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("ASCII header")
}

fn find<'r>(r: &'r tiny_http::Request, name: &'static str) -> Option<&'r str> {
    r.headers().iter().find(|h| h.field.equiv(name)).map(|h| h.value.as_str())
}

/// `a=1&b=x%20y` as a map (`+` is a space, as forms send it).
pub fn parse_query(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let dec = |s: &str| percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
            (dec(k), dec(v))
        })
        .collect()
}

impl Viewer<'_> {
    /// Answers `request`; whether it passed the guard.
    fn handle(&self, mut request: tiny_http::Request) -> bool {
        let url = request.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let query = parse_query(query);
        let method = request.method().as_str().to_ascii_uppercase();
        let seen = Seen {
            method: &method,
            host: find(&request, "Host"),
            origin: find(&request, "Origin"),
            authorization: find(&request, "Authorization"),
            cookie: find(&request, "Cookie"),
            query_token: query.get("token").map(String::as_str),
        };
        let proof = match self.guard.check(&seen) {
            Ok(p) => p,
            Err(e) => {
                let body = serde_json::json!({ "error": e.to_string() }).to_string();
                self.send(request, e.status(), "application/json", body.into_bytes(), None);
                return false;
            }
        };
        let cookie = (proof == Proof::Query).then(|| self.guard.set_cookie());
        let segments: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
            .collect();
        let asset = |body: &str, kind: &str| (kind.to_string(), body.as_bytes().to_vec());
        let found = match (method.as_str(), path) {
            ("GET" | "HEAD", "/" | "/index.html") => {
                let store = self.api.store;
                let first = store.page(None, None, page::FIRST).and_then(|m| Ok((m, store.pinned_ids()?)));
                let (memories, pinned) = first.unwrap_or_default();
                let html = page::render(self.guard.token(), &memories, &pinned);
                Some(("text/html; charset=utf-8".into(), html.into_bytes()))
            }
            ("GET" | "HEAD", "/app.js") => Some(asset(SCRIPT, "text/javascript; charset=utf-8")),
            ("GET" | "HEAD", "/app.css") => Some(asset(STYLE, "text/css; charset=utf-8")),
            ("GET" | "HEAD", "/favicon.ico" | "/icon.svg") => Some(asset(ICON, "image/svg+xml")),
            ("GET", "/api/events") => match events::body(self.api.store) {
                Ok(body) => Some(("text/event-stream; charset=utf-8".into(), body.into_bytes())),
                Err(e) => {
                    let body = serde_json::json!({ "error": format!("{e:#}") }).to_string();
                    self.send(request, 500, "application/json", body.into_bytes(), None);
                    return true;
                }
            },
            _ => None,
        };
        if let Some((kind, body)) = found {
            self.send(request, 200, &kind, body, cookie);
            return true;
        }
        let mut body = Vec::new();
        if let Err(e) = request.as_reader().take(MAX_BODY).read_to_end(&mut body) {
            let body = serde_json::json!({ "error": format!("could not read the request body: {e}") }).to_string();
            self.send(request, 400, "application/json", body.into_bytes(), cookie);
            return true;
        }
        let reply = self.api.handle(&api::Request { method: &method, segments, query, body: &body });
        let body = serde_json::to_vec(&reply.body).unwrap_or_default();
        self.send(request, reply.status, "application/json", body, cookie);
        true
    }

    fn send(&self, request: tiny_http::Request, status: u16, kind: &str, body: Vec<u8>, cookie: Option<String>) {
        let mut response = Response::from_data(body).with_status_code(status).with_header(header("Content-Type", kind));
        for (k, v) in SECURITY {
            response.add_header(header(k, v));
        }
        if let Some(c) = cookie {
            response.add_header(header("Set-Cookie", &c));
        }
        let _ = request.respond(response);
    }
}

/// `30 minutes`, `90 s`.
fn human(d: Duration) -> String {
    match d.as_secs() {
        s if s % 60 == 0 => format!("{} minute{}", s / 60, if s == 60 { "" } else { "s" }),
        s => format!("{s} s"),
    }
}

/// Opens the URL in the desktop's browser; says so when it cannot.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let started = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        // Reaped on a thread of its own: the opener returns at once, the viewer goes on.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(_) => eprintln!("ovmem ui: could not run `{opener}`; open the URL above in a browser"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        let q = parse_query("bank=project%3A%2Fsrc%2Fapp&q=retry+budget&limit=5&flag");
        assert_eq!(q["bank"], "project:/src/app");
        assert_eq!(q["q"], "retry budget");
        assert_eq!(q["limit"], "5");
        assert_eq!(q["flag"], "");
    }
}

//! `ovmem ui`: a local web viewer of what the agents remember, started on demand (no daemon).
//! One small HTTP server on 127.0.0.1 only, with limits (`http`), a random token per run (`guard`), the page's
//! assets embedded in the binary (`page`; no build step, no CDN, works offline), the JSON API
//! (`api`) and live updates (`events`). It stops on Ctrl-C and after an idle time.

pub mod api;
pub mod events;
pub mod guard;
pub mod http;
pub mod page;

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use percent_encoding::percent_decode_str;

use crate::env::Env;
use crate::store::Store;
use guard::{Guard, Seen};

const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
const ICON: &str = include_str!("assets/icon.svg");
/// What a reload gets: the page asks again with the token its tab kept (`boot.js`).
const BOOT: &str = include_str!("assets/boot.html");
const BOOT_SCRIPT: &str = include_str!("assets/boot.js");

/// Every answer forbids framing, sniffing, referrers (the URL holds the token) and caching, and
/// lets the page load nothing but its own files.
const SECURITY: [(&str, &str); 5] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
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
    // A few hundred idle connections must not use up the default 1,024 descriptors.
    crate::sys::raise_open_files_limit();
    let mut server = http::Server::bind(opts.port)
        .with_context(|| format!("could not listen on 127.0.0.1:{}; choose another --port", opts.port))?;
    let port = server.port();
    let guard = Arc::new(Guard::new(guard::new_token().context("could not read /dev/urandom for the token")?, port));
    let screening = guard.clone();
    server.start(Arc::new(move |r: &http::Request| screen(&screening, r))).context("could not start the server")?;
    let url = format!("http://127.0.0.1:{port}/?token={}", guard.token());
    println!("{url}");
    let _ = std::io::stdout().flush();
    eprintln!(
        "ovmem ui: serving the memory store `{}`; Ctrl-C stops it (it stops by itself after {} idle)",
        db.display(),
        human(opts.idle)
    );
    // The opener's arguments can be read by every user of the machine: it is given a file only
    // this user can read, which posts the token to the page.
    let launcher = opts.open.then(|| launcher(env, port, guard.token()));
    match &launcher {
        Some(Ok(file)) => open_browser(&format!("file://{}", file.display())),
        Some(Err(e)) => {
            eprintln!("ovmem ui: could not write the page that opens the viewer ({e:#}); open the URL above")
        }
        None => {}
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
        if let Some(incoming) = server.recv_timeout(Duration::from_millis(200)) {
            // Only a request that passed the guard keeps the viewer up (a stranger's refused ones
            // are answered on their connections' threads and never come here).
            let response = viewer.handle(&incoming.request);
            incoming.respond(response);
            last = Instant::now();
        }
    };
    eprintln!("ovmem ui: {why}");
    if let Some(Ok(file)) = launcher {
        let _ = std::fs::remove_file(file);
    }
    Ok(0)
}

/// `$OVMEM_HOME/ui/open-<port>.html` (0600), a page that posts the token to the viewer's page: the
/// browser opens it at an address without the token, so its history never holds one.
fn launcher(env: &Env, port: u16, token: &str) -> Result<std::path::PathBuf> {
    let dir = env.ovmem_home().join("ui");
    crate::fsx::create_dirs(&dir, None).with_context(|| format!("could not create `{}`", dir.display()))?;
    crate::sys::set_mode(&dir, 0o700).with_context(|| format!("could not make `{}` private", dir.display()))?;
    let file = dir.join(format!("open-{port}.html"));
    let token = page::escape(token);
    let html = format!(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<title>ovmem</title>\n\
         <form method=\"post\" action=\"http://127.0.0.1:{port}/\">\
         <input type=\"hidden\" name=\"token\" value=\"{token}\">\
         <button>Open the ovmem viewer</button></form>\n\
         <script>document.forms[0].submit()</script>\n"
    );
    crate::fsx::write_atomic(&file, html.as_bytes(), Some(0o600))?;
    Ok(file)
}

struct Viewer<'a> {
    api: api::Api<'a>,
    guard: Arc<Guard>,
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
    /// The answer to `request`, one that passed [`screen`] on its connection's thread (the only
    /// way a request reaches this thread).
    fn handle(&self, request: &http::Request) -> http::Response {
        let (path, query) = request.target.split_once('?').unwrap_or((&request.target, ""));
        let query = parse_query(query);
        let method = request.method.as_str();
        let segments: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
            .collect();
        let found = match (method, path) {
            // POST: the token came in a form (`guard::Proof::Form`), as the opener's file and a
            // reload send it.
            ("GET" | "HEAD" | "POST", "/" | "/index.html") => {
                let store = self.api.store;
                let first = store.page(None, None, page::FIRST).and_then(|m| Ok((m, store.pinned_ids()?)));
                let (memories, pinned) = first.unwrap_or_default();
                let html = page::render(self.guard.token(), &memories, &pinned);
                Some(("text/html; charset=utf-8".into(), html.into_bytes()))
            }
            ("GET" | "HEAD", _) if file(path).is_some() => {
                file(path).map(|(kind, body)| (kind.to_string(), body.as_bytes().to_vec()))
            }
            ("GET", "/api/events") => match events::body(self.api.store) {
                Ok(body) => Some(("text/event-stream; charset=utf-8".into(), body.into_bytes())),
                Err(e) => return answer(500, "application/json", error(format!("{e:#}"))),
            },
            _ => None,
        };
        if let Some((kind, body)) = found {
            return answer(200, &kind, body);
        }
        let reply = self.api.handle(&api::Request { method, segments, query, body: &request.body });
        let body = serde_json::to_vec(&reply.body).unwrap_or_default();
        answer(reply.status, "application/json", body)
    }
}

/// The answer to a request that does not pass the guard (`None` for one that does), given on the
/// connection's own thread. A reload gets a page with no data that posts the token its tab kept
/// (the address never holds it: a browser's history keeps every address it opened); the page's
/// own files hold no data either and load without the token (a browser sends it with none of them).
fn screen(guard: &Guard, request: &http::Request) -> Option<http::Response> {
    let (path, query) = request.target.split_once('?').unwrap_or((&request.target, ""));
    let query = parse_query(query);
    let method = request.method.as_str();
    let page = matches!(path, "/" | "/index.html");
    let form = if method == "POST" && page && form_encoded(request) {
        parse_query(&String::from_utf8_lossy(&request.body))
    } else {
        HashMap::new()
    };
    let seen = Seen {
        method,
        host: request.header("Host"),
        origin: request.header("Origin"),
        authorization: request.header("Authorization"),
        query_token: query.get("token").map(String::as_str),
        form_token: form.get("token").map(String::as_str),
    };
    let e = guard.check(&seen).err()?;
    if e != guard::Refused::Token {
        return Some(answer(e.status(), "application/json", error(e)));
    }
    Some(match (method, page) {
        ("GET" | "HEAD", true) => answer(200, "text/html; charset=utf-8", BOOT.as_bytes().to_vec()),
        // A token that failed (the viewer was started again): the same page, which then says
        // what to do, since its tab no longer holds a token.
        ("POST", true) => answer(e.status(), "text/html; charset=utf-8", BOOT.as_bytes().to_vec()),
        ("GET" | "HEAD", false) => match file(path) {
            Some((kind, body)) => answer(200, kind, body.as_bytes().to_vec()),
            None => answer(e.status(), "application/json", error(e)),
        },
        _ => answer(e.status(), "application/json", error(e)),
    })
}

/// A body sent as an HTML form sends it (`application/x-www-form-urlencoded`).
fn form_encoded(request: &http::Request) -> bool {
    request.header("Content-Type").is_some_and(|t| {
        t.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/x-www-form-urlencoded")
    })
}

/// The page's own files (no data in them): type and body.
fn file(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/app.js" => Some(("text/javascript; charset=utf-8", SCRIPT)),
        "/boot.js" => Some(("text/javascript; charset=utf-8", BOOT_SCRIPT)),
        "/app.css" => Some(("text/css; charset=utf-8", STYLE)),
        "/favicon.ico" | "/icon.svg" => Some(("image/svg+xml", ICON)),
        _ => None,
    }
}

/// `{"error": why}`.
fn error(why: impl std::fmt::Display) -> Vec<u8> {
    serde_json::json!({ "error": why.to_string() }).to_string().into_bytes()
}

fn answer(status: u16, kind: &str, body: Vec<u8>) -> http::Response {
    let mut headers = vec![("Content-Type".to_string(), kind.to_string())];
    headers.extend(SECURITY.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    http::Response { status, headers, body }
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

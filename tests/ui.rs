//! `ovmem ui`, the local web viewer, run as a user runs it: the built binary on a seeded
//! throwaway home, asked over plain HTTP (who may ask, what the API answers, that forget, pin and
//! edit change the store `ovmem memory` reads) and driven in headless Chromium through
//! chromedriver's WebDriver API (the page lists, searches, forgets, follows live captures, shows a
//! session's injections). Without Chromium the browser test says `SKIPPED (not a pass)` locally
//! and fails under CI. `OVMEM_UI_SCREENSHOT=1` writes the page's screenshot to docs/ui.png.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Home;
use serde_json::{json, Value};

/// The seeded memories: (kind, prompt, reply, harness, session, age in seconds).
const SEED: &[(&str, &str, &str, &str, &str, i64)] = &[
    (
        "turn",
        "How do we deploy the billing service?",
        "Deploys go through Jenkins on ci.internal:8080; the pipeline runs cargo test first, then pushes the image.",
        "claude-code",
        "sess-alpha-1",
        7200,
    ),
    (
        "turn",
        "Which database does the idempotency store use?",
        "We switched to Postgres with a 72 h retention instead of Redis with 24 h.",
        "codex",
        "sess-beta-2",
        3600,
    ),
    ("fact", "The deploy codename is BLUEHERON-7.", "", "cli", "", 600),
    (
        "turn",
        "Where do the API keys live?",
        "In .env, loaded by direnv: STRIPE_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc is never committed.",
        "claude-code",
        "sess-alpha-1",
        7000,
    ),
];

fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("OVMEM_E2E_REQUIRED").is_ok_and(|v| v == "1")
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// The seeded project, a directory in the throwaway home.
fn project(home: &Home) -> String {
    let dir = home.path().join("src/billing-api");
    std::fs::create_dir_all(&dir).unwrap();
    dir.display().to_string()
}

/// Imports [`SEED`] into the project's bank (what `ovmem memory list --project` shows), plus
/// one memory of another project; returns `memory list --all --json`.
fn seed(home: &Home) -> Vec<Value> {
    let mut lines = String::new();
    for (kind, prompt, reply, harness, session, age) in SEED {
        let session = (!session.is_empty()).then_some(session);
        let m = json!({"kind": kind, "prompt": prompt, "reply": reply, "harness": harness, "session": session,
                       "created_at": now() - age});
        lines.push_str(&format!("{m}\n"));
    }
    let file = home.put("seed.jsonl", lines.as_bytes());
    home.ok(&["memory", "import", file.to_str().unwrap(), "--project", &project(home)]);
    let other = json!({"bank": "project:/elsewhere/web", "kind": "fact", "prompt": "Frontend tests run with vitest.",
                       "harness": "gemini", "session": "g-1", "created_at": now() - 86_400 * 3});
    let file = home.put("other.jsonl", format!("{other}\n").as_bytes());
    home.ok(&["memory", "import", file.to_str().unwrap()]);
    listed(home, true)
}

fn listed(home: &Home, all: bool) -> Vec<Value> {
    let dir = project(home);
    let args: &[&str] =
        if all { &["memory", "list", "--all", "--json"] } else { &["memory", "list", "--json", "--project", &dir] };
    serde_json::from_slice(&home.ok(args).stdout).unwrap()
}

/// An injection into a prompt of session `sess-alpha-1`, `age` seconds ago, written through the
/// store's API (the same row a prompt hook writes when it records what it injected).
fn record(home: &Home, seeded: &[Value], age: i64, memory_ids: Vec<i64>, chars: usize) {
    let store = ovmem::store::Store::open(&home.path().join(".ovmem/memory.db"), Duration::from_secs(5)).unwrap();
    store
        .record_injection(&ovmem::store::Injection {
            at: now() - age,
            harness: Some("claude-code".into()),
            session: Some("sess-alpha-1".into()),
            bank: seeded[0]["bank"].as_str().unwrap().into(),
            event: "prompt".into(),
            memory_ids,
            chars,
        })
        .unwrap();
}

fn id_of(list: &[Value], needle: &str) -> i64 {
    list.iter().find(|m| m["content"].as_str().unwrap().contains(needle)).expect(needle)["id"].as_i64().unwrap()
}

/// A running `ovmem ui`, stopped (SIGINT, then killed) when dropped.
struct Viewer {
    child: Child,
    port: u16,
    token: String,
    url: String,
}

impl Viewer {
    fn start(home: &Home, args: &[&str]) -> Viewer {
        let mut all = vec!["ui", "--no-open"];
        all.extend_from_slice(args);
        let mut child = home.cmd(&all).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().to_string();
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("ovmem ui printed {url:?}"));
        let (port, token) = rest.split_once("/?token=").unwrap();
        Viewer { port: port.parse().unwrap(), token: token.to_string(), url: url.clone(), child }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// An API call with the Bearer token.
    fn api(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let (status, _, text) =
            http(self.port, method, path, &[("Host", &self.host()), ("Authorization", &self.bearer())], body);
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Ctrl-C: the viewer says why it stopped and exits 0.
    fn interrupt(mut self) -> (Option<i32>, String) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let code = wait(&mut self.child, Duration::from_secs(5));
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        (code, err)
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait(child: &mut Child, within: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < within {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// One HTTP/1.1 request over a plain socket, so every header (a foreign `Host` too) is exactly
/// what the test says: (status, head, body).
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("Content-Type")) {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    // Read up to the end of the head, then Content-Length bytes (a server may keep the
    // connection open despite `Connection: close`), or to the end.
    let mut r = BufReader::new(s);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let lower = head.to_ascii_lowercase();
    let length = lower.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|n| n.trim().parse().ok());
    let mut raw = Vec::new();
    match length {
        Some(n) => {
            raw.resize(n, 0);
            r.read_exact(&mut raw).unwrap();
        }
        None => {
            r.read_to_end(&mut raw).unwrap();
        }
    }
    let rest = String::from_utf8_lossy(&raw).into_owned();
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = if lower.contains("transfer-encoding: chunked") { unchunk(&rest) } else { rest };
    (status, head, body)
}

fn unchunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The local addresses listening on `port` (IPv4 and IPv6), from /proc/net/tcp{,6}.
fn listeners(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // `0A` is LISTEN.
            if f.len() > 3 && f[3] == "0A" && f[1].ends_with(&format!(":{port:04X}")) {
                out.push(f[1].to_string());
            }
        }
    }
    out
}

#[test]
fn who_may_ask_and_what_the_api_answers() {
    let home = Home::new();
    let seeded = seed(&home);
    let port = free_port();
    let v = Viewer::start(&home, &["--port", &port.to_string()]);
    assert_eq!(v.port, port, "--port is the port");
    assert_eq!(v.token.len(), 64);

    // Nothing but 127.0.0.1 listens on the port.
    assert_eq!(listeners(port), vec![format!("0100007F:{port:04X}")]);

    // Without the token, with a wrong one, or with a foreign Host: refused.
    let host = v.host();
    let (status, _, body) = http(port, "GET", "/api/memories", &[("Host", &host)], "");
    assert_eq!(status, 401, "{body}");
    let (status, _, boot) = http(port, "GET", "/", &[("Host", &host)], "");
    assert_eq!(status, 200, "the page a reload gets, which asks again with the tab's token");
    assert!(boot.contains("/boot.js") && !boot.contains("Jenkins"), "{boot}");
    let wrong = format!("/api/memories?token={}", "0".repeat(64));
    assert_eq!(http(port, "GET", &wrong, &[("Host", &host)], "").0, 401);
    let with_token = format!("/api/memories?token={}", v.token);
    for foreign in ["evil.example", "evil.example:80", &format!("attacker.test:{port}"), "127.0.0.1:1"] {
        let (status, _, body) = http(port, "GET", &with_token, &[("Host", foreign)], "");
        assert_eq!(status, 403, "Host {foreign}: {body}");
    }
    assert_eq!(http(port, "GET", &with_token, &[], "").0, 403, "no Host at all");

    // With the token (query): every seeded memory, newest first, and no cookie (a browser would
    // send it to every other port of 127.0.0.1).
    let (status, head, body) = http(port, "GET", &with_token, &[("Host", &host)], "");
    assert_eq!(status, 200, "{body}");
    assert!(!head.to_ascii_lowercase().contains("set-cookie"), "{head}");
    let (_, page_head, _) = http(port, "GET", &format!("/?token={}", v.token), &[("Host", &host)], "");
    assert!(!page_head.to_ascii_lowercase().contains("set-cookie"), "{page_head}");
    let page: Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<i64> = page["memories"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()).collect();
    let expected: Vec<i64> = seeded.iter().map(|m| m["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, expected, "every bank, newest first, as `memory list --all`");
    let first = &page["memories"][0];
    for key in ["id", "text", "bank", "harness", "created_at", "session", "marks"] {
        assert!(first.get(key).is_some(), "a memory has `{key}`: {first}");
    }
    let secret = page["memories"].as_array().unwrap().iter().find(|m| m["text"].as_str().unwrap().contains("direnv"));
    assert!(secret.unwrap()["marks"].as_array().unwrap().contains(&json!("redacted")), "{secret:?}");
    assert!(!body.contains("sk_live_4eC39"), "the secret was redacted before it was stored");

    // A cookie holding the token is no proof; the Bearer header works without the query.
    let cookie = format!("ovmem_ui_{port}={}", v.token);
    assert_eq!(http(port, "GET", "/api/banks", &[("Host", &host), ("Cookie", &cookie)], "").0, 401);
    // What a reload gets without the token holds no data and no token.
    let (_, _, boot) = http(port, "GET", "/", &[("Host", &host), ("Cookie", &cookie)], "");
    assert!(boot.contains("/boot.js") && !boot.contains(&v.token) && !boot.contains("Jenkins"), "{boot}");
    assert_eq!(http(port, "GET", "/boot.js", &[("Host", &host)], "").0, 200);
    // The token posted as a form (the opener's file and a reload send it so, never in an address,
    // which a browser's history keeps): the page with its data, from the file's `null` Origin too.
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    let posted = format!("token={}", v.token);
    for origin in ["null", &format!("http://{host}")] {
        let (status, head, page) = http(port, "POST", "/", &[("Host", &host), form, ("Origin", origin)], &posted);
        assert_eq!(status, 200, "{origin}: {page}");
        assert!(page.contains("Jenkins") && !head.to_ascii_lowercase().contains("set-cookie"), "{page}");
    }
    // A wrong token gets the page without data (which then says what to do); a token that is not a
    // form's, or posted anywhere but the page, proves nothing.
    let (status, _, page) = http(port, "POST", "/", &[("Host", &host), form], &format!("token={}", "0".repeat(64)));
    assert_eq!(status, 401);
    assert!(page.contains("/boot.js") && !page.contains("Jenkins"), "{page}");
    let plain = ("Content-Type", "text/plain");
    assert_eq!(http(port, "POST", "/", &[("Host", &host), plain], &posted).0, 401);
    assert_eq!(http(port, "POST", "/api/memories", &[("Host", &host), form], &posted).0, 401);
    assert_eq!(http(port, "POST", "/", &[("Host", "evil.example"), form], &posted).0, 403);
    assert_eq!(http(port, "GET", "/boot.js", &[("Host", "evil.example")], "").0, 403);
    let (status, banks) = v.api("GET", "/api/banks", "");
    assert_eq!(status, 200);
    assert_eq!(banks["total"], json!(seeded.len()));
    assert_eq!(banks["banks"].as_array().unwrap().len(), 2);

    // Paging: two at a time, following `next`, gives the same list.
    let mut paged = Vec::new();
    let mut next = String::new();
    loop {
        let (_, p) = v.api("GET", &format!("/api/memories?limit=2&before={next}"), "");
        paged.extend(p["memories"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()));
        match p["next"].as_str() {
            Some(n) => next = n.to_string(),
            None => break,
        }
    }
    assert_eq!(paged, expected);

    // Search narrows, with recall's ranking and the matched passage; `bank=` keeps to one bank.
    let (_, found) = v.api("GET", "/api/memories?q=jenkins%20pipeline", "");
    let found = found["memories"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0]["passage"].as_str().unwrap().contains("Jenkins"));
    let (_, none) = v.api("GET", "/api/memories?q=vitest&bank=project%3A%2Fnowhere", "");
    assert_eq!(none["memories"], json!([]));

    // Changes: a cookie or ?token= is not enough, a foreign Origin is refused.
    let jenkins = id_of(&seeded, "Jenkins");
    let path = format!("/api/memories/{jenkins}");
    assert_eq!(http(port, "DELETE", &path, &[("Host", &host), ("Cookie", &cookie)], "").0, 401);
    let query_path = format!("{path}?token={}", v.token);
    assert_eq!(http(port, "DELETE", &query_path, &[("Host", &host)], "").0, 403);
    let bearer = v.bearer();
    let evil = [("Host", host.as_str()), ("Authorization", bearer.as_str()), ("Origin", "http://evil.example")];
    assert_eq!(http(port, "DELETE", &path, &evil, "").0, 403);
    assert_eq!(listed(&home, false).len(), SEED.len(), "nothing was forgotten by a refused request");

    // Forget: gone from `ovmem memory list`.
    let ok = [("Host", host.as_str()), ("Authorization", bearer.as_str()), ("Origin", &*format!("http://{host}"))];
    let (status, _, body) = http(port, "DELETE", &path, &ok, "");
    assert_eq!(status, 200, "{body}");
    assert!(listed(&home, true).iter().all(|m| m["id"] != json!(jenkins)));
    assert_eq!(v.api("DELETE", &path, "").0, 404);

    // Several at once (a search's results): one answer says which went and which were not there.
    let (keys, other_bank) = (id_of(&seeded, "direnv"), id_of(&seeded, "vitest"));
    let body = json!({ "ids": [other_bank, 99_999] }).to_string();
    let (status, gone) = v.api("POST", "/api/forget", &body);
    assert_eq!(status, 200, "{gone}");
    assert_eq!((gone["forgotten"].clone(), gone["missing"].clone()), (json!([other_bank]), json!([99_999])));
    assert!(listed(&home, true).iter().all(|m| m["id"] != json!(other_bank)));
    assert_eq!(v.api("POST", "/api/forget", "{\"ids\": []}").0, 400);
    assert_eq!(http(port, "POST", "/api/forget", &[("Host", &host), ("Cookie", &cookie)], &body).0, 401);
    assert!(listed(&home, false).iter().any(|m| m["id"] == json!(keys)), "only what was named went");

    // Pin: first in every recall of the bank, even one it does not match.
    let codename = id_of(&seeded, "BLUEHERON");
    assert_eq!(v.api("POST", &format!("/api/memories/{codename}/pin"), "").0, 200);
    let out = home.ok(&["memory", "search", "which database for idempotency", "--json", "--project", &project(&home)]);
    let hits: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(hits[0]["id"], json!(codename), "{hits:?}");
    assert_eq!(hits[1]["id"], json!(id_of(&seeded, "idempotency")), "{hits:?}");
    let (_, one) = v.api("GET", &format!("/api/memories/{codename}"), "");
    assert!(one["marks"].as_array().unwrap().contains(&json!("pinned")));

    // Edit: the new text is what `memory list` shows, redacted like any write, still pinned.
    let body = json!({"text": "The deploy codename is REDKITE-9; token ghp_abcdefghijklmnopqrstuvwxyz0123456789"});
    let (status, edited) = v.api("PUT", &format!("/api/memories/{codename}"), &body.to_string());
    assert_eq!(status, 200, "{edited}");
    let new_id = edited["memory"]["id"].as_i64().unwrap();
    let text = edited["memory"]["text"].as_str().unwrap();
    assert!(text.contains("REDKITE-9") && !text.contains("ghp_abcdef"), "{text}");
    let now_listed = listed(&home, false);
    assert!(now_listed.iter().any(|m| m["id"] == json!(new_id) && m["content"].as_str().unwrap().contains("REDKITE")));
    assert!(now_listed.iter().all(|m| !m["content"].as_str().unwrap().contains("BLUEHERON")));
    assert!(edited["memory"]["marks"].as_array().unwrap().contains(&json!("pinned")));
    // The old text is erased from the store's files, as forgotten text is.
    for file in ["memory.db", "memory.db-wal"] {
        let bytes = std::fs::read(home.path().join(".ovmem").join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes).to_lowercase();
        assert!(!text.contains("blueheron"), "{file} still holds the edited-out text");
    }
    // Editing a turn into the words of another one is refused: the bank already says it.
    let keys = seeded.iter().find(|m| m["content"].as_str().unwrap().contains("direnv")).unwrap();
    let dup = json!({ "text": keys["content"] });
    let other = id_of(&seeded, "idempotency");
    let (status, answer) = v.api("PUT", &format!("/api/memories/{other}"), &dup.to_string());
    assert_eq!(status, 409, "{answer}");
    assert_eq!(listed(&home, false).len(), SEED.len() - 1, "nothing changed");

    // A session: its turns, and what each prompt was given, in order, with characters.
    let secret_id = id_of(&seeded, "direnv");
    record(&home, &seeded, 6900, vec![new_id, jenkins, secret_id], 812);
    let (status, session) = v.api("GET", "/api/sessions/sess-alpha-1", "");
    assert_eq!(v.api("GET", "/api/sessions?id=sess-alpha-1", "").1, session, "by query too");
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["turns"].as_array().unwrap().len(), 1, "the Jenkins turn was forgotten: {session}");
    let inj = &session["injections"][0];
    assert_eq!(inj["chars"], json!(812));
    let order: Vec<(i64, bool)> = inj["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_i64().unwrap(), m["present"].as_bool().unwrap()))
        .collect();
    assert_eq!(order, vec![(new_id, true), (jenkins, false), (secret_id, true)]);
    assert_eq!(v.api("GET", "/api/sessions/no-such-session", "").0, 404);

    // The backend panel: local, nothing queued.
    let (status, backend) = v.api("GET", "/api/backend", "");
    assert_eq!(status, 200);
    assert_eq!(backend["backend"]["kind"], json!("local"));
    assert_eq!(backend["queue"]["outbox"], json!(0));

    // Live updates: each answer is one `change` event with the store's mark, which a capture made
    // by someone else moves; the browser asks again after `retry`.
    let event = || {
        let (status, head, body) = http(port, "GET", "/api/events", &[("Host", &host), ("Authorization", &bearer)], "");
        assert_eq!(status, 200, "{body}");
        assert!(head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{head}");
        assert!(body.starts_with("retry: 1000\nevent: change\n"), "{body}");
        let data = body.lines().find_map(|l| l.strip_prefix("data: ")).expect("data");
        serde_json::from_str::<Value>(data).unwrap()
    };
    let first = event();
    assert_eq!(event(), first, "nothing changed in between");
    home.ok(&["memory", "add", "Release trains leave on Thursdays.", "--project", &project(&home)]);
    let second = event();
    assert!(second["memories"].as_i64() > first["memories"].as_i64(), "{first} then {second}");
    assert!(second["last_memory"].as_i64() > first["last_memory"].as_i64());

    // Ctrl-C stops it, exit 0, and the port is free again.
    let (code, err) = v.interrupt();
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("stopped"), "{err}");
    assert!(listeners(port).is_empty());
}

/// `ovmem ui` (opening a browser) with an `xdg-open` (`open` on macOS) that records what it was
/// given: the viewer, its URL, and the path the opener was handed.
fn start_with_opener(home: &Home) -> (Child, String, PathBuf) {
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let seen = home.path().join("opened");
    let opener = bin.join(if cfg!(target_os = "macos") { "open" } else { "xdg-open" });
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}.tmp' && mv '{0}.tmp' '{0}'\n", seen.display()),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut child = home
        .cmd(&["ui", "--idle", "60s"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().to_string();
    let started = Instant::now();
    while !seen.exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "the opener never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let opened = std::fs::read_to_string(&seen).unwrap();
    (child, url, PathBuf::from(opened))
}

/// The browser opener's arguments are readable by every user of the machine: it is given a file
/// only this user can read, which posts the token to the page; the file goes when the viewer
/// stops.
#[test]
fn the_browser_is_handed_a_private_file_not_the_token() {
    let home = Home::new();
    seed(&home);
    let (mut child, url, opened) = start_with_opener(&home);
    let token = url.split_once("?token=").unwrap().1.to_string();
    let opened = opened.to_str().unwrap();
    assert!(!opened.contains(&token), "{opened}");
    let file = PathBuf::from(opened.strip_prefix("file://").unwrap());
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    let page = std::fs::read_to_string(&file).unwrap();
    let base = url.split_once('?').unwrap().0;
    assert!(page.contains(&format!("action=\"{base}\"")) && page.contains(&format!("value=\"{token}\"")), "{page}");
    assert!(!page.contains("?token="), "no address with the token: {page}");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(wait(&mut child, Duration::from_secs(5)), Some(0));
    assert!(!file.exists(), "removed when the viewer stops");
}

#[test]
fn stops_by_itself_when_idle() {
    let home = Home::new();
    let mut v = Viewer::start(&home, &["--idle", "2s"]);
    let code = wait(&mut v.child, Duration::from_secs(10));
    assert_eq!(code, Some(0), "the viewer should have stopped after 2 s without requests");
    let mut err = String::new();
    v.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("stopped after 2 s idle"), "{err}");

    // Requests the guard refuses (another Host, no token) do not keep it up.
    let mut v = Viewer::start(&home, &["--idle", "2s"]);
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(8) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", v.port)) else { break };
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 403"), "{answer}");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(started.elapsed() < Duration::from_secs(5), "still up after {:?}", started.elapsed());
    let code = wait(&mut v.child, Duration::from_secs(10));
    assert_eq!(code, Some(0), "refused requests kept the viewer up");
}

#[test]
fn the_backend_panel_tells_an_unreachable_server_and_what_waits() {
    let home = Home::new();
    let dead = free_port();
    home.put(
        ".ovmem/config.toml",
        format!("[backend]\nkind = \"hindsight\"\nurl = \"http://127.0.0.1:{dead}\"\n").as_bytes(),
    );
    let dir = project(&home);
    for (event, extra) in [
        ("UserPromptSubmit", json!({"prompt": "How do we roll back a bad deploy of the billing service?"})),
        ("Stop", json!({"last_assistant_message": "Run the rollback job in Jenkins with the previous image tag."})),
    ] {
        let mut payload = json!({"session_id": "s-team", "cwd": dir, "hook_event_name": event});
        payload.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let args = ["hook", "claude-code", event];
        let ran = common::run_in(home.path(), Path::new(&dir), &args, payload.to_string().as_bytes(), &[]);
        assert_eq!(ran.code, 0);
    }
    let v = Viewer::start(&home, &[]);
    let (status, b) = v.api("GET", "/api/backend", "");
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["backend"]["kind"], json!("hindsight"));
    assert_eq!(b["backend"]["url"], json!(format!("http://127.0.0.1:{dead}")));
    assert_eq!(b["backend"]["reachable"], json!(false), "{b}");
    assert_eq!(b["queue"]["outbox"], json!(1), "the captured turn waits for the server: {b}");
    let failing = b["failing"].as_array().unwrap();
    assert_eq!(failing.len(), 1, "the hook tried to send it and failed: {b}");
    assert!(failing[0]["last_error"].as_str().is_some_and(|e| !e.is_empty()), "{b}");
}

#[test]
fn a_taken_port_is_an_error_that_says_what_to_do() {
    let home = Home::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = home.run(&["ui", "--no-open", "--port", &port]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert!(err.contains(&format!("could not listen on 127.0.0.1:{port}")) && err.contains("--port"), "{err}");
}

#[test]
fn a_pin_from_the_viewer_is_injected_first_by_the_hook() {
    let home = Home::new();
    let seeded = seed(&home);
    let dir = project(&home);
    let ask = |session: &str| {
        let payload = json!({"session_id": session, "cwd": dir, "hook_event_name": "UserPromptSubmit",
                             "prompt": "Which database does the idempotency store use now?"});
        let args = ["hook", "claude-code", "UserPromptSubmit"];
        let ran = common::run_in(home.path(), Path::new(&dir), &args, payload.to_string().as_bytes(), &[]);
        assert_eq!(ran.code, 0);
        ran.out
    };
    let before = ask("s-before");
    assert!(before.contains("Postgres") && !before.contains("BLUEHERON"), "{before}");
    let v = Viewer::start(&home, &[]);
    let codename = id_of(&seeded, "BLUEHERON");
    assert_eq!(v.api("POST", &format!("/api/memories/{codename}/pin"), "").0, 200);
    let after = ask("s-after");
    let (pin, answer) = (after.find("BLUEHERON"), after.find("Postgres"));
    assert!(pin.is_some() && answer.is_some() && pin < answer, "the pin first, then the match: {after}");
    // Unpinned, it is no longer injected where it does not match.
    let (status, _, _) = http(
        v.port,
        "DELETE",
        &format!("/api/memories/{codename}/pin"),
        &[("Host", &v.host()), ("Authorization", &v.bearer())],
        "",
    );
    assert_eq!(status, 200);
    assert!(!ask("s-unpinned").contains("BLUEHERON"));
}

// ---------------------------------------------------------------------------------------------
// In a real browser.

fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> =
        std::env::split_paths(&path).chain(["/usr/bin".into(), "/usr/lib/chromium".into()]).collect();
    names.iter().flat_map(|n| dirs.iter().map(move |d| d.join(n))).find(|p| p.is_file())
}

/// Chromium and chromedriver, or a skip (locally) / a failure (CI) saying what is missing.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = which(&["chromium", "chromium-browser", "google-chrome"]);
    let driver = which(&["chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            let why = "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)";
            if required() {
                panic!("browser test prerequisite missing under CI: {why}");
            }
            let _ = writeln!(std::io::stderr(), "SKIPPED (not a pass): {why}");
            None
        }
    }
}

/// A chromedriver process and one headless session in it, ended when dropped.
struct Driver {
    child: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Driver {
    fn start(chromium: &Path, driver: &Path) -> Driver {
        let port = free_port();
        // A process group of its own: the browser it starts goes with it, whatever happens.
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut d = Driver { child, port, session: String::new(), _profile: profile };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(start.elapsed() < Duration::from_secs(20), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:loggingPrefs": {"browser": "ALL"}, "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,860", "--force-device-scale-factor=1", "--lang=en-US",
                     format!("--user-data-dir={}", d._profile.path().display())]
        }}}});
        let v = d.call("POST", "/session", Some(caps));
        d.session = v["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {v}")).to_string();
        d
    }

    /// One WebDriver command; its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.try_call(method, path, body);
        assert!(status == 200, "WebDriver {method} {path}: {status} {v}");
        v
    }

    /// One WebDriver command: its status and `value`.
    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body =
            body.map(|b| b.to_string()).unwrap_or_else(|| if method == "POST" { "{}".into() } else { String::new() });
        let host = format!("127.0.0.1:{}", self.port);
        let (status, _, text) = http(self.port, method, path, &[("Host", &host)], &body);
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("WebDriver {method} {path}: {status} {text}"));
        (status, v["value"].clone())
    }

    fn cmd(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{what}", self.session), body)
    }

    /// Opens `url` and waits until the page's script has taken over the list.
    fn go(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
        self.until("the script", "return document.documentElement.dataset.ready === 'true'");
    }

    fn js(&self, script: &str) -> Value {
        self.cmd("POST", "/execute/sync", Some(json!({ "script": script, "args": [] })))
    }

    fn element(&self, css: &str) -> String {
        let v = self.cmd("POST", "/element", Some(json!({ "using": "css selector", "value": css })));
        v[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}: {v}")).to_string()
    }

    /// Clicks the element; found again when the page re-rendered it in between.
    fn click(&self, css: &str) {
        for _ in 0..5 {
            let e = self.element(css);
            let (status, v) = self.try_call("POST", &format!("/session/{}/element/{e}/click", self.session), None);
            if status == 200 {
                return;
            }
            assert_eq!(v["error"], json!("stale element reference"), "click {css}: {status} {v}");
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("{css} was re-rendered five times while it was clicked");
    }

    fn type_into(&self, css: &str, text: &str) {
        let e = self.element(css);
        self.cmd("POST", &format!("/element/{e}/value"), Some(json!({ "text": text })));
    }

    /// Waits (30 s at most) until `script` returns true; panics with the page's text otherwise.
    fn until(&self, what: &str, script: &str) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if self.js(script) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let state = self.js("return [location.href, document.readyState, document.documentElement.outerHTML.length]");
        panic!("waited 30 s for {what}; the page ({state}) says:\n{}", self.text());
    }

    fn text(&self) -> String {
        self.js("return document.body.innerText").as_str().unwrap_or_default().to_string()
    }

    /// Key presses sent to whatever has the focus.
    fn keys(&self, keys: &[&str]) {
        let mut actions = Vec::new();
        for k in keys {
            actions.push(json!({"type": "keyDown", "value": k}));
            actions.push(json!({"type": "keyUp", "value": k}));
        }
        self.cmd("POST", "/actions", Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})));
        std::thread::sleep(Duration::from_millis(150));
    }

    /// A DevTools protocol command, through chromedriver.
    fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.cmd("POST", "/goog/cdp/execute", Some(json!({ "cmd": cmd, "params": params })))
    }

    fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let v = self.cmd("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            // Best effort (never a panic while unwinding): chromedriver quits the browser.
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let req = format!(
                    "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\n\r\n",
                    self.session, self.port
                );
                if s.write_all(req.as_bytes()).is_ok() {
                    let _ = s.read(&mut [0u8; 512]);
                }
            }
        }
        kill_group(&mut self.child);
    }
}

/// Ends a child started with `process_group(0)` and everything it started.
fn kill_group(child: &mut Child) {
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
}

/// `chromium --headless --dump-dom URL` with `extra` flags: the DOM it printed.
fn dump_dom(chromium: &Path, url: &str, extra: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .args(["--dump-dom", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let code = wait(&mut child, Duration::from_secs(60));
    // Its helper processes too, finished or not.
    kill_group(&mut child);
    assert!(code.is_some(), "chromium {extra:?} --dump-dom did not finish within 60 s");
    reader.join().unwrap()
}

#[test]
fn headless_dump_dom_shows_the_memories() {
    let Some((chromium, _)) = browser() else { return };
    let home = Home::new();
    seed(&home);
    let v = Viewer::start(&home, &[]);
    // As the server sends it, and as loaded with its script run (within 3 s of real time). What
    // the script then does (live updates, search) is `in_a_real_browser`'s. Not
    // `--virtual-time-budget`: now and then Chromium's virtual time never runs out and the browser
    // hangs with the page loaded (once in CI, 2026-12-05).
    for extra in [&[][..], &["--timeout=3000"][..]] {
        let dom = dump_dom(&chromium, &v.url, extra);
        for needle in ["Deploys go through Jenkins", "BLUEHERON-7", "Postgres with a 72 h retention", "vitest"] {
            assert!(dom.contains(needle), "{extra:?}: the page lacks {needle:?}:\n{dom}");
        }
    }
    let (_, _, page) = http(v.port, "GET", "/", &[("Host", &v.host())], "");
    assert!(!page.contains("Jenkins") && !page.contains(&v.token), "the page's data needs the token: {page}");
}

fn cards(d: &Driver) -> Vec<i64> {
    let v = d.js("return [...document.querySelectorAll('#list .card')].map(c => Number(c.dataset.id))");
    v.as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect()
}

#[test]
fn in_a_real_browser() {
    let Some((chromium, driver)) = browser() else { return };
    let home = Home::new();
    let seeded = seed(&home);
    let jenkins = id_of(&seeded, "Jenkins");
    let codename = id_of(&seeded, "BLUEHERON");
    let db = home.path().join(".ovmem/memory.db");
    ovmem::store::Store::open(&db, Duration::from_secs(5)).unwrap().pin(codename, true).unwrap();
    record(&home, &seeded, 7100, vec![codename, id_of(&seeded, "idempotency")], 431);
    let v = Viewer::start(&home, &["--project", &project(&home)]);
    let d = Driver::start(&chromium, &driver);

    // The list shows every seeded memory, and the token left the address bar.
    d.go(&v.url);
    d.until(
        "the seeded memories",
        &format!("return document.querySelectorAll('#list .card').length === {}", seeded.len()),
    );
    let text = d.text();
    for needle in
        ["Deploys go through Jenkins", "BLUEHERON-7", "Postgres with a 72 h retention", "vitest", "pinned", "redacted"]
    {
        assert!(text.contains(needle), "the page lacks {needle:?}:\n{text}");
    }
    assert_eq!(d.js("return location.search"), json!(""));
    let expected: Vec<i64> = seeded.iter().map(|m| m["id"].as_i64().unwrap()).collect();
    assert_eq!(cards(&d), expected, "newest first");

    // A capture made while the page is open appears by itself (server-sent events).
    d.until("the live stream", "return document.getElementById('live').classList.contains('on')");
    home.ok(&["memory", "add", "Release trains leave on Thursdays at 10:00 UTC.", "--project", &project(&home)]);
    d.until("the live capture", "return document.body.innerText.includes('Release trains leave on Thursdays')");
    if std::env::var("OVMEM_UI_SCREENSHOT").is_ok_and(|v| v == "1") {
        let png = d.screenshot();
        assert!(png.starts_with(b"\x89PNG"));
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("ui.png"), png).unwrap();
    }

    // Search narrows the list to what matches.
    d.type_into("#q", "jenkins pipeline\u{E007}");
    d.until("the search", "return document.getElementById('bar').innerText.includes('result')");
    d.until("one result", "return document.querySelectorAll('#list .card').length === 1");
    assert_eq!(cards(&d), vec![jenkins]);
    assert!(d.text().contains("for “jenkins pipeline”"));

    // Forget from the page: a confirmation names it, then it is gone from the store.
    d.click(&format!("#list .card[data-id=\"{jenkins}\"] button.danger"));
    d.until("the confirmation", "return document.getElementById('confirm').open");
    let listed_in_dialog = d.js("return document.getElementById('confirm-list').innerText");
    assert!(listed_in_dialog.as_str().unwrap().contains("Jenkins"), "{listed_in_dialog}");
    d.click("#confirm-ok");
    d.until("the card to go", "return document.querySelectorAll('#list .card').length === 0");
    assert!(listed(&home, true).iter().all(|m| m["id"] != json!(jenkins)), "forgotten in the store");

    // The session view: what each prompt was given, in order, with its size.
    d.go(&format!("http://127.0.0.1:{}/", v.port));
    d.until("the list again (by the token the tab kept)", "return document.querySelectorAll('#list .card').length > 0");
    d.click("#list .card button.link[title='Open session sess-alpha-1']");
    d.until("the session", "return !document.getElementById('session').hidden");
    if std::env::var("OVMEM_UI_SCREENSHOT").is_ok_and(|v| v == "1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        std::fs::write(docs.join("ui-session.png"), d.screenshot()).unwrap();
    }
    let text = d.js("return document.getElementById('session').innerText").as_str().unwrap().to_string();
    assert!(text.contains("Session sess-alpha-1"), "{text}");
    assert!(text.contains("431 characters"), "{text}");
    let at_codename = text.find("BLUEHERON").expect("the pinned memory was injected");
    let at_db = text.find("Postgres").expect("the database memory was injected");
    assert!(at_codename < at_db, "in injected order:\n{text}");

    // The keyboard: Esc goes back, j moves to a memory, p pins it, e edits it, / searches.
    d.keys(&["\u{E00C}"]);
    d.until("the list", "return document.getElementById('session').hidden");
    d.js("document.activeElement.blur()");
    d.keys(&["j"]);
    let focused = d.js("return Number(document.activeElement.dataset.id)").as_i64().unwrap();
    assert_eq!(focused, cards(&d)[0], "j focuses the first memory");
    d.keys(&["p"]);
    d.until("the pin", &format!("return !!document.querySelector('.card.pinned[data-id=\"{focused}\"]')"));
    assert!(store_pins(&db).contains(&focused), "pinned in the store");
    d.keys(&["e"]);
    d.until("the editor", "return document.getElementById('editor').open");
    d.js("document.getElementById('editor-text').value = 'Release trains leave on Fridays at 09:00 UTC.'");
    d.click("#editor-ok");
    d.until("the edit", "return document.body.innerText.includes('Fridays at 09:00')");
    let now_listed = listed(&home, false);
    assert!(now_listed.iter().any(|m| m["content"] == json!("Release trains leave on Fridays at 09:00 UTC.")));
    assert!(now_listed.iter().all(|m| !m["content"].as_str().unwrap().contains("Thursdays")));
    d.keys(&["/"]);
    assert_eq!(d.js("return document.activeElement.id"), json!("q"));

    // Long lists page as they scroll.
    let mut filler = String::new();
    for i in 0..70 {
        let m = json!({"bank": "project:/elsewhere/archive", "kind": "fact", "harness": "cli",
                       "prompt": format!("Archived note number {i} about the old build farm."), "created_at": now() - 86_400 * 30 - i});
        filler.push_str(&format!("{m}\n"));
    }
    let file = home.put("filler.jsonl", filler.as_bytes());
    home.ok(&["memory", "import", file.to_str().unwrap()]);
    let total = listed(&home, true).len();
    d.go(&format!("http://127.0.0.1:{}/", v.port));
    d.until("the first page", "return document.querySelectorAll('#list .card').length === 50");
    d.until(
        "every page",
        &format!(
            "window.scrollTo(0, document.body.scrollHeight); return document.querySelectorAll('#list .card').length === {total}"
        ),
    );

    // Light and dark, as the system prefers.
    let background = || d.js("return getComputedStyle(document.body).backgroundColor").as_str().unwrap().to_string();
    let light = background();
    d.cdp("Emulation.setEmulatedMedia", json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}));
    let dark = background();
    assert_ne!(light, dark, "dark mode has its own colours");
    assert_eq!(dark, "rgb(21, 23, 27)");

    // No script error and no refused load (a Content-Security-Policy violation) on the way.
    let log = d.cmd("POST", "/se/log", Some(json!({"type": "browser"})));
    let severe: Vec<&Value> = log.as_array().unwrap().iter().filter(|e| e["level"] == json!("SEVERE")).collect();
    assert!(severe.is_empty(), "the browser console: {severe:?}");
}

/// Opened as `ovmem ui` opens it (its file), then reloaded: the browser's history, read from the
/// profile once the browser has quit, names the viewer and never its token (an address with the
/// token, even one replaced at once, stays in the history for anyone who reads the profile).
#[test]
fn the_browser_s_history_never_holds_the_token() {
    let Some((chromium, driver)) = browser() else { return };
    let home = Home::new();
    let seeded = seed(&home);
    let (mut child, url, opened) = start_with_opener(&home);
    let token = url.split_once("?token=").unwrap().1.to_string();
    let mut d = Driver::start(&chromium, &driver);
    d.go(opened.to_str().unwrap());
    let all = format!("return document.querySelectorAll('#list .card').length === {}", seeded.len());
    d.until("the memories", &all);
    for round in 0..2 {
        d.cmd("POST", "/refresh", None);
        d.until(&format!("the memories after reload {round}"), &all);
        assert_eq!(d.js("return location.href"), json!(url.split_once('?').unwrap().0));
    }
    // Quit the browser (it writes its history as it goes), then read the history database.
    d.call("DELETE", &format!("/session/{}", d.session), None);
    d.session.clear();
    let history = d._profile.path().join("Default/History");
    let base = url.split_once('?').unwrap().0.to_string();
    let started = Instant::now();
    let urls = loop {
        let read = rusqlite::Connection::open_with_flags(&history, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| {
                let mut q = c.prepare("SELECT url FROM urls")?;
                let urls = q.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<Vec<String>, _>>();
                urls
            });
        match read {
            Ok(urls) if urls.iter().any(|u| u.starts_with(&base)) => break urls,
            other => {
                let waited = started.elapsed();
                assert!(waited < Duration::from_secs(20), "no history of the viewer after {waited:?}: {other:?}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    assert!(urls.iter().all(|u| !u.contains(&token)), "the token is in the browser's history: {urls:?}");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(wait(&mut child, Duration::from_secs(5)), Some(0));
}

fn store_pins(db: &Path) -> std::collections::HashSet<i64> {
    ovmem::store::Store::open(db, Duration::from_secs(5)).unwrap().pinned_ids().unwrap()
}

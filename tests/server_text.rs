//! A memory server is untrusted: what it answers reaches prompts, MCP clients and the terminal.
//! A hostile loopback server answers with terminal escapes (screen clear, OSC 52 clipboard
//! writes, C1 controls, bidi overrides), with secrets in its memories, and (as a proxy that
//! echoes headers does) with the request's own `Authorization` value in its 401 bodies. The built
//! binary's `status`, `backend test`, `doctor`, `sync`, MCP `memory_search` and prompt hook must
//! show none of it.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

use ovmem::backend::{configure, Choice, Secret};
use serde_json::{json, Value};

use common::OVMEM;

const TOKEN: &str = "plain-words-token-4242";
/// ESC ] 52 (clipboard write), clear screen, cursor home, C1 CSI, a bidi override, as JSON.
const HOSTILE: &str = r"\u001b]52;c;ZWNobyBvd25lZA==\u0007\u001b[2J\u001b[H\u009b31m\u202eFAKE";
const SECRET_IN_MEMORY: &str = "Zx8Qv2Lm9Tr4Wp7Kd3Hs";

/// A server on 127.0.0.1 that answers every request with `answer(request head, path)`.
fn serve(answer: fn(&str, &str) -> (u16, String)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut byte = [0u8; 1];
                while !buf.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
                    buf.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; len];
                let _ = s.read_exact(&mut body);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, body) = answer(&head, &path);
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    url
}

/// Healthy, but every string it sends is hostile, and its memories hold secrets.
fn hostile(_head: &str, path: &str) -> (u16, String) {
    let body = if path.starts_with("/health") {
        format!(r#"{{"status": "healthy{HOSTILE}", "database": "connected{HOSTILE}"}}"#)
    } else if path.starts_with("/version") {
        format!(r#"{{"api_version": "9.9{HOSTILE}"}}"#)
    } else if path.contains("/memories/recall") {
        format!(
            r#"{{"results": [{{"id": "m1", "type": "world", "text": "The deploy job for the release uses DB_PASSWORD={SECRET_IN_MEMORY} and {HOSTILE} the release train."}}]}}"#
        )
    } else {
        "{}".to_string()
    };
    (200, body)
}

/// A proxy that refuses everything and echoes the request's credentials back.
fn echoing(head: &str, _path: &str) -> (u16, String) {
    let auth = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.trim()))
        .unwrap_or("");
    let bare = auth.split_whitespace().last().unwrap_or("");
    let detail = format!("rejected {bare} here; you sent authorization: {auth}{HOSTILE}");
    (401, json!({ "detail": detail }).to_string().replace("\\\\u", "\\u"))
}

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn with_server(url: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("app/.git")).unwrap();
        let env = ovmem::env::Env::from_vars([("HOME".to_string(), dir.path().to_string_lossy().into_owned())].into())
            .unwrap();
        configure(
            &env,
            &Choice::Hindsight { url: url.to_string(), token: Some(Secret::new(TOKEN)), bank: Some("team".into()) },
        )
        .unwrap();
        Self { dir }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(OVMEM);
        c.args(args)
            .env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(self.dir.path().join("app"))
            .stdin(Stdio::null());
        c
    }

    /// stdout and stderr of `ovmem ARGS`, both checked for anything the server should not reach.
    fn run(&self, args: &[&str]) -> (Option<i32>, String) {
        let out = self.cmd(args).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_clean(&format!("ovmem {}", args.join(" ")), &text);
        (out.status.code(), text)
    }

    /// The MCP server asked `calls` (tools/call name, arguments), after `initialize`.
    fn mcp(&self, calls: &[(&str, Value)]) -> Vec<String> {
        let mut child = self.cmd(&["mcp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut call = |id: u64, method: &str, params: Value| -> String {
            writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
            lines.next().unwrap().unwrap()
        };
        call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        let out = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| call(i as u64 + 2, "tools/call", json!({"name": name, "arguments": args})))
            .collect();
        drop(stdin);
        let _ = child.wait();
        out
    }
}

/// Neither the token, nor a control sequence (raw or as a JSON escape), nor a bidi override.
fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(TOKEN), "the token reached `{what}`:\n{text}");
    for bad in ["\x1b", "\u{9b}", "\u{202e}", "\u{7}", "\\u001b", "\\u001B", "\\u009b", "\\u0007", "\\u202e", "]52;"] {
        assert!(!text.contains(bad), "{bad:?} reached `{what}`:\n{text}");
    }
}

#[test]
fn a_hostile_servers_strings_never_reach_the_terminal() {
    let home = Home::with_server(&serve(hostile));
    let (code, text) = home.run(&["status", "--json"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("healthy") && text.contains("FAKE"), "the health line should be shown, cleaned: {text}");
    let (code, text) = home.run(&["status"]);
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = home.run(&["backend", "test"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Hindsight 9.9") && text.contains("1 memories"), "{text}");
    home.run(&["backend", "test", "--json"]);
    home.run(&["doctor", "--json"]);
    home.run(&["doctor"]);
}

#[test]
fn server_memories_are_scrubbed_before_injection_and_over_mcp() {
    let home = Home::with_server(&serve(hostile));
    let found = home.mcp(&[("memory_search", json!({"query": "deploy job release"}))]);
    let text = &found[0];
    assert_clean("memory_search", text);
    assert!(text.contains("release train"), "the server's memory should be returned: {text}");
    assert!(!text.contains(SECRET_IN_MEMORY), "the server's secret reached memory_search: {text}");

    let stdin = json!({"session_id": "s", "cwd": home.dir.path().join("app"), "hook_event_name": "UserPromptSubmit", "prompt": "how does the deploy job for the release work"});
    let mut child = home
        .cmd(&["hook", "claude-code", "UserPromptSubmit"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert_clean("the prompt hook", &text);
    assert!(text.contains("release train"), "the server's memory should be injected: {text}");
    assert!(!text.contains(SECRET_IN_MEMORY), "the server's secret was injected: {text}");
}

#[test]
fn a_server_that_echoes_the_authorization_header_never_shows_the_token() {
    let home = Home::with_server(&serve(echoing));
    let (code, text) = home.run(&["status", "--json"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("401") && text.contains("rejected"), "the refusal should be reported: {text}");
    let (code, text) = home.run(&["backend", "test"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("the token was refused"), "{text}");
    home.run(&["backend", "test", "--json"]);
    home.run(&["doctor", "--json"]);
    // A memory queued for the server (MCP memory_add sends at once, and fails), then sync.
    let added = home.mcp(&[("memory_add", json!({"text": "the release train leaves on Tuesdays"}))]);
    assert_clean("memory_add", &added[0]);
    let (code, text) = home.run(&["sync", "--json"]);
    assert_eq!(code, Some(1), "the memory should still be waiting: {text}");
    assert!(text.contains("rejected"), "sync should say why: {text}");
    home.run(&["memory", "stats"]);
    // The stored send error holds no token either.
    let db = std::fs::read(home.dir.path().join(".ovmem/memory.db")).unwrap_or_default();
    let wal = std::fs::read(home.dir.path().join(".ovmem/memory.db-wal")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&[db, wal].concat()).contains(TOKEN), "the token is in memory.db");
}

#[test]
fn a_url_with_a_password_is_refused_and_plain_http_tokens_are_warned_about() {
    let home = common::Home::new();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let out = home.cmd(args).envs(env.iter().copied()).output().unwrap();
        (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    };
    let (code, text) = run(
        &[
            "install",
            "--harness",
            "claude-code",
            "--backend",
            "hindsight",
            "--api-url",
            "http://bob:s3cret-pw@127.0.0.1:8888",
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(!text.contains("s3cret-pw"), "the password was printed: {text}");
    assert!(text.contains("http://127.0.0.1:8888") && text.contains("--api-token -"), "{text}");
    let config = std::fs::read_to_string(home.path().join(".ovmem/config.toml")).unwrap_or_default();
    assert!(!config.contains("s3cret-pw"), "{config}");

    let args = ["install", "--harness", "claude-code", "--backend", "hindsight", "--dry-run", "--api-url"];
    let (_, text) = run(&[&args[..], &["http://10.20.30.40:8888"]].concat(), &[("HINDSIGHT_API_TOKEN", TOKEN)]);
    assert!(text.contains("plain http") && text.contains("10.20.30.40"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
    for quiet in ["http://127.0.0.1:8888", "https://mem.example.com", "http://localhost:8888"] {
        let (_, text) = run(&[&args[..], &[quiet]].concat(), &[("HINDSIGHT_API_TOKEN", TOKEN)]);
        assert!(!text.contains("plain http"), "{quiet}: {text}");
    }
    let (_, text) = run(&[&args[..], &["http://10.20.30.40:8888"]].concat(), &[]);
    assert!(!text.contains("plain http"), "no token, nothing to warn about: {text}");
}

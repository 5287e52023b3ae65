//! `ovmem mcp` (the memory tools over stdio MCP) and its registration by `ovmem install`.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");

#[test]
fn the_memory_tools_speak_mcp_over_stdio() {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let mut child = Command::new(OVMEM)
        .arg("mcp")
        .env_clear()
        .env("HOME", home.path())
        .env("CLAUDE_PROJECT_DIR", &proj)
        .current_dir(home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut call = |msg: Value| -> Option<Value> {
        writeln!(stdin, "{msg}").unwrap();
        msg.get("id")?;
        Some(serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap())
    };
    let init = call(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(init["result"]["serverInfo"]["name"], "ovmem");
    assert!(call(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_none());
    let tools = call(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).unwrap();
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["memory_search", "memory_add", "memory_recent"]);
    let add = call(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_add", "arguments": {"text": "Release branches are cut every Tuesday."}}})).unwrap();
    assert!(add["result"]["content"][0]["text"].as_str().unwrap().starts_with("Remembered"), "{add}");
    let found = call(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "memory_search", "arguments": {"query": "when are release branches cut"}}})).unwrap();
    let text = found["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("<ovmem-memory>") && text.contains("Tuesday"), "{text}");
    let bad = call(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "memory_add", "arguments": {}}}),
    )
    .unwrap();
    assert_eq!(bad["result"]["isError"], true);
    let unknown = call(json!({"jsonrpc": "2.0", "id": 6, "method": "no/such"})).unwrap();
    assert_eq!(unknown["error"]["code"], -32601);
    let garbage = {
        writeln!(stdin, "not json").unwrap();
        serde_json::from_str::<Value>(&lines.next().unwrap().unwrap()).unwrap()
    };
    assert_eq!(garbage["error"]["code"], -32700);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // The fact is in the project's bank, so hooks in any harness recall it too.
    let out = Command::new(OVMEM)
        .args(["memory", "search", "release branches", "--project"])
        .arg(&proj)
        .env_clear()
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Tuesday"));
}

fn run(home: &Path, args: &[&str]) -> std::process::Output {
    let out =
        Command::new(OVMEM).args(args).env_clear().env("HOME", home).env("PATH", "/usr/bin:/bin").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn install_registers_the_server_beside_the_users_own_and_uninstall_takes_it_out() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let original = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp/claude.json")).unwrap();
    std::fs::write(h.join(".claude.json"), &original).unwrap();
    run(h, &["install", "--harness", "claude-code,cursor,cline"]);
    let claude: Value = serde_json::from_slice(&std::fs::read(h.join(".claude.json")).unwrap()).unwrap();
    assert_eq!(claude["mcpServers"]["github"]["command"], "gh-mcp");
    assert_eq!(claude["mcpServers"]["ovmem"]["args"], json!(["mcp"]));
    assert_eq!(claude["mcpServers"]["ovmem"]["command"], h.join(".ovmem/bin/ovmem").to_str().unwrap());
    for rel in [".cursor/mcp.json", ".cline/data/settings/cline_mcp_settings.json"] {
        let v: Value = serde_json::from_slice(&std::fs::read(h.join(rel)).unwrap()).unwrap();
        assert_eq!(v["mcpServers"]["ovmem"]["args"], json!(["mcp"]), "{rel}");
    }
    run(h, &["uninstall", "--yes"]);
    assert_eq!(std::fs::read(h.join(".claude.json")).unwrap(), original);
    assert!(!h.join(".cursor").exists() && !h.join(".cline").exists());
}

#[test]
fn a_users_own_server_named_ovmem_is_left_alone() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".cursor")).unwrap();
    let mine = "{\"mcpServers\": {\"ovmem\": {\"url\": \"https://example.invalid/my-ovmem\"}}}\n";
    std::fs::write(h.join(".cursor/mcp.json"), mine).unwrap();
    let out = run(h, &["install", "--harness", "cursor"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not ovmem's is already there"));
    assert_eq!(std::fs::read_to_string(h.join(".cursor/mcp.json")).unwrap(), mine);
    run(h, &["uninstall", "--yes"]);
    assert_eq!(std::fs::read_to_string(h.join(".cursor/mcp.json")).unwrap(), mine);
}

#[test]
fn malformed_requests_get_json_rpc_errors_and_the_server_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let mut child = Command::new(OVMEM)
        .arg("mcp")
        .env_clear()
        .env("HOME", home.path())
        .env("CLAUDE_PROJECT_DIR", &proj)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |bytes: &[u8]| -> Value {
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        // A ping after every line: its answer proves the server is still there, and any reply
        // to the line itself comes first.
        stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n").unwrap();
        stdin.flush().unwrap();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if first["id"] == "p" {
            return Value::Null;
        }
        let pong: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(pong["id"], "p", "{pong}");
        first
    };
    let code = |v: &Value| v["error"]["code"].as_i64();
    let r = send(&[0xff, 0xfe, b'{', 0x80, b'}']);
    assert_eq!((code(&r), &r["id"]), (Some(-32700), &Value::Null), "{r}");
    let r = send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"memory_add\",\"arguments\":{\"text\":\"caf\xc3");
    assert_eq!(code(&r), Some(-32700), "{r}");
    let r = send(b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": ");
    assert_eq!((code(&r), &r["id"]), (Some(-32700), &Value::Null));
    let r = send(b"42");
    assert_eq!((code(&r), &r["id"]), (Some(-32600), &Value::Null));
    let r = send(b"\"ping\"");
    assert_eq!(code(&r), Some(-32600));
    let r = send(b"[]");
    assert_eq!(code(&r), Some(-32600));
    let r = send(br#"{"jsonrpc":"2.0","id":3}"#);
    assert_eq!((code(&r), &r["id"]), (Some(-32600), &json!(3)));
    let r = send(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#);
    assert_eq!((code(&r), &r["id"]), (Some(-32600), &Value::Null));
    let r = send(br#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#);
    assert_eq!(code(&r), Some(-32600));
    let r = send(br#"{"jsonrpc":"2.0","id":5,"method":7}"#);
    assert_eq!(code(&r), Some(-32600));
    let r = send(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":"x"}"#);
    assert_eq!(code(&r), Some(-32602));
    // Notifications, known or not, and a client's responses get no reply at all.
    assert_eq!(send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Value::Null);
    assert_eq!(send(br#"{"jsonrpc":"2.0","method":"no/such/notification","params":{}}"#), Value::Null);
    assert_eq!(send(br#"{"jsonrpc":"2.0","id":99,"result":{}}"#), Value::Null);
    // A batch: one reply per request, none for its notification.
    let r = send(br#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"x"},5]"#);
    assert_eq!(r.as_array().map(Vec::len), Some(2), "{r}");
    assert_eq!((r[0]["id"].clone(), code(&r[1])), (json!(7), Some(-32600)));
    // A line past 16 MiB is drained and answered, not buffered without bound.
    let mut huge = b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\",\"pad\":\"".to_vec();
    huge.resize(17 << 20, b'x');
    let r = send(&huge);
    assert_eq!((code(&r), &r["id"]), (Some(-32600), &Value::Null), "{r}");
    // CRLF line endings and a BOM are fine, and the tools still work after all that.
    let token = ["gh", "p_", "R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi"].concat();
    let add = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "memory_add",
        "arguments": {"text": format!("The API token is {token} and builds run nightly.")}}});
    let r = send(format!("\u{feff}{add}\r").as_bytes());
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().starts_with("Remembered"), "{r}");
    let r = send(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"memory_recent","arguments":{}}}"#);
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("builds run nightly") && text.contains("[REDACTED:github-token]") && !text.contains(&token),
        "{text}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn the_server_uses_the_same_bank_as_hooks_for_any_spelling_of_the_project() {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join("src")).unwrap();
    let link = home.path().join("app-link");
    std::os::unix::fs::symlink(&proj, &link).unwrap();
    let mut child = Command::new(OVMEM)
        .arg("mcp")
        .env_clear()
        .env("HOME", home.path())
        .env("CLAUDE_PROJECT_DIR", format!("{}/src/../", link.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let add = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_add", "arguments": {"text": "The linter runs in CI only."}}});
    writeln!(stdin, "{add}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Remembered"));
    let list = run(home.path(), &["memory", "list", "--all", "--json"]);
    let mems: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(mems[0]["bank"], format!("project:{}", std::fs::canonicalize(&proj).unwrap().display()));
}

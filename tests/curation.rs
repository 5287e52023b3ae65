//! Curating memory by hand: `memory forget --query` removes exactly the memories whose own text
//! holds the words (never a follow-up that matches only through its session's topic) and finds
//! what `memory list` shows; `memory import` and MCP `memory_add` keep the hooks' size limit and
//! refuse dates that cannot be right, saying which lines and why.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use common::{run_in, stderr, Home};
use serde_json::{json, Value};

fn list(home: &Home) -> Vec<Value> {
    serde_json::from_slice(&home.ok(&["memory", "list", "--all", "--json"]).stdout).unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(o))
}

#[test]
fn forget_by_query_takes_only_what_names_the_words_and_shows_it_first() {
    let home = Home::new();
    let proj = home.path().join("shop");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let turn = |prompt: &str, reply: &str| {
        let ups = json!({"session_id": "s1", "cwd": proj, "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        assert_eq!(
            run_in(home.path(), &proj, &["hook", "claude-code", "UserPromptSubmit"], ups.to_string().as_bytes(), &[])
                .code,
            0
        );
        let stop = json!({"session_id": "s1", "cwd": proj, "hook_event_name": "Stop", "last_assistant_message": reply});
        assert_eq!(
            run_in(home.path(), &proj, &["hook", "claude-code", "Stop"], stop.to_string().as_bytes(), &[]).code,
            0
        );
    };
    turn("The flaky integration test in payments-api times out on CI", "It waits on a mock clock.");
    turn("rerun?", "Rerun passed.");
    let all = list(&home);
    assert_eq!(all.len(), 2);
    let follow_up = all.iter().find(|m| m["prompt"] == "rerun?").unwrap();
    assert!(
        follow_up["topic"].as_str().unwrap().contains("payments-api"),
        "the follow-up carries its topic: {follow_up}"
    );
    let p = proj.to_str().unwrap();

    // Without --yes (and no terminal): what would go is shown, nothing goes.
    let out = home.run(&["memory", "forget", "--project", p, "--query", "payments-api flaky"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("payments-api times out") && shown.contains("--yes"), "{shown}");
    assert!(!shown.contains("rerun?"), "the follow-up holds none of the words: {shown}");
    assert_eq!(list(&home).len(), 2);
    // With --yes: exactly that one.
    let out = home.ok(&["memory", "forget", "--project", p, "--query", "payments-api flaky", "--yes"]);
    assert!(text(&out).contains("forgot memory #"), "{}", text(&out));
    let left = list(&home);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["prompt"], "rerun?");

    // A secret in a DSN is stored redacted; what `memory list` shows, or the DSN as the user
    // knows it, finds the memory.
    home.ok(&[
        "memory",
        "add",
        "--bank",
        "ops",
        "the staging db is postgres://app:Sup3rS3cretPw@db.internal:5432/shop",
    ]);
    let listed = String::from_utf8_lossy(&home.ok(&["memory", "list", "--bank", "ops"]).stdout).into_owned();
    let start = listed.find("app:[REDACTED").expect(&listed);
    let copied = listed[start..].split_whitespace().next().unwrap().to_string();
    assert!(!copied.contains("Sup3rS3cretPw"), "{copied}");
    for q in [copied.as_str(), "postgres://app:Sup3rS3cretPw@db.internal:5432/shop"] {
        let out = home.run(&["memory", "forget", "--bank", "ops", "--query", q]);
        assert!(text(&out).contains("the staging db is postgres://"), "`{q}` finds the memory: {}", text(&out));
    }
    home.ok(&["memory", "forget", "--bank", "ops", "--query", &copied, "--yes"]);
    assert!(list(&home).iter().all(|m| m["bank"] != "ops"));
}

#[test]
fn import_refuses_impossible_dates_and_cuts_what_the_hooks_would_cut() {
    let home = Home::new();
    let now = ovmem::store::now();
    let huge = "x".repeat(250_000);
    let lines = [
        json!({"bank": "b", "kind": "fact", "prompt": "the release checklist lives in docs/release.md", "created_at": now - 100}),
        json!({"bank": "b", "kind": "fact", "prompt": "a memory from next month", "created_at": now + 30 * 86_400}),
        json!({"bank": "b", "kind": "fact", "prompt": "a memory from the end of time", "created_at": 292_277_026_596i64}),
        json!({"bank": "b", "kind": "fact", "prompt": "a memory from 1970", "created_at": 100}),
        json!({"bank": "b", "kind": "fact", "prompt": format!("a pasted dump {huge}"), "created_at": now - 50}),
    ];
    let file = home.put("in.jsonl", lines.iter().map(|l| format!("{l}\n")).collect::<String>().as_bytes());
    let out = home.run(&["memory", "import", file.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "refused lines make the import fail: {said}");
    assert!(said.contains("imported 2 memories"), "{said}");
    assert!(said.contains("refused 3 line(s)"), "{said}");
    for part in [
        "line 2: its date (",
        "in the future",
        "line 3: its date (Unix time 292277026596) is in the future",
        "line 4: its date (100) is before 2000-01-01",
    ] {
        assert!(said.contains(part), "`{part}` in: {said}");
    }
    assert!(said.contains("cut to 100000 characters") && said.contains("line(s) 5"), "{said}");
    let all = list(&home);
    assert_eq!(all.len(), 2, "{all:?}");
    let dump = all.iter().find(|m| m["prompt"].as_str().unwrap().starts_with("a pasted dump")).unwrap();
    let n = dump["prompt"].as_str().unwrap().chars().count();
    assert!(n < 100_100 && dump["prompt"].as_str().unwrap().contains("more characters not stored"), "{n}");
    // Nothing from the future is shown first at session start.
    assert!(all.iter().all(|m| m["created_at"].as_i64().unwrap() <= now + 86_400));
}

#[test]
fn mcp_memory_add_keeps_the_hooks_size_limit() {
    let home = Home::new();
    let proj = home.path().join("app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let mut child = home
        .cmd(&["mcp"])
        .env("CLAUDE_PROJECT_DIR", &proj)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let fact = format!("The build cache key is {}", "k".repeat(300_000));
    let add = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_add", "arguments": {"text": fact}}});
    writeln!(stdin, "{add}").unwrap();
    let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let said = answer["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(said.starts_with("Remembered") && said.contains("cut to its first 100000 characters"), "{said}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let all = list(&home);
    let n = all[0]["prompt"].as_str().unwrap().chars().count();
    assert!(n < 100_100, "{n} characters stored");
}

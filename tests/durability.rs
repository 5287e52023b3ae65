//! Nothing captured is lost, with real processes: many sessions prompting and stopping at once
//! on one store, and hooks that pass their deadline because another process holds the
//! database. Every turn ends up stored exactly once, with its prompt and its reply (spooled
//! items are stored at the next session start, and replaying them twice changes nothing).
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use common::OVMEM;

struct Lab {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

impl Lab {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let proj = tmp.path().join("proj");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Self { _tmp: tmp, home, proj }
    }

    fn hook(&self, event: &str, stdin: Value, env: &[(&str, &str)]) -> (String, i32, Duration) {
        hook(&self.home, &self.proj, event, stdin, env)
    }

    fn memories(&self) -> Vec<Value> {
        let out = Command::new(OVMEM)
            .args(["memory", "list", "--all", "--json"])
            .env_clear()
            .env("HOME", &self.home)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    fn spool(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.home.join(".ovmem/spool"))
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.join(".ovmem/logs/hook.log")).unwrap_or_default()
    }
}

fn hook(home: &Path, proj: &Path, event: &str, stdin: Value, env: &[(&str, &str)]) -> (String, i32, Duration) {
    let r = common::run_in(home, proj, &["hook", "claude-code", event], stdin.to_string().as_bytes(), env);
    (r.out, r.code, r.took)
}

fn prompt(proj: &Path, session: &str, text: &str) -> Value {
    json!({"session_id": session, "cwd": proj, "hook_event_name": "UserPromptSubmit", "prompt": text})
}

fn stop(proj: &Path, session: &str, reply: &str) -> Value {
    json!({"session_id": session, "cwd": proj, "hook_event_name": "Stop", "last_assistant_message": reply})
}

/// Holds SQLite's write lock on `db` from another process until dropped.
struct Locked(std::process::Child);

impl Locked {
    fn hold(db: &Path) -> Self {
        let script = format!(
            "import sqlite3,time\nc=sqlite3.connect({:?},isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nprint('locked',flush=True)\ntime.sleep(120)\n",
            db.to_str().unwrap()
        );
        let mut child = Command::new("python3").args(["-c", &script]).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "locked");
        Locked(child)
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Each turn's prompt and reply appear in exactly one memory, together.
fn assert_each_turn_once(mems: &[Value], n: usize, log: &str) {
    assert_eq!(mems.len(), n, "memories: {mems:#?}\nlog: {log}");
    for i in 0..n {
        let with: Vec<&Value> = mems
            .iter()
            .filter(|m| m["prompt"].as_str().unwrap_or_default().contains(&format!("question {i} ")))
            .collect();
        assert_eq!(with.len(), 1, "turn {i}: {with:?}");
        assert!(with[0]["reply"].as_str().unwrap_or_default().contains(&format!("answer {i} ")), "turn {i}: {with:?}");
    }
}

#[test]
fn a_hundred_sessions_prompting_and_stopping_at_once_lose_no_turn() {
    let lab = Lab::new();
    // The store exists, as after any first session.
    lab.hook("SessionStart", json!({"session_id": "boot", "cwd": lab.proj, "hook_event_name": "SessionStart"}), &[]);
    let n = 100;
    let workers: Vec<_> = (0..n)
        .map(|i| {
            let (home, proj) = (lab.home.clone(), lab.proj.clone());
            std::thread::spawn(move || {
                let s = format!("session-{i}");
                let q = format!("question {i} about the widget cache in service w{i}");
                let (out, code, _) = hook(&home, &proj, "UserPromptSubmit", prompt(&proj, &s, &q), &[]);
                assert_eq!(code, 0);
                serde_json::from_str::<Value>(&out).unwrap();
                let (out, code, _) = hook(&home, &proj, "Stop", stop(&proj, &s, &format!("answer {i} is done")), &[]);
                assert_eq!((out.as_str(), code), ("{}", 0));
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Whatever a hook had to spool is stored by the next session start.
    lab.hook("SessionStart", json!({"session_id": "after", "cwd": lab.proj, "hook_event_name": "SessionStart"}), &[]);
    assert_each_turn_once(&lab.memories(), n, &lab.log());
    assert!(lab.spool().is_empty());
}

#[test]
fn hooks_that_pass_their_deadline_spool_the_whole_turn_and_it_is_stored_once() {
    let lab = Lab::new();
    lab.hook("SessionStart", json!({"session_id": "boot", "cwd": lab.proj, "hook_event_name": "SessionStart"}), &[]);
    let deadline = [("OVMEM_DEADLINE_MS", "700")];
    {
        let _lock = Locked::hold(&lab.home.join(".ovmem/memory.db"));
        for i in 0..3 {
            let s = format!("slow-{i}");
            let q = format!("question {i} about the deploy freeze window");
            let (out, code, took) = lab.hook("UserPromptSubmit", prompt(&lab.proj, &s, &q), &deadline);
            assert_eq!((out.as_str(), code), ("{}", 0));
            assert!(took < Duration::from_secs(3), "the prompt hook answered in {took:?}");
            let (out, code, took) = lab.hook("Stop", stop(&lab.proj, &s, &format!("answer {i} is Friday")), &deadline);
            assert_eq!((out.as_str(), code), ("{}", 0));
            assert!(took < Duration::from_secs(3), "the stop hook answered in {took:?}");
        }
        assert_eq!(lab.spool().len(), 6, "three prompts and three turns spooled: {}", lab.log());
        assert!(lab.memories().is_empty());
    }
    // Keep a copy of the spool: replaying the same items twice must not duplicate anything.
    let copies: Vec<(PathBuf, Vec<u8>)> =
        lab.spool().into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect();
    lab.hook("SessionStart", json!({"session_id": "next", "cwd": lab.proj, "hook_event_name": "SessionStart"}), &[]);
    assert_each_turn_once(&lab.memories(), 3, &lab.log());
    assert!(lab.spool().is_empty());
    for (p, bytes) in copies {
        std::fs::write(p, bytes).unwrap();
    }
    lab.hook("SessionStart", json!({"session_id": "again", "cwd": lab.proj, "hook_event_name": "SessionStart"}), &[]);
    assert_each_turn_once(&lab.memories(), 3, &lab.log());
}

#[test]
fn a_prompt_spooled_while_the_store_was_busy_joins_its_turn() {
    let lab = Lab::new();
    lab.hook("SessionStart", json!({"session_id": "boot", "cwd": lab.proj, "hook_event_name": "SessionStart"}), &[]);
    {
        let _lock = Locked::hold(&lab.home.join(".ovmem/memory.db"));
        let q = "question 0 about the flaky login test";
        let (_, code, _) = lab.hook("UserPromptSubmit", prompt(&lab.proj, "s", q), &[("OVMEM_DEADLINE_MS", "500")]);
        assert_eq!(code, 0);
    }
    // The store is free again by the time the turn ends: the stop takes the spooled prompt.
    let (out, code, _) = lab.hook("Stop", stop(&lab.proj, "s", "answer 0 is a race in the mock clock"), &[]);
    assert_eq!((out.as_str(), code), ("{}", 0));
    assert_each_turn_once(&lab.memories(), 1, &lab.log());
    assert!(lab.spool().is_empty());
}

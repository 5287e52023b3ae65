//! `ovmem memory forget <id>` leaves no trace of the memory in the store's files: not in its
//! rows, its index terms, the topics of its session's other turns, free pages or the WAL.

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// A throwaway home with a project directory (outside git) in it.
struct Lab(common::Home);

impl Lab {
    fn new() -> Self {
        let home = common::Home::new();
        std::fs::create_dir_all(home.path().join("proj")).unwrap();
        Self(home)
    }

    fn proj(&self) -> PathBuf {
        self.0.path().join("proj")
    }

    fn run(&self, args: &[&str], stdin: &str) -> String {
        let ran = common::run_in(&self.0.path().join("home"), &self.proj(), args, stdin.as_bytes(), &[]);
        assert_eq!(ran.code, 0, "ovmem {args:?}");
        ran.out
    }

    /// One turn of a Claude Code session, through its prompt and stop hooks.
    fn turn(&self, session: &str, prompt: &str, reply: &str) {
        let p =
            json!({"session_id": session, "cwd": self.proj(), "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        self.run(&["hook", "claude-code", "UserPromptSubmit"], &p.to_string());
        let s = json!({"session_id": session, "cwd": self.proj(), "hook_event_name": "Stop", "last_assistant_message": reply});
        self.run(&["hook", "claude-code", "Stop"], &s.to_string());
    }

    fn memories(&self) -> Vec<Value> {
        serde_json::from_str(&self.run(&["memory", "list", "--all", "--json"], "")).unwrap()
    }

    fn db(&self) -> PathBuf {
        self.0.path().join("home/.ovmem/memory.db")
    }
}

/// Every file of the store (the database, its WAL and shared memory) that holds `needle`.
fn holding(db: &Path, needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        if let Ok(bytes) = std::fs::read(&p) {
            let n = needle.as_bytes();
            if bytes.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n)) {
                out.push(PathBuf::from(p).display().to_string());
            }
        }
    }
    out
}

#[test]
fn a_forgotten_memory_leaves_no_bytes_in_the_store_files() {
    let lab = Lab::new();
    let marker = "zqvorblinx7731";
    // Other memories around it, so its pages are shared with what stays.
    for i in 0..30 {
        lab.run(&["memory", "add", &format!("an unrelated note number {i} about the build cache")], "");
    }
    lab.turn(
        "s1",
        &format!("The vault unseal phrase for staging is {marker}, keep it in mind while we fix the deploy script"),
        "Understood, I will use it when the deploy script runs the unseal step.",
    );
    // A short follow-up: its stored topic is taken from the first prompt.
    lab.turn("s1", "and now?", "Now the deploy script passes.");
    let ms = lab.memories();
    let id = ms.iter().find(|m| m["prompt"].as_str().unwrap().contains(marker)).unwrap()["id"].as_i64().unwrap();
    assert!(
        ms.iter().any(|m| m["prompt"] == "and now?" && m["topic"].as_str().unwrap().contains(marker)),
        "the follow-up carries the first prompt as its topic: {ms:?}"
    );
    assert!(!holding(&lab.db(), marker).is_empty(), "the marker is stored at first");

    lab.run(&["memory", "forget", &id.to_string()], "");
    assert_eq!(holding(&lab.db(), marker), Vec::<String>::new(), "no trace in the store's files");
    let ms = lab.memories();
    assert_eq!(ms.len(), 31, "only the forgotten memory went");
    assert!(ms.iter().any(|m| m["prompt"] == "and now?"), "the follow-up stays, without the forgotten topic");
    // The index is still sound: what stays is still found, and the forgotten word finds nothing.
    let hits = lab.run(&["memory", "search", "deploy script passes", "--json"], "");
    assert!(hits.contains("and now?"), "{hits}");
    let hits = lab.run(&["memory", "search", marker, "--json"], "");
    assert_eq!(serde_json::from_str::<Vec<Value>>(&hits).unwrap().len(), 0, "{hits}");
    let hits = lab.run(&["memory", "search", "note number 7 build cache", "--json"], "");
    assert!(hits.contains("note number 7"), "{hits}");
}

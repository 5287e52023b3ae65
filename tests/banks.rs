//! Which bank a project's memory lives in, with real git repositories and the built binary: a
//! moved or renamed checkout, a second clone and a worktree recall the project's memory; an
//! unrelated repository with the same directory name does not; banks an older ovmem named by path
//! are carried over on first use; `memory banks` and `memory merge`; hostile `.git` files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
const FACT: &str = "The shop checkout service retries payment webhooks with exponential backoff capped at 90 seconds";
const QUESTION: &str = "How does the checkout service retry payment webhooks?";

/// `PATH` for everything the tests start: the system's, plus wherever `git` is.
fn path() -> String {
    let mut dirs = vec!["/usr/bin".to_string(), "/bin".to_string()];
    let out = Command::new("sh").args(["-c", "command -v git"]).output().unwrap();
    let git = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(!git.is_empty(), "these tests need git");
    dirs.insert(0, Path::new(&git).parent().unwrap().display().to_string());
    dirs.join(":")
}

struct Lab {
    tmp: tempfile::TempDir,
}

impl Lab {
    fn new() -> Self {
        Self { tmp: tempfile::tempdir().unwrap() }
    }

    fn base(&self) -> PathBuf {
        std::fs::canonicalize(self.tmp.path()).unwrap()
    }

    fn home(&self) -> PathBuf {
        self.base().join("home")
    }

    fn git(&self, dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("PATH", path())
            .env("HOME", self.home())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A repository with one commit (`marker` makes its root commit its own), and `remote` as
    /// its origin when given.
    fn repo(&self, rel: &str, marker: &str, remote: Option<&str>) -> PathBuf {
        let dir = self.base().join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        self.git(&dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("README"), marker).unwrap();
        self.git(&dir, &["add", "README"]);
        self.git(&dir, &["commit", "-q", "-m", marker]);
        if let Some(r) = remote {
            self.git(&dir, &["remote", "add", "origin", r]);
        }
        dir
    }

    fn ovmem(&self, cwd: &Path, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = Command::new(OVMEM)
            .args(args)
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", path())
            .env("NO_COLOR", "1")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    }

    fn ok(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.ovmem(cwd, args, b"");
        assert!(out.status.success(), "ovmem {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What a Claude Code prompt hook in `dir` injects for `prompt`, in a session of its own (a
    /// session is given a memory once).
    fn recall(&self, dir: &Path, prompt: &str) -> String {
        static SESSION: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let session = format!("s-recall-{}", SESSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let stdin = json!({"session_id": session, "cwd": dir, "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        let out = self.ovmem(dir, &["hook", "claude-code", "UserPromptSubmit"], stdin.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        if text.trim().is_empty() {
            return String::new();
        }
        let v: Value = serde_json::from_str(&text).unwrap();
        v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default().to_string()
    }

    fn banks(&self) -> Vec<Value> {
        serde_json::from_str::<Vec<Value>>(&self.ok(&self.base(), &["memory", "banks", "--json"])).unwrap()
    }

    fn bank_of(&self, dir: &Path) -> String {
        let v: Vec<Value> = serde_json::from_str(&self.ok(dir, &["memory", "list", "--json"])).unwrap();
        v[0]["bank"].as_str().unwrap().to_string()
    }
}

#[test]
fn moved_renamed_cloned_and_worktree_checkouts_recall_the_project_memory() {
    let lab = Lab::new();
    let shop = lab.repo("old/shop", "shop", Some("git@github.com:acme/shop.git"));
    lab.ok(&shop, &["memory", "add", FACT]);
    assert_eq!(lab.bank_of(&shop), "project:github.com/acme/shop");
    assert!(lab.recall(&shop, QUESTION).contains("exponential backoff"));

    // Moved and renamed.
    std::fs::create_dir_all(lab.base().join("new")).unwrap();
    let moved = lab.base().join("new/shop-renamed");
    std::fs::rename(&shop, &moved).unwrap();
    assert!(lab.recall(&moved.join("."), QUESTION).contains("exponential backoff"), "after a move and a rename");

    // A second clone, by another URL spelling of the same remote.
    let clone = lab.repo("elsewhere/second-clone", "another history", Some("https://github.com/Acme/shop"));
    assert!(lab.recall(&clone, QUESTION).contains("exponential backoff"), "a second clone");

    // A linked worktree.
    let wt = lab.base().join("wt-feature");
    lab.git(&moved, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    assert!(lab.recall(&wt, QUESTION).contains("exponential backoff"), "a worktree");

    // Same directory name, unrelated repository.
    let other = lab.repo("other/shop", "unrelated", Some("git@github.com:someone/shop.git"));
    assert_eq!(lab.recall(&other, QUESTION), "", "an unrelated `shop` shares nothing");
}

#[test]
fn a_repository_without_a_remote_is_known_by_its_root_commit() {
    let lab = Lab::new();
    let app = lab.repo("a/app", "first app", None);
    lab.ok(&app, &["memory", "add", FACT]);
    let bank = lab.bank_of(&app);
    assert!(bank.starts_with("project:git-root:"), "{bank}");
    let moved = lab.base().join("b/app-moved");
    std::fs::create_dir_all(lab.base().join("b")).unwrap();
    std::fs::rename(&app, &moved).unwrap();
    assert!(lab.recall(&moved, QUESTION).contains("exponential backoff"), "moved");
    let other = lab.repo("c/app", "second app", None);
    assert_eq!(lab.recall(&other, QUESTION), "", "another `app` with its own history");

    // A remote added later: the root-commit bank is carried over into the remote's.
    lab.git(&moved, &["remote", "add", "origin", "https://gitlab.com/acme/app.git"]);
    assert!(lab.recall(&moved, QUESTION).contains("exponential backoff"), "after a remote was added");
    let names: Vec<String> = lab.banks().iter().map(|b| b["bank"].as_str().unwrap().to_string()).collect();
    assert!(names.contains(&"project:gitlab.com/acme/app".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("project:git-root:")), "carried over, not left behind: {names:?}");

    // A directory outside git keeps its path.
    let plain = lab.base().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    lab.ok(&plain, &["memory", "add", "a note about the plain directory"]);
    assert_eq!(lab.bank_of(&plain), format!("project:{}", plain.display()));
}

/// An export line in a bank an older ovmem named after the checkout's path.
fn old_line(bank: &str, text: &str, at: i64) -> String {
    json!({"bank": bank, "kind": "fact", "prompt": text, "reply": "", "created_at": at}).to_string() + "\n"
}

#[test]
fn path_banks_of_an_older_ovmem_are_carried_over_once_even_by_racing_hooks() {
    let lab = Lab::new();
    let shop = lab.repo("src/shop", "shop", Some("git@github.com:acme/shop.git"));
    let mut lines = old_line(&format!("project:{}", shop.display()), FACT, 1_700_000_000);
    for i in 0..50 {
        lines += &old_line(
            &format!("project:{}", shop.display()),
            &format!("older note number {i} about invoices"),
            1_700_000_000 + i,
        );
    }
    std::fs::write(lab.base().join("old.jsonl"), &lines).unwrap();
    lab.ok(&lab.base(), &["memory", "import", lab.base().join("old.jsonl").to_str().unwrap()]);

    // Six hooks at once, on first use.
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let (exe, home, dir, path) = (OVMEM, lab.home(), shop.clone(), path());
            std::thread::spawn(move || {
                let stdin = json!({"session_id": "race", "cwd": dir, "hook_event_name": "UserPromptSubmit", "prompt": QUESTION});
                let mut c = Command::new(exe)
                    .args(["hook", "claude-code", "UserPromptSubmit"])
                    .env_clear()
                    .env("HOME", home)
                    .env("PATH", path)
                    .current_dir(&dir)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap();
                c.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
                let out = c.wait_with_output().unwrap();
                assert_eq!(out.status.code(), Some(0));
                String::from_utf8_lossy(&out.stdout).into_owned()
            })
        })
        .collect();
    let outs: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(outs.iter().any(|o| o.contains("exponential backoff")), "{outs:?}");
    let banks = lab.banks();
    assert_eq!(banks.len(), 1, "{banks:?}");
    assert_eq!(banks[0]["bank"], "project:github.com/acme/shop");
    assert_eq!(banks[0]["memories"], 51, "every memory once");
    assert!(lab.recall(&shop, "which older note is about invoices number 7").contains("number 7"));
}

#[test]
fn banks_are_listed_and_merged_by_hand() {
    let lab = Lab::new();
    let shop = lab.repo("shop", "shop", Some("git@github.com:acme/shop.git"));
    lab.ok(&shop, &["memory", "add", "a memory the project has already"]);
    lab.ok(&shop, &["memory", "add", "a memory both banks hold"]);
    // A checkout moved before this ovmem: its path bank cannot be found by the new location.
    let gone = lab.base().join("gone/shop");
    let mut lines = old_line(&format!("project:{}", gone.display()), FACT, 1_700_000_000);
    lines += &old_line(&format!("project:{}", gone.display()), "a memory both banks hold", 1_700_000_001);
    std::fs::write(lab.base().join("old.jsonl"), &lines).unwrap();
    lab.ok(&lab.base(), &["memory", "import", lab.base().join("old.jsonl").to_str().unwrap()]);
    assert_eq!(lab.recall(&shop, QUESTION), "");

    let text = lab.ok(&shop, &["memory", "banks"]);
    assert!(text.contains("* ") && text.contains("project:github.com/acme/shop"), "{text}");
    assert!(text.contains(&format!("project:{}  (that directory is gone", gone.display())), "{text}");

    let missing = lab.ovmem(&shop, &["memory", "merge", "project:/no/such/bank"], b"");
    assert_eq!(missing.status.code(), Some(2), "{}", String::from_utf8_lossy(&missing.stderr));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("`ovmem memory banks`"));

    let out = lab.ovmem(&shop, &["memory", "merge", &format!("project:{}", gone.display())], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("merged 2 memory(ies)"));
    assert!(lab.recall(&shop, QUESTION).contains("exponential backoff"));
    let banks = lab.banks();
    assert_eq!(banks.len(), 1, "{banks:?}");
    assert_eq!(banks[0]["memories"], 3, "the memory both held is kept once: {banks:?}");
    assert!(lab.recall(&shop, "which memory does the project have already").contains("already"));
}

#[test]
fn a_git_file_pointing_at_dev_zero_costs_nothing() {
    let lab = Lab::new();
    let proj = lab.base().join("hostile");
    let gd = lab.base().join("gd");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&gd).unwrap();
    for f in ["commondir", "HEAD", "config", "packed-refs"] {
        std::os::unix::fs::symlink("/dev/zero", gd.join(f)).unwrap();
    }
    std::fs::write(proj.join(".git"), format!("gitdir: {}\n", gd.display())).unwrap();
    let other = lab.base().join("hostile2");
    std::fs::create_dir_all(&other).unwrap();
    std::os::unix::fs::symlink("/dev/zero", other.join(".git")).unwrap();
    let third = lab.base().join("hostile3");
    std::fs::create_dir_all(&third).unwrap();
    std::fs::write(third.join(".git"), "gitdir: /dev/zero\n").unwrap();
    for dir in [&proj, &other, &third] {
        lab.ok(dir, &["memory", "add", FACT]);
        let started = Instant::now();
        assert!(lab.recall(dir, QUESTION).contains("exponential backoff"));
        assert!(started.elapsed() < Duration::from_secs(2), "{}: {:?}", dir.display(), started.elapsed());
        assert_eq!(lab.bank_of(dir), format!("project:{}", dir.display()));
        // `ovmem mcp` works out the same bank, and answers.
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let out = lab.ovmem(dir, &["mcp"], format!("{init}\n").as_bytes());
        assert!(String::from_utf8_lossy(&out.stdout).contains("\"id\":1"), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A repository's own `.git/config` never makes ovmem start a program: not as a "partial clone"
/// whose missing HEAD commit git would fetch through the remote's `uploadpack` command, nor
/// through `core.sshCommand` of a remote hidden in an included file.
#[test]
fn a_repository_config_cannot_make_git_run_a_program() {
    let lab = Lab::new();
    let marks = lab.base().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let lazy = lab.repo("lazy", "lazy", None);
    let head = {
        let out = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&lazy).env("PATH", path()).output();
        String::from_utf8(out.unwrap().stdout).unwrap().trim().to_string()
    };
    std::fs::remove_file(lazy.join(".git/objects").join(&head[..2]).join(&head[2..])).unwrap();
    let ran = |name: &str| marks.join(name);
    for (k, v) in [
        ("core.repositoryformatversion", "1".to_string()),
        ("extensions.partialClone", "origin".into()),
        ("remote.origin.url", "/nonexistent/repo".into()),
        ("remote.origin.promisor", "true".into()),
        ("remote.origin.uploadpack", format!("touch {}; false", ran("uploadpack").display())),
    ] {
        lab.git(&lazy, &["config", k, &v]);
    }
    let hidden = lab.repo("hidden", "hidden", None);
    let commit = {
        let out = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&hidden).env("PATH", path()).output();
        String::from_utf8(out.unwrap().stdout).unwrap().trim().to_string()
    };
    std::fs::remove_file(hidden.join(".git/objects").join(&commit[..2]).join(&commit[2..])).unwrap();
    let extra = hidden.join(".git/extra.conf");
    let ssh = format!("touch {}; false", ran("ssh").display());
    std::fs::write(
        &extra,
        format!(
            "[core]\n\trepositoryformatversion = 1\n\tsshCommand = {ssh}\n[extensions]\n\tpartialClone = origin\n\
             [remote \"origin\"]\n\turl = ssh://git@example.invalid/acme/app.git\n\tpromisor = true\n"
        ),
    )
    .unwrap();
    lab.git(&hidden, &["config", "include.path", extra.to_str().unwrap()]);
    for dir in [&lazy, &hidden] {
        lab.ok(dir, &["memory", "add", FACT]);
        assert!(lab.recall(dir, QUESTION).contains("exponential backoff"), "{}", dir.display());
    }
    let left: Vec<_> = std::fs::read_dir(&marks).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "a repository's command ran: {left:?}");
}

/// Every file under `dir` (the store, its WAL, logs, spool) that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if std::fs::read(&p).is_ok_and(|b| {
                let lower = String::from_utf8_lossy(&b).to_lowercase();
                lower.contains(&needle.to_lowercase())
            }) {
                found.push(p);
            }
        }
    }
    found
}

/// What names where a memory came from (the bank, from a git remote or a directory; a hook's
/// session id; an import's bank, harness and session) keeps no secret: not in the store, its
/// logs or the spool.
#[test]
fn no_secret_reaches_a_bank_name_or_a_session_id() {
    let lab = Lab::new();
    let query_token = "glpat-Qe4Rt7Yu1Io3Pa6Sd9FgHj";
    let app = lab.repo("src/app", "app", Some(&format!("https://h.example/acme/app.git?private_token={query_token}")));
    lab.ok(&app, &["memory", "add", FACT]);
    assert_eq!(lab.bank_of(&app), "project:h.example/acme/app");
    let password = "Xy7Qw3Er5Ty8Ui2/Op4As6Df9Gh1Jk";
    let tool = lab.repo("src/tool", "tool", Some(&format!("https://bob:{password}@git.example.com/v1/repos/tool")));
    lab.ok(&tool, &["memory", "add", "the tool reads its settings from /etc/tool.toml"]);
    assert_eq!(lab.bank_of(&tool), "project:git.example.com/v1/repos/tool");

    // A directory outside git whose name holds a token, and a session id that is one.
    let dir_token = "ghp_R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi";
    let session_token = "sk-proj-Zk7Qm2Xv9Rt4Lp8Wn3Bc6Hd1Jf5Gs0AyTqUe";
    let odd = lab.base().join(format!("scratch-{dir_token}"));
    std::fs::create_dir_all(&odd).unwrap();
    for (event, body) in [
        ("UserPromptSubmit", json!({"prompt": "remember that the cache ttl is 90 seconds"})),
        ("Stop", json!({"last_assistant_message": "Noted: the cache ttl is 90 seconds."})),
    ] {
        let mut stdin = json!({"session_id": format!("sess-{session_token}"), "cwd": odd, "hook_event_name": event});
        stdin.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        let out = lab.ovmem(&odd, &["hook", "claude-code", event], stdin.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0));
    }
    let listed: Vec<Value> = serde_json::from_str(&lab.ok(&odd, &["memory", "list", "--json"])).unwrap();
    assert!(listed.iter().any(|m| m["reply"].as_str().unwrap_or_default().contains("90 seconds")), "{listed:?}");
    let session = listed[0]["session"].as_str().unwrap().to_string();
    assert!(session.starts_with("s-"), "{session}");

    // An import names its bank, harness and session itself.
    let import_token = "ghp_Pq2Wr4Es6Td8Yf1Ug3Ih5Oj7Kl9Zx0Cv2Bn4";
    let line = json!({"bank": format!("project:/work/{import_token}"), "kind": "fact", "prompt": "imported fact",
        "reply": "", "harness": "password=Harn2024xQ", "session": import_token, "created_at": 1_700_000_000});
    std::fs::write(lab.base().join("in.jsonl"), format!("{line}\n")).unwrap();
    lab.ok(&lab.base(), &["memory", "import", lab.base().join("in.jsonl").to_str().unwrap()]);

    for secret in [query_token, password, "Op4As6Df9Gh1Jk", dir_token, session_token, import_token, "Harn2024xQ"] {
        assert_eq!(files_holding(&lab.home(), secret), Vec::<PathBuf>::new(), "{secret}");
    }
    let banks = lab.banks();
    assert_eq!(banks.len(), 4, "{banks:?}");
}

//! The code other platforms run, run here: `OVMEM_TEST_PORTABLE=1` forces every portable fallback
//! in `src/sys.rs` (no Unix modes or owners, no inode identities, no `O_TMPFILE` or
//! `renameat2`, no process groups, no umask) and the whole life of an install still works:
//! install, status, hooks that capture and recall, doctor, uninstall.
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{stderr, tree, Home};

fn portable(home: &Home, args: &[&str]) -> Output {
    home.cmd(args).env("OVMEM_TEST_PORTABLE", "1").output().unwrap()
}

fn ok(home: &Home, args: &[&str]) -> Output {
    let out = portable(home, args);
    assert!(out.status.success(), "ovmem {args:?} exited {:?}:\n{}", out.status.code(), stderr(&out));
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A hook run as the harness runs it, with the fallbacks forced.
fn hook(home: &Home, harness: &str, event: &str, stdin: &str) -> String {
    let mut child = Command::new(home.path().join(".ovmem/bin/ovmem"))
        .args(["hook", harness, event])
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .env("OVMEM_TEST_PORTABLE", "1")
        .current_dir(home.path().join("proj"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_switch_turns_the_unix_calls_off() {
    // Unix: `$OVMEM_HOME` is made 0700 and the store's files 0600. Without Unix modes those
    // calls are not made, so the default umask's modes show that the fallbacks ran.
    let native = Home::new();
    native.ok(&["memory", "add", "the cache is warmed at boot"]);
    assert_eq!(mode(&native.path().join(".ovmem")), 0o700);
    let fallback = Home::new();
    let out = fallback
        .cmd(&["memory", "add", "the cache is warmed at boot"])
        .env("OVMEM_TEST_PORTABLE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_ne!(mode(&fallback.path().join(".ovmem")), 0o700, "no chmod without Unix modes");
}

#[test]
fn install_hooks_doctor_and_uninstall_work_on_the_portable_fallbacks() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("proj/.git")).unwrap();
    home.put(".claude/settings.json", b"{\n  \"model\": \"opus\"\n}\n");
    let before = tree(home.path());
    // The install transaction: staged temp files without O_TMPFILE, plain renames.
    let out = ok(&home, &["install", "--harness", "claude-code,codex", "--yes"]);
    assert!(stderr(&out).contains("ovmem is installed"), "{}", stderr(&out));
    // Without Unix modes a file gets no executable bit (Windows runs `ovmem.exe` by its name);
    // on this host the test gives the staged copy the bit Windows does not need.
    let runtime = home.path().join(".ovmem/bin/ovmem");
    assert_eq!(mode(&runtime) & 0o111, 0, "no chmod without Unix modes");
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let settings = std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap();
    assert!(settings.contains("\"model\": \"opus\"") && settings.contains("hook claude-code Stop"), "{settings}");
    // status (file keys without inode numbers) and a second look that hits the cache.
    for _ in 0..2 {
        let v: serde_json::Value = serde_json::from_slice(&ok(&home, &["status", "--json"]).stdout).unwrap();
        let claude = v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "claude-code").unwrap();
        assert_eq!(claude["scopes"][0]["installed"], true, "{claude}");
    }
    // Hooks: capture, then recall (the log lock, the store, the spool).
    let p = home.path().join("proj");
    let p = p.to_str().unwrap();
    let stop = serde_json::json!({"hook_event_name": "Stop", "session_id": "s1", "cwd": p, "last_assistant_message": "The staging database listens on port 6544."});
    hook(&home, "claude-code", "Stop", &stop.to_string());
    let ask = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "s2", "cwd": p, "prompt": "Which port does the staging database listen on?"});
    let out = hook(&home, "claude-code", "UserPromptSubmit", &ask.to_string());
    assert!(out.contains("6544"), "recalled: {out}");
    assert!(std::fs::read_to_string(home.path().join(".ovmem/logs/hook.log")).unwrap().contains("captured"));
    // doctor runs every hook in a child without a process group of its own. Every hook works;
    // the one problem is Codex's trust, unknown without `codex` on PATH (it skips untrusted hooks).
    let out = portable(&home, &["doctor"]);
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("1 problem(s)") && text.contains("unknown   trust"), "{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("failed")), "{text}");
    // And everything goes again.
    ok(&home, &["uninstall", "--all", "--purge", "--yes"]);
    let after = tree(home.path());
    let keys =
        |t: &common::Tree| t.keys().filter(|k| !k.starts_with(home.path().join("proj"))).cloned().collect::<Vec<_>>();
    assert_eq!(keys(&after), keys(&before));
    assert_eq!(
        std::fs::read(home.path().join(".claude/settings.json")).unwrap(),
        b"{\n  \"model\": \"opus\"\n}\n",
        "the user's settings are back byte for byte"
    );
}

#[test]
fn a_harness_on_path_is_found_by_the_which_crate() {
    let home = Home::new();
    let bin = home.path().join("tools");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(&claude, "#!/bin/sh\necho 2.0.0\n").unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Not executable: not a program.
    std::fs::write(bin.join("codex"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(bin.join("codex"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = home
        .cmd(&["status", "--json"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("OVMEM_TEST_PORTABLE", "1")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = |id: &str| {
        v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == id).unwrap()["detected"]["binary"].clone()
    };
    assert_eq!(found("claude-code"), claude.to_str().unwrap());
    assert!(found("codex").is_null(), "{}", found("codex"));
}

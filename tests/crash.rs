//! Crashes, signals and concurrent writers, with real processes: the built binary is killed
//! (SIGKILL, SIGINT, SIGTERM) at random moments of install and uninstall, and a separate process
//! rewrites a config while ovmem installs. Whatever happens, the user's bytes come back and
//! nothing of ovmem's stays behind.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{copy_tree, stderr, tree_diff, Entry, Home, Rng, Tree, FIXTURES};

const ALL: &str = "claude-code,codex,cursor,cline,gemini-cli";

/// A home with hand-edited configs of four harnesses (comments, tabs, foreign hooks); Cline's
/// hook files and every MCP registration are created by ovmem.
fn populated() -> Home {
    let home = Home::new();
    home.put(".claude/settings.json", &Home::fixture("claude-code", "tabs-foreign-hooks.json"));
    home.put(".cursor/hooks.json", &Home::fixture("cursor", "jsonc-crlf-trailing-commas.json"));
    home.put(".codex/hooks.json", &Home::fixture("codex", "four-spaces-foreign.json"));
    home.put(".gemini/settings.json", &Home::fixture("gemini-cli", "settings-auth-foreign-hooks.json"));
    home
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: sending a signal to a child we spawned.
    unsafe { libc::kill(pid as i32, sig) };
}

fn without_locks(t: &Tree, home: &Path) -> Tree {
    let locks = home.join(".ovmem/locks");
    t.iter().filter(|(p, _)| !p.starts_with(&locks)).map(|(p, e)| (p.clone(), e.clone())).collect()
}

#[test]
fn sigkill_at_random_moments_then_one_install_and_one_uninstall_give_back_every_byte() {
    let home = populated();
    let original = home.tree();
    let install = ["install", "--harness", ALL];
    let uninstall = ["uninstall", "--harness", ALL, "--yes"];
    // How long each command takes here, to spread the kills over the short and the long ones
    // (a first install stages the runtime, a second one only edits).
    let time = |args: &[&str]| {
        let t = Instant::now();
        home.ok(args);
        t.elapsed().as_micros() as u64
    };
    let long = time(&install);
    let short = time(&install).min(time(&uninstall));
    assert!(tree_diff(&original, &home.tree()).is_empty(), "{:?}", tree_diff(&original, &home.tree()));

    let mut rng = Rng::from_time();
    let seed = rng.0;
    let mut killed = 0;
    // More rounds for a soak run: OVMEM_KILL_ROUNDS=600 cargo test --test crash sigkill.
    let rounds: usize = std::env::var("OVMEM_KILL_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(60);
    for _ in 0..rounds {
        let args: &[&str] = if rng.below(3) == 0 { &uninstall } else { &install };
        let child = home.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let span = if rng.below(2) == 0 { short } else { long };
        let delay = rng.below(span + span / 4);
        std::thread::sleep(Duration::from_micros(delay));
        signal(child.id(), libc::SIGKILL);
        let status = child.wait_with_output().unwrap().status;
        if status.code().is_none() {
            killed += 1;
        }
    }
    assert!(killed >= rounds / 4, "only {killed} of {rounds} runs were killed before they finished (seed {seed})");
    // After any sequence of kills, one install and one uninstall.
    home.ok(&install);
    for (rel, _) in [(".claude/settings.json", 0), (".cursor/hooks.json", 0), (".codex/hooks.json", 0)] {
        let text = std::fs::read_to_string(home.path().join(rel)).unwrap();
        assert_eq!(
            text.matches("/.ovmem/bin/ovmem hook").count(),
            if rel.contains("cursor") { 7 } else { 5 },
            "{rel}: {text}"
        );
    }
    home.ok(&uninstall);
    let diff = tree_diff(&original, &home.tree());
    assert!(diff.is_empty(), "seed {seed}: after {killed} kills, install and uninstall left: {diff:#?}");
}

#[test]
fn sigint_and_sigterm_mid_transaction_roll_back_at_once() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let home = populated();
        let original = home.tree();
        // The third file of the transaction waits, so the signal lands with two already written.
        let mut cmd = home.cmd(&["install", "--harness", ALL]);
        let child = cmd.env("OVMEM_FAULT", "sleep:between-files:3").stderr(Stdio::piped()).spawn().unwrap();
        let journal = home.path().join(".ovmem/journal/journal.json");
        let t = Instant::now();
        while !journal.exists() && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        assert_ne!(home.tree(), original, "nothing was written yet: the signal would prove nothing");
        signal(child.id(), sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(128 + sig), "{}", stderr(&out));
        assert!(stderr(&out).contains("interrupted") && stderr(&out).contains("put back"), "{}", stderr(&out));
        let diff = tree_diff(&original, &home.tree());
        assert!(diff.is_empty(), "signal {sig} left: {diff:#?}");
    }
}

#[test]
fn a_signal_at_any_moment_leaves_everything_installed_or_nothing() {
    let home = populated();
    let install = ["install", "--harness", ALL];
    let uninstall = ["uninstall", "--harness", ALL, "--yes"];
    let original = home.tree();
    let t = Instant::now();
    home.ok(&install);
    let span = t.elapsed().as_micros() as u64;
    let installed = without_locks(&home.tree(), home.path());
    home.ok(&uninstall);
    let mut rng = Rng::from_time();
    let seed = rng.0;
    for _ in 0..30 {
        let args: &[&str] = if rng.below(2) == 0 { &install } else { &uninstall };
        let child = home.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(span + span / 4)));
        signal(child.id(), if rng.below(2) == 0 { libc::SIGINT } else { libc::SIGTERM });
        let _ = child.wait_with_output().unwrap();
        let now = without_locks(&home.tree(), home.path());
        let none = tree_diff(&original, &now);
        let all = tree_diff(&installed, &now);
        assert!(
            none.is_empty() || all.is_empty(),
            "seed {seed}: neither untouched nor installed; vs original: {none:#?}; vs installed: {all:#?}"
        );
    }
    home.ok(&uninstall);
    assert!(tree_diff(&original, &home.tree()).is_empty());
}

fn python() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH")
}

/// A harness that keeps rewriting its settings (read, change its own key, atomic replace), and
/// notices when a write of its own disappeared.
const WRITER: &str = r#"
import json, os, random, sys, time
path, stop, log, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
lost, last, i = 0, None, 0
while not os.path.exists(stop) or i < 5:
    with open(path) as f:
        text = f.read()
    try:
        d = json.loads(text)
    except ValueError:
        time.sleep(0.001)
        continue
    if last is not None and d.get("writer") != last:
        lost += 1
    d["writer"] = i
    if mode == "in-place":
        with open(path, "w") as f:
            json.dump(d, f, indent=2)
    else:
        tmp = path + ".harness-tmp"
        with open(tmp, "w") as f:
            json.dump(d, f, indent=2)
        with open(path) as f:
            if f.read() != text:
                last = None
                os.remove(tmp)
                continue
        os.replace(tmp, path)
    last, i = i, i + 1
    time.sleep(random.uniform(0, 0.003))
with open(log, "w") as f:
    f.write("%d %d %d" % (lost, i, last))
"#;

/// Runs an install while `WRITER` rewrites settings.json (`mode`: atomic or in-place); returns
/// (writes of the harness that disappeared, whether ovmem saw the race), after checking that
/// ovmem's entries and the harness's last write are both there.
fn race(run: u64, mode: &str) -> (u32, bool) {
    let home = Home::new();
    let settings = home.put(".claude/settings.json", b"{\"theme\": \"dark\", \"writer\": -1}\n");
    let stop = home.path().join("stop");
    let log = home.path().join("writer.log");
    let mut writer = std::process::Command::new(python())
        .args(["-c", WRITER])
        .arg(&settings)
        .arg(&stop)
        .arg(&log)
        .arg(mode)
        .spawn()
        .unwrap();
    // The writer is at work (its interpreter may take long to start on a busy machine) ...
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&settings).unwrap_or_default().contains("\"writer\": -1") {
        assert!(started.elapsed() < Duration::from_secs(30), "the writer never wrote");
        std::thread::sleep(Duration::from_millis(2));
    }
    // ... and ovmem starts at a different moment of its rhythm in each run.
    std::thread::sleep(Duration::from_millis(run * 3 % 17));
    let out = home.ok(&["install", "--harness", "claude-code"]);
    let contended = stderr(&out).contains("written by another program while ovmem changed it");
    std::fs::write(&stop, "").unwrap();
    assert!(writer.wait().unwrap().success());
    let report = std::fs::read_to_string(&log).unwrap();
    let nums: Vec<i64> = report.split(' ').map(|n| n.parse().unwrap()).collect();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["writer"], nums[2], "run {run} ({mode}): the harness's last write is not there: {v}");
    for event in ["SessionStart", "UserPromptSubmit", "Stop", "PreToolUse", "SessionEnd"] {
        let cmds = v["hooks"][event].to_string();
        assert_eq!(cmds.matches("ovmem hook claude-code").count(), 1, "run {run} ({mode}): {event} in {v}");
    }
    // What ovmem recorded matches what is there.
    let status: serde_json::Value = serde_json::from_slice(&home.ok(&["status", "--json"]).stdout).unwrap();
    let claude = status["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "claude-code").unwrap();
    assert!(claude["scopes"][0]["entries"].as_array().unwrap().iter().all(|e| e["state"] == "ok"), "{claude}");
    home.ok(&["uninstall", "--yes"]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert!(v.get("hooks").is_none(), "run {run}: {v}");
    (nums[0] as u32, contended)
}

#[test]
fn a_harness_rewriting_its_config_during_install_never_loses_a_write() {
    let mut contended = 0;
    for run in 0..25 {
        let (lost, raced) = race(run, "atomic");
        assert_eq!(lost, 0, "run {run}: ovmem overwrote {lost} of the harness's writes");
        contended += raced as u32;
    }
    // The writer really did race ovmem in some runs (else this test would prove nothing).
    assert!(contended >= 1, "no run saw a concurrent write");
}

/// A harness that truncates and rewrites its file in place (no rename) can have a write land in
/// the very file ovmem just replaced; ovmem still never fails, keeps the harness's newest write
/// and its own entries (the occasional write of the instant of the rename is the documented
/// limit, see README).
#[test]
fn a_harness_writing_its_config_in_place_keeps_its_newest_write() {
    for run in 0..15 {
        race(run, "in-place");
    }
}

#[test]
fn a_five_harness_install_stays_fast() {
    let home = populated();
    // Stage the runtime once; what is timed is the journaled edit of every config.
    home.ok(&["install", "--harness", "claude-code"]);
    let t = Instant::now();
    home.ok(&["install", "--harness", ALL]);
    let install = t.elapsed();
    let t = Instant::now();
    home.ok(&["uninstall", "--harness", ALL, "--yes"]);
    let uninstall = t.elapsed();
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "5-harness install {install:?}, uninstall {uninstall:?}");
    assert!(install < Duration::from_secs(5) && uninstall < Duration::from_secs(5), "{install:?} {uninstall:?}");
}

#[test]
fn temp_files_of_dead_processes_are_swept_by_the_next_command() {
    let home = populated();
    // What a killed older ovmem left: temp files beside configs, in receipts/ and bin/.
    let dead = 999_999_999u32;
    let planted = [
        format!(".claude/.settings.json.ovmem-tmp.{dead}"),
        format!(".cursor/.hooks.json.ovmem-tmp.{dead}.a1b2c3"),
        format!(".ovmem/receipts/.cursor.user.json.ovmem-tmp.{dead}.x"),
        format!(".ovmem/bin/.ovmem.ovmem-tmp.{dead}.y"),
    ];
    for p in &planted {
        home.put(p, b"half-written");
    }
    // A live process's temp file is left alone.
    let live = format!(".claude/.settings.json.ovmem-tmp.{}.z", std::process::id());
    home.put(&live, b"in use");
    home.ok(&["status"]);
    for p in &planted {
        assert!(!home.path().join(p).exists(), "{p} was not swept");
    }
    assert!(home.path().join(&live).exists());
    assert!(matches!(home.tree().get(&home.path().join(".claude/settings.json")), Some(Entry::File(..))));
}

/// The harnesses ovmem is installed in (any scope), by `ovmem status`.
fn installed(home: &Home) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&home.run(&["status", "--json"]).stdout).unwrap();
    v["harnesses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["scopes"].as_array().is_some_and(|s| s.iter().any(|s| s["installed"] == true)))
        .map(|h| h["harness"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn migrate_killed_at_any_moment_is_finished_by_the_next_run() {
    let legacy = Path::new(FIXTURES).join("legacy-home");
    // An uninterrupted migrate: what every killed one must end as, and how long it takes.
    let reference = Home::new();
    copy_tree(&legacy, reference.path());
    let t = Instant::now();
    reference.ok(&["migrate", "--yes"]);
    let span = t.elapsed().as_micros() as u64;
    let want = installed(&reference);
    assert!(want.len() >= 5, "{want:?}");
    let mut rng = Rng::from_time();
    let seed = rng.0;
    let rounds: usize = std::env::var("OVMEM_KILL_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(30);
    let mut killed = 0;
    for round in 0..rounds {
        let home = Home::new();
        copy_tree(&legacy, home.path());
        let child = home.cmd(&["migrate", "--yes"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(span + span / 10)));
        signal(child.id(), libc::SIGKILL);
        if child.wait_with_output().unwrap().status.code().is_none() {
            killed += 1;
        }
        // The next run finishes the job: ovmem in every harness, no legacy entry left.
        let out = home.run(&["migrate", "--yes"]);
        assert!(out.status.success(), "seed {seed} round {round}: {}", stderr(&out));
        assert_eq!(installed(&home), want, "seed {seed} round {round}: {}", stderr(&out));
        let check = home.run(&["check"]);
        assert_eq!(
            check.status.code(),
            Some(0),
            "seed {seed} round {round}: legacy entries left:\n{}{}",
            String::from_utf8_lossy(&check.stdout),
            stderr(&check)
        );
        assert!(!home.path().join(".ovmem/state/migrate-plan.json").exists(), "seed {seed} round {round}");
    }
    assert!(killed >= rounds / 3, "only {killed} of {rounds} runs were killed before they finished (seed {seed})");
}

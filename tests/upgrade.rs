//! Upgrades keep the hooks current: a newer CLI replaces an older staged runtime at its first
//! command (versions compared, not mtimes), never a newer one, and when it is kept
//! (`OVMEM_NO_RESTAGE=1`) status, install and doctor say so and doctor fails. `uninstall --all`
//! removes every trace, keeping the memories unless `--purge`.
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{stderr, tree, Entry, Home, OVMEM};

fn runtime(home: &Home) -> PathBuf {
    home.path().join(".ovmem/bin/ovmem")
}

/// Stages, in place of the runtime, an ovmem that says it is `version` and otherwise runs this
/// one: its hooks work, only its version is another.
fn stage_as(home: &Home, version: &str) -> Vec<u8> {
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'ovmem {version}'; exit 0; fi\nexec '{OVMEM}' \"$@\"\n"
    );
    std::fs::write(runtime(home), &script).unwrap();
    std::fs::set_permissions(runtime(home), std::fs::Permissions::from_mode(0o700)).unwrap();
    script.into_bytes()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn the_first_command_of_a_newer_cli_restages_an_older_runtime() {
    let ours = std::fs::read(OVMEM).unwrap();
    for first in [&["status"][..], &["harnesses"], &["doctor"], &["memory", "list"], &["check"]] {
        let home = Home::new();
        home.ok(&["install", "--harness", "claude-code", "--yes"]);
        stage_as(&home, "0.0.1");
        let out = home.run(first);
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "updated the hooks' runtime `~/.ovmem/bin/ovmem` from ovmem 0.0.1 to {}",
                env!("CARGO_PKG_VERSION")
            )),
            "{first:?}: {err}"
        );
        assert!(std::fs::read(runtime(&home)).unwrap() == ours, "{first:?}: the runtime is now this binary");
        assert_eq!(std::fs::metadata(runtime(&home)).unwrap().permissions().mode() & 0o777, 0o700);
        // Once current, nothing more is said, and no temp file is left beside it.
        let again = home.ok(&["status"]);
        assert!(!stderr(&again).contains("updated the hooks"), "{}", stderr(&again));
        let names: Vec<String> = std::fs::read_dir(home.path().join(".ovmem/bin"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["ovmem"]);
    }
}

#[test]
fn a_dry_run_writes_no_runtime_and_says_what_the_hooks_run() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code", "--yes"]);
    let staged = stage_as(&home, "0.0.1");
    for args in [&["install", "--harness", "claude-code", "--dry-run"][..], &["uninstall", "--all", "--dry-run"]] {
        let out = home.ok(args);
        assert!(!stderr(&out).contains("updated the hooks"), "{args:?}: {}", stderr(&out));
        assert_eq!(std::fs::read(runtime(&home)).unwrap(), staged, "{args:?}: a dry run writes nothing");
    }
    let out = home.ok(&["install", "--harness", "claude-code", "--dry-run"]);
    assert!(stderr(&out).contains("the hooks run ovmem 0.0.1"), "{}", stderr(&out));
}

#[test]
fn a_newer_or_same_version_runtime_is_left_alone_and_nothing_staged_stays_unstaged() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code", "--yes"]);
    for version in ["99.0.0", env!("CARGO_PKG_VERSION")] {
        let staged = stage_as(&home, version);
        let out = home.ok(&["status"]);
        assert!(!stderr(&out).contains("updated"), "{version}: {}", stderr(&out));
        assert_eq!(std::fs::read(runtime(&home)).unwrap(), staged, "{version}: not replaced");
        let state = &json(&home.ok(&["status", "--json"]))["runtime"];
        assert_eq!(state["version"], version);
        assert!(state.get("warning").is_none(), "{state}");
    }
    // Not installed: nothing is staged by a mere command.
    let fresh = Home::new();
    fresh.ok(&["status"]);
    fresh.ok(&["harnesses"]);
    assert!(!runtime(&fresh).exists());
}

#[test]
fn a_kept_older_runtime_is_reported_by_status_install_and_doctor_and_doctor_fails() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code", "--yes"]);
    // A healthy install first: doctor passes, so its failure below is the runtime's version.
    let out = home.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let staged = stage_as(&home, "0.0.1");
    let keep = |args: &[&str]| home.cmd(args).env("OVMEM_NO_RESTAGE", "1").output().unwrap();
    let want = format!(
        "the hooks run ovmem 0.0.1 (`~/.ovmem/bin/ovmem`), older than this ovmem {}; run `ovmem install --harness claude-code` to update them",
        env!("CARGO_PKG_VERSION")
    );
    let out = keep(&["status"]);
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let state = json(&keep(&["status", "--json"]))["runtime"].clone();
    assert_eq!((state["state"].as_str(), state["version"].as_str()), (Some("older"), Some("0.0.1")), "{state}");
    let out = keep(&["install", "--harness", "claude-code", "--dry-run"]);
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let out = keep(&["doctor"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&want), "{}", String::from_utf8_lossy(&out.stdout));
    let report = json(&keep(&["doctor", "--json"]));
    assert_eq!(report["ok"], false);
    assert_eq!(report["runtime"]["stale"], want.as_str());
    assert_eq!(std::fs::read(runtime(&home)).unwrap(), staged, "kept as asked");
    // What the message says to run brings the hooks up to date.
    let out = keep(&["install", "--harness", "claude-code", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(runtime(&home)).unwrap(), std::fs::read(OVMEM).unwrap());
    assert_eq!(keep(&["doctor"]).status.code(), Some(0));
}

/// Everything under `root` except ovmem's home, as (path, hash of the entry) pairs.
fn outside_ovmem(root: &Path) -> Vec<(PathBuf, String)> {
    tree(root)
        .into_iter()
        .filter(|(p, _)| !p.strip_prefix(root).unwrap_or(p).starts_with(".ovmem"))
        .map(|(p, e)| {
            let what = match e {
                Entry::File(bytes, mode) => format!("file {mode:o} {}", ovmem::fsx::sha256_hex(&bytes)),
                other => format!("{other:?}"),
            };
            (p, what)
        })
        .collect()
}

#[test]
fn uninstall_all_removes_every_trace_and_keeps_the_memories_unless_purged() {
    let home = Home::new();
    // The user's own settings, which must come back exactly.
    home.put(".claude/settings.json", b"{\n  \"theme\": \"dark\"\n}\n");
    let proj = home.path().join("work/api");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let before = outside_ovmem(home.path());
    home.ok(&["install", "--harness", "claude-code,cursor,gemini-cli", "--yes"]);
    home.ok(&["install", "--harness", "claude-code,codex", "--project", proj.to_str().unwrap(), "--yes"]);
    home.ok(&["memory", "add", "the release train leaves on Thursdays"]);
    assert_ne!(outside_ovmem(home.path()), before);

    // Without --yes and no terminal: refused, nothing changed.
    let out = home.run(&["uninstall", "--all"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = home.run(&["uninstall", "--all", "--harness", "codex"]);
    assert_eq!(out.status.code(), Some(2), "--all names every harness itself");

    let out = home.ok(&["uninstall", "--all", "--yes"]);
    let err = stderr(&out);
    assert!(err.contains("memories kept") && err.contains("memory.db"), "{err}");
    assert_eq!(outside_ovmem(home.path()), before, "every hook, MCP entry and created file is gone");
    let left: Vec<String> = std::fs::read_dir(home.path().join(".ovmem"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("memory.db-"))
        .collect();
    assert_eq!(left, ["memory.db"], "only the memories stay");
    let out = home.ok(&["memory", "list", "--all", "--json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("release train"));

    // --purge: the memories too, and ovmem's home itself.
    home.ok(&["install", "--harness", "claude-code", "--yes"]);
    let out = home.ok(&["uninstall", "--all", "--purge", "--yes"]);
    assert!(stderr(&out).contains("removed"), "{}", stderr(&out));
    assert!(!home.path().join(".ovmem").exists(), "{:?}", tree(&home.path().join(".ovmem")).keys().collect::<Vec<_>>());
    assert_eq!(outside_ovmem(home.path()), before);
    let out = home.run(&["uninstall", "--purge", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "--purge needs --all");
}

//! Legacy and deprecated integrations, on a hand-made home where OpenViking's and Hindsight's
//! generations are installed side by side with third-party and user entries
//! (tests/fixtures/legacy-home, shaped after the real layouts in the references).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;

use common::copy_tree;

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
const LEGACY_HOME: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/legacy-home");

fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(root, root, &mut m);
    m
}

struct Home(tempfile::TempDir);

impl Home {
    fn empty() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn legacy() -> Self {
        let t = tempfile::tempdir().unwrap();
        copy_tree(Path::new(LEGACY_HOME), t.path());
        Self(t)
    }

    fn p(&self) -> &Path {
        self.0.path()
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(OVMEM)
            .args(args)
            .env_clear()
            .env("HOME", self.p())
            .env("PATH", "/usr/bin:/bin")
            .env("NO_COLOR", "1")
            .current_dir(self.p())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.p().join(rel)).unwrap()
    }
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn check_lists_every_generation_migrate_replaces_them_and_backups_restore_everything() {
    let home = Home::legacy();
    let before = files(home.p());

    let out = home.run(&["check", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    let ids: std::collections::BTreeSet<&str> =
        v["findings"].as_array().unwrap().iter().map(|f| f["integration"].as_str().unwrap()).collect();
    for id in [
        "openviking-cursor",
        "openviking-trae-cli-hooks",
        "openviking-claude-plugin",
        "openviking-codex-plugin",
        "hindsight-cline",
        "hindsight-legacy-plugins",
        "hindsight-coding-agents",
        "openviking-trae-ide",
        "openviking-zcode",
    ] {
        assert!(ids.contains(id), "{id} not found: {ids:?}");
    }
    let trae =
        v["findings"].as_array().unwrap().iter().find(|f| f["integration"] == "openviking-trae-cli-hooks").unwrap();
    assert_eq!(trae["kind"], "deprecated");
    assert!(
        trae["message"].as_str().unwrap().contains("examples/codex-memory-plugin"),
        "replacement must come from the manifest: {trae}"
    );
    let dup =
        v["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "duplicate").expect("duplicate on one event");
    assert_eq!(dup["severity"], "error");
    // Third-party entries are never findings.
    let text = v.to_string();
    for foreign in ["team-policy.sh", "ov-mcp-server", "commit-helper@acme", "prompt-lint", "linear", "say done"] {
        assert!(!text.contains(foreign), "{foreign} was reported");
    }

    // install warns and points to migrate.
    let out = home.run(&["install", "--harness", "cursor", "--dry-run"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("ovmem migrate --harness cursor"));

    let out = home.run(&["migrate", "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("was not written by ovmem"), "{err}");
    let out = home.run(&["check"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Only ovmem's and the user's own entries are left, byte for byte.
    let cursor = home.read(".cursor/hooks.json");
    assert!(
        cursor.contains(r#"{"command": "./hooks/team-policy.sh", "timeout": 5},"#)
            && cursor.contains(r#"{"command": "./hooks/team-audit.sh"}"#)
    );
    assert!(
        !cursor.contains("openviking")
            && !cursor.contains("hindsight")
            && cursor.contains("ovmem hook cursor beforeSubmitPrompt")
    );
    let mcp = home.read(".cursor/mcp.json");
    assert!(
        mcp.contains(r#""ov-mcp-server": {"url": "https://ov.internal.example/mcp"},"#)
            && mcp.contains(r#""github": {"command": "gh-mcp"}"#)
    );
    assert!(!mcp.contains("\"openviking\""));
    let toml = home.read(".trae/traecli.toml");
    assert!(toml.starts_with("# TRAE CLI config, edited by hand\nmodel = \"doubao\"\n"), "{toml}");
    assert!(
        toml.contains("# my own server, keep it\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # inline note\n")
            && !toml.contains("openviking"),
        "{toml}"
    );
    let codex = home.read(".codex/config.toml");
    assert!(
        codex.contains("# codex config (hand-written)")
            && codex.contains("url = \"https://mcp.linear.example/sse\" # keep"),
        "{codex}"
    );
    assert!(!codex.contains("openviking-memory@openviking") && !codex.contains("coding-agents"), "{codex}");
    let claude = home.read(".claude/settings.json");
    assert!(
        claude.contains(r#""commit-helper@acme": true"#)
            && claude.contains("~/bin/prompt-lint")
            && claude.contains("ovmem hook claude-code Stop")
    );
    assert!(!claude.contains("openviking") && !claude.contains("hindsight"), "{claude}");
    assert_eq!(home.read(".bashrc"), "export PATH=\"$HOME/bin:$PATH\"\nalias ll=\"ls -l\"\n");
    assert!(home.read(".trae/cli/hooks.json").contains("say done"));
    // TRAE CN: OpenViking's hooks went, the user's stayed, and ovmem's TraeCode hooks came.
    let trae_cn = home.read(".trae-cn/hooks.json");
    assert!(
        trae_cn.starts_with("{\"version\": 1, \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send trae\"}]}")
            && trae_cn.contains("ovmem hook traecode UserPromptSubmit")
            && !trae_cn.contains("openviking"),
        "{trae_cn}"
    );
    let zcode = home.read(".zcode/cli/config.json");
    assert!(
        !zcode.contains("openviking")
            && zcode.contains("\"enabled\": true")
            && zcode.contains("zcode-lint")
            && zcode.contains("files-mcp")
            && zcode.contains(r#"["hook","zcode","Stop"]"#),
        "{zcode}"
    );
    // Cline: Hindsight's Python hooks, lib/ and settings.json are gone; ovmem's hooks are there.
    assert!(home.read("Documents/Cline/Hooks/TaskStart").contains("exec "));
    assert!(
        !home.p().join("Documents/Cline/Hooks/lib").exists()
            && !home.p().join("Documents/Cline/Hooks/settings.json").exists()
    );
    assert!(
        !home.p().join(".openviking/agent-integrations/cursor").exists() && !home.p().join(".hindsight/codex").exists()
    );

    // Backups put everything back: pristine copies of edited files, moved items mirrored.
    let backups: Vec<PathBuf> =
        std::fs::read_dir(home.p().join(".ovmem/backups")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(backups.len(), 1);
    let moved = &backups[0];
    for (rel, bytes) in &before {
        let now = home.p().join(rel);
        let pristine = PathBuf::from(format!("{}.ovmem.bak", now.display()));
        let mirrored = moved.join(home.p().strip_prefix("/").unwrap()).join(rel);
        let restored = if pristine.exists() {
            std::fs::read(&pristine).unwrap()
        } else if mirrored.exists() {
            std::fs::read(&mirrored).unwrap()
        } else {
            std::fs::read(&now).unwrap_or_else(|_| panic!("{} is gone without a backup", rel.display()))
        };
        assert_eq!(&restored, bytes, "{} cannot be put back", rel.display());
    }
}

#[test]
fn uninstall_legacy_removes_them_without_installing_ovmem() {
    let home = Home::legacy();
    let out = home.run(&["uninstall", "--legacy", "--harness", "cursor", "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cursor = home.read(".cursor/hooks.json");
    assert!(!cursor.contains("openviking") && !cursor.contains("hindsight") && !cursor.contains("ovmem"), "{cursor}");
    assert!(!home.p().join(".ovmem/receipts").exists());
    // Only what belongs to the selected harness went: Cline's Hindsight hooks and OpenViking's
    // ZCode integration (no ovmem harness) are still there.
    assert!(home.read("Documents/Cline/Hooks/TaskStart").contains("lib.hooks_impl"));
    assert!(home.read(".zcode/cli/config.json").contains("openviking"));
    let out = home.run(&["uninstall", "--legacy"]);
    assert_eq!(out.status.code(), Some(2), "no --yes and no terminal must refuse");
}

#[test]
fn a_repository_is_checked_in_text_json_and_github_formats() {
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    std::fs::create_dir_all(r.join(".git")).unwrap();
    std::fs::create_dir_all(r.join(".clinerules/hooks/lib")).unwrap();
    std::fs::write(
        r.join(".clinerules/hooks/TaskComplete"),
        "#!/usr/bin/env python3\nfrom lib.hooks_impl import main_task_complete\nmain_task_complete()\n",
    )
    .unwrap();
    std::fs::create_dir_all(r.join(".claude")).unwrap();
    std::fs::write(
        r.join(".claude/settings.json"),
        "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"node /x/claude-code-memory-plugin/scripts/auto-capture.mjs\"}]}\n    ]\n  }\n}\n",
    )
    .unwrap();
    let home = Home::empty();
    let run = |args: &[&str]| home.run(args);
    let p = r.to_str().unwrap();
    // The user's own configs are not looked at with --project.
    std::fs::create_dir_all(home.p().join(".cursor")).unwrap();
    std::fs::write(
        home.p().join(".cursor/hooks.json"),
        r#"{"hooks":{"stop":[{"command":"x # openviking-memory OPENVIKING_INTEGRATION_ID"}]}}"#,
    )
    .unwrap();

    let out = run(&["check", "--project", p]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(".clinerules/hooks/TaskComplete:1")
            && text.contains(".claude/settings.json:4")
            && !text.contains(".cursor"),
        "{text}"
    );

    let out = run(&["check", "--project", p, "--format", "json"]);
    let v = json(&out);
    assert_eq!(v["scope"], "project");
    assert_eq!(v["findings"].as_array().unwrap().len(), 2, "{v}");
    for f in v["findings"].as_array().unwrap() {
        for k in ["file", "entry", "integration", "kind", "severity", "message", "fix"] {
            assert!(f.get(k).is_some(), "{k} missing in {f}");
        }
        assert!(f["fix"].as_str().unwrap().contains(&format!("--project {p}")));
    }

    let out = run(&["check", "--project", p, "--format", "github"]);
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.iter().any(|l| l
            .starts_with("::warning file=.claude/settings.json,line=4,title=ovmem Legacy openviking-claude-plugin::")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.starts_with("::warning file=.clinerules/hooks/TaskComplete,line=1,")), "{lines:?}");

    // ovmem installed next to a legacy hook on the same event: a duplicate, an error.
    let out = run(&["install", "--harness", "claude-code", "--project", p]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&run(&["check", "--project", p, "--format", "json"]));
    assert!(v["findings"].as_array().unwrap().iter().any(|f| f["kind"] == "duplicate" && f["entry"] == "Stop"), "{v}");

    let out = run(&["migrate", "--project", p, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(run(&["check", "--project", p]).status.code(), Some(0));

    // An unparseable file is exit 2, named.
    std::fs::write(r.join(".claude/settings.json"), "{ nope").unwrap();
    let out = run(&["check", "--project", p, "--format", "github"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("::error file=.claude/settings.json::"));
}

#[test]
fn hooks_pointing_at_an_old_runtime_are_drift() {
    let home = tempfile::tempdir().unwrap();
    let run = |ovmem_home: &str, args: &[&str]| {
        Command::new(OVMEM)
            .args(args)
            .env_clear()
            .env("HOME", home.path())
            .env("OVMEM_HOME", home.path().join(ovmem_home))
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    assert!(run("old", &["install", "--harness", "cursor,cline"]).status.success());
    let v = json(&run("new", &["check", "--format", "json"]));
    let drift: Vec<&serde_json::Value> =
        v["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == "ovmem-drift").collect();
    assert_eq!(drift.len(), 13, "{v}");
    assert!(drift[0]["message"].as_str().unwrap().contains("/old/bin/ovmem"));
    // The old home's runtime is still there: a second OVMEM_HOME does not take its hooks over
    // silently, and says how to proceed.
    let before = std::fs::read(home.path().join(".cursor/hooks.json")).unwrap();
    let out = run("new", &["install", "--harness", "cursor,cline"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("another ovmem home") && err.contains("OVMEM_HOME=") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(home.path().join(".cursor/hooks.json")).unwrap(), before);
    assert!(run("new", &["install", "--harness", "cursor,cline", "--force"]).status.success());
    assert_eq!(run("new", &["check"]).status.code(), Some(0));
    let cursor = std::fs::read_to_string(home.path().join(".cursor/hooks.json")).unwrap();
    assert!(!cursor.contains("/old/bin/ovmem") && cursor.matches("new/bin/ovmem hook cursor").count() == 7, "{cursor}");
}

#[test]
fn entries_from_an_older_template_are_drift_until_reinstalled() {
    let home = Home::empty();
    let run = |args: &[&str]| home.run(args);
    assert!(run(&["install", "--harness", "claude-code"]).status.success());
    assert_eq!(run(&["check"]).status.code(), Some(0));
    // What an older ovmem (a different timeout) would have written.
    let path = home.p().join(".claude/settings.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.find("hook claude-code Stop").unwrap();
    let t = at + text[at..].find("\"timeout\": 30").unwrap();
    std::fs::write(&path, format!("{}\"timeout\": 10{}", &text[..t], &text[t + 13..])).unwrap();
    let v = json(&run(&["check", "--format", "json"]));
    let f = &v["findings"][0];
    assert_eq!((f["kind"].as_str(), f["entry"].as_str()), (Some("ovmem-drift"), Some("hooks.Stop[0]")), "{v}");
    assert!(run(&["install", "--harness", "claude-code", "--force"]).status.success());
    assert_eq!(run(&["check"]).status.code(), Some(0));
}

/// ovmem's entry written another way the shell reads alike (blanks, quotes, a comment) still
/// runs ovmem: a second one on an event is a duplicate, and one alone is drift. A user's hook
/// that only names ovmem in an argument is neither.
#[test]
fn an_ovmem_entry_edited_by_hand_is_still_counted_and_reported() {
    let home = Home::empty();
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    let p = repo.path().to_str().unwrap();
    assert!(home.run(&["install", "--harness", "codex", "--project", p]).status.success());
    let path = repo.path().join(".codex/hooks.json");
    let installed: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let cmd = installed["hooks"]["Stop"][0]["hooks"][0]["command"].as_str().unwrap().to_string();
    let (bin, rest) = cmd.split_once(' ').unwrap();
    let check = |stop: &[&str]| {
        let mut v = installed.clone();
        let group = v["hooks"]["Stop"][0].clone();
        v["hooks"]["Stop"] = stop
            .iter()
            .map(|c| {
                let mut g = group.clone();
                g["hooks"][0]["command"] = (*c).into();
                g
            })
            .collect();
        std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        let out = home.run(&["check", "--project", p, "--format", "json"]);
        (out.status.code(), json(&out))
    };
    let kinds = |v: &serde_json::Value| -> Vec<(String, String)> {
        let f = v["findings"].as_array().unwrap();
        f.iter().map(|f| (f["kind"].as_str().unwrap().into(), f["entry"].as_str().unwrap().into())).collect()
    };
    assert_eq!(check(&[&cmd]).0, Some(0));
    for edited in
        [format!("{bin}  {rest}"), format!("\"{bin}\" {rest}"), format!("{cmd} # mine"), format!("X=1 {cmd}; true")]
    {
        let (code, v) = check(&[&cmd, &edited]);
        assert_eq!(code, Some(1), "{edited}: {v}");
        let dup = v["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "duplicate").expect("a duplicate");
        assert!(dup["message"].as_str().unwrap().contains("2 ovmem hooks run on Stop"), "{edited}: {dup}");
        assert_eq!(dup["integration"], "ovmem+ovmem", "{dup}");
        // Alone, it is drift: not the entry this ovmem installs.
        let (code, v) = check(&[&edited]);
        assert_eq!(code, Some(1), "{edited}: {v}");
        assert_eq!(kinds(&v), [("ovmem-drift".to_string(), "hooks.Stop[0].hooks[0]".to_string())], "{edited}: {v}");
    }
    // A hook of the user's that only mentions ovmem's command runs something else.
    for theirs in [format!("echo {cmd} >> /tmp/log"), format!("notify-send '{cmd}'"), format!("true # {cmd}")] {
        let (code, v) = check(&[&cmd, &theirs]);
        assert_eq!(code, Some(0), "{theirs}: {v}");
    }
}

/// Taking a legacy table out of a CRLF config with a byte-order mark keeps both, and every
/// other line, byte for byte.
#[test]
fn legacy_toml_tables_go_without_touching_crlf_or_the_bom() {
    let home = Home::legacy();
    let path = home.p().join(".codex/config.toml");
    let lf = std::fs::read_to_string(&path).unwrap();
    let crlf = format!("\u{feff}{}", lf.replace('\n', "\r\n"));
    std::fs::write(&path, &crlf).unwrap();
    let out = home.run(&["uninstall", "--legacy", "--harness", "codex", "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after = home.read(".codex/config.toml");
    assert!(!after.contains("openviking-memory@") && !after.contains("coding-agents"), "{after}");
    assert!(after.starts_with('\u{feff}'), "the BOM went: {after:?}");
    assert!(!after.replace("\r\n", "").contains('\n'), "a line lost its CRLF: {after:?}");
    // Every line that stays is one of the original lines.
    let before: Vec<&str> = crlf.trim_start_matches('\u{feff}').split("\r\n").collect();
    for line in after.trim_start_matches('\u{feff}').split("\r\n") {
        assert!(before.contains(&line), "`{line}` was not in the file");
    }
}

/// `check` as a CI gate on a repository that tries to pass it: a legacy hook written with JSON
/// escapes or a doubled `/`, one in `settings.local.json`, Hindsight's plugin enabled in the
/// project, a Cline hook with blanks around a `.`, two copies of ovmem's own entry on one event.
/// Each is a finding, and nothing of the files' control characters reaches the terminal.
#[test]
fn check_is_not_fooled_by_disguises_and_prints_nothing_raw() {
    let home = Home::empty();
    let fresh = || {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join(".git")).unwrap();
        std::fs::create_dir_all(repo.path().join(".claude")).unwrap();
        repo
    };
    let code = |repo: &tempfile::TempDir| home.run(&["check", "--project", repo.path().to_str().unwrap()]);
    let stop =
        |command: &str| format!(r#"{{"hooks":{{"Stop":[{{"hooks":[{{"type":"command","command":"{command}"}}]}}]}}}}"#);
    for (file, text) in [
        ("settings.json", stop(r"node \/x\/claude-code-memory-plugin\/scripts\/auto\u002dcapture.mjs")),
        ("settings.local.json", stop("node /y/claude-code-memory-plugin/scripts/auto-capture.mjs")),
        ("settings.json", stop("node /home/u/.hindsight//coding-agents/./hooks/stop.js")),
        ("settings.json", r#"{"enabledPlugins":{"hindsight-memory@hindsight":true}}"#.to_string()),
    ] {
        let repo = fresh();
        std::fs::write(repo.path().join(".claude").join(file), &text).unwrap();
        let out = code(&repo);
        assert_eq!(out.status.code(), Some(1), "{file}: {text}\n{}", String::from_utf8_lossy(&out.stdout));
    }
    let repo = fresh();
    std::fs::create_dir_all(repo.path().join(".clinerules/hooks")).unwrap();
    std::fs::write(
        repo.path().join(".clinerules/hooks/TaskStart"),
        "#!/usr/bin/env python3\nfrom lib .  hooks_impl import main_task_start\nmain_task_start()\n",
    )
    .unwrap();
    assert_eq!(code(&repo).status.code(), Some(1), "blanks around a `.` in Python");
    // A hook script that cannot be read as a file is reported (exit 2), not passed over.
    let repo = fresh();
    std::fs::create_dir_all(repo.path().join(".clinerules/hooks")).unwrap();
    let fifo = repo.path().join(".clinerules/hooks/TaskComplete");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let out = code(&repo);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("TaskComplete"));

    // Two copies of ovmem's own entry on one event run it twice.
    let repo = fresh();
    let p = repo.path().to_str().unwrap();
    assert!(home.run(&["install", "--harness", "codex", "--project", p]).status.success());
    assert_eq!(code(&repo).status.code(), Some(0));
    let path = repo.path().join(".codex/hooks.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let first = v["hooks"]["Stop"][0].clone();
    v["hooks"]["Stop"].as_array_mut().unwrap().push(first);
    std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = home.run(&["check", "--project", p, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    let dup = v["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "duplicate").expect("a duplicate");
    assert!(dup["message"].as_str().unwrap().contains("2 ovmem hooks run on Stop"), "{dup}");

    // Control sequences in a file's keys and a file name with a line break.
    let repo = fresh();
    std::fs::write(
        repo.path().join(".claude/settings.json"),
        r#"{"hooks":{"Stop\u001b]52;c;aGk=\u0007\u001b[2J":[{"hooks":[{"type":"command","command":"node /x/claude-code-memory-plugin/scripts/auto-capture.mjs"}]}]}}"#,
    )
    .unwrap();
    let out = code(&repo);
    assert_eq!(out.status.code(), Some(1));
    assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b), "{}", String::from_utf8_lossy(&out.stdout));
}

//! The URI guard's cases: what is denied, what is a mere mention, in every harness's shape.

use super::*;
use serde_json::json;

fn schemes() -> Vec<String> {
    vec!["viking://".into(), "ovmem://".into()]
}

fn guarded() -> Vec<String> {
    [
        "Read",
        "Glob",
        "Grep",
        "Bash",
        "LS",
        "NotebookRead",
        "read_file",
        "read_many_files",
        "glob",
        "list_directory",
        "search_file_content",
        "grep_search",
        "run_shell_command",
        "execute_command",
        "list_files",
        "search_files",
        "shell",
        "exec_command",
        "apply_patch",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn deny(tool: &str, input: Value) -> bool {
    check(tool, Some(&input), &schemes(), &guarded()).is_some()
}

fn bash(cmd: &str) -> bool {
    deny("Bash", json!({ "command": cmd }))
}

#[test]
fn denies_reading_memory_uris() {
    assert!(deny("Read", json!({"file_path": "viking://user/memories/profile.md"})));
    assert!(deny("Read", json!({"file_path": "OVMEM://x"})));
    assert!(deny("Glob", json!({"pattern": "viking://resources/**"})));
    assert!(deny("Grep", json!({"pattern": "TODO", "path": "viking://resources"})));
    assert!(deny("read_file", json!({"path": "viking://a"})));
    assert!(bash("cat viking://user/memories/profile.md"));
    assert!(bash("cat 'viking://x y' | head"));
    assert!(bash("cd /tmp && ls -la viking://resources/"));
    assert!(bash("grep TODO viking://resources/a.md"));
    assert!(deny("execute_command", json!({"command": "head -n 5 ovmem://m/1"})));
}

/// The file and shell tools of the harnesses added with issue 12, with their own parameter
/// names (from the real CLIs' tool schemas).
#[test]
fn the_newer_harnesses_tools() {
    let tools: Vec<String> =
        ["view", "LS", "Execute", "launch-process", "background_process", "find", "list_directory", "read", "bash"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let deny = |tool: &str, input: Value| check(tool, Some(&input), &schemes(), &tools).is_some();
    assert!(deny("view", json!({"path": "viking://user/memories/profile.md", "view_range": [1, 5]})));
    assert!(deny("LS", json!({"directory_path": "viking://resources", "ignorePatterns": []})));
    assert!(deny("Execute", json!({"command": "cat viking://m/a", "riskLevel": "low", "summary": "x"})));
    assert!(deny("launch-process", json!({"command": "head viking://m/a", "wait": true, "cwd": "/p"})));
    assert!(deny("background_process", json!({"command": "cat ovmem://m/1"})));
    assert!(deny("find", json!({"pattern": "*.md", "path": "viking://resources"})));
    assert!(deny("read", json!({"filePath": "viking://m/a"})));
    assert!(deny("bash", json!({"command": "cat viking://m/a", "description": "x"})));
    // A mention is not a read; a tool no adapter guards is never judged.
    assert!(!deny("Execute", json!({"command": "grep -r viking:// src", "riskLevel": "low"})));
    assert!(!deny("launch-process", json!({"command": "echo viking://x"})));
    assert!(!deny("write", json!({"filePath": "viking://m/a"})));
}

#[test]
fn every_path_like_parameter_counts() {
    let cases = [
        ("read_many_files", json!({"paths": ["src/a.rs", "viking://m/a"]})),
        ("read_many_files", json!({"paths": ["src"], "include": ["*.md", "viking://m/**"]})),
        ("read_many_files", json!({"include": "viking://m/**"})),
        ("glob", json!({"pattern": "{src/*,viking://m/*}"})),
        ("glob", json!({"pattern": "*.md", "path": "viking://m"})),
        ("glob", json!({"pattern": "*.md", "dir_path": "viking://m"})),
        ("search_file_content", json!({"pattern": "x", "path": "viking://m"})),
        ("search_file_content", json!({"pattern": "x", "include": "viking://m/*.md"})),
        ("grep_search", json!({"pattern": "x", "dir_path": "viking://m"})),
        ("list_directory", json!({"path": "viking://m"})),
        ("list_directory", json!({"dir_path": "viking://m"})),
        ("Grep", json!({"pattern": "x", "glob": "viking://m/*.md"})),
        ("Grep", json!({"pattern": "x", "path": ".", "glob": "{*.rs,viking://*}"})),
        ("LS", json!({"path": "viking://m"})),
        ("NotebookRead", json!({"notebook_path": "viking://m/n.ipynb"})),
        ("Read", json!({"filePath": "viking://m/a"})),
        ("list_files", json!({"path": "viking://m", "recursive": true})),
        ("search_files", json!({"path": ".", "regex": "x", "file_pattern": "viking://m/*"})),
        ("search_files", json!({"path": "viking://m", "regex": "x"})),
        ("read_file", json!({"args": {"file": [{"path": "src/a.rs"}, {"path": "viking://m/a"}]}})),
        ("run_shell_command", json!({"command": "ls", "directory": "viking://m"})),
        ("shell", json!({"command": ["cat", "viking://m/a"]})),
        ("shell", json!({"command": ["bash", "-lc", "cat viking://m/a"], "workdir": "/w"})),
        ("exec_command", json!({"cmd": "cat viking://m/a"})),
        ("apply_patch", json!({"input": "*** Begin Patch\n*** Update File: viking://m/a\n@@\n-a\n+b\n*** End Patch"})),
        (
            "shell",
            json!({"command": ["apply_patch", "*** Begin Patch\n*** Add File: viking://m/b\n+x\n*** End Patch"]}),
        ),
        ("Read", json!("{\"file_path\": \"viking://m/a\"}")),
        ("Read", json!({"arguments": "{\"path\": \"viking://m/a\"}"})),
        ("Bash", json!("cat viking://m/a")),
    ];
    for (tool, input) in cases {
        assert!(deny(tool, input.clone()), "{tool} {input} was allowed");
    }
}

#[test]
fn shell_wrappers_quoting_and_substitution_do_not_hide_a_read() {
    for cmd in [
        "sh -c 'cat viking://m/a'",
        "bash -c \"head viking://m/a\"",
        "bash -lc 'cd /tmp; cat viking://m/a'",
        "zsh -c 'cat viking://m/a'",
        "/bin/sh -ec 'cat viking://m/a'",
        "eval 'cat viking://m/a'",
        "eval cat viking://m/a",
        "env FOO=1 cat viking://m/a",
        "env -i PATH=/bin cat viking://m/a",
        "env -S 'cat viking://m/a'",
        "sudo cat viking://m/a",
        "sudo -u root -E cat viking://m/a",
        "nohup cat viking://m/a &",
        "timeout 5 cat viking://m/a",
        "timeout -s KILL 5s cat viking://m/a",
        "nice -n 10 cat viking://m/a",
        "command cat viking://m/a",
        "exec cat viking://m/a",
        "time cat viking://m/a",
        "xargs cat <<< viking://m/a",
        "echo viking://m/a | xargs cat",
        "printf 'viking://m/a\\n' | xargs -I{} cat {}",
        "echo viking://m/a | xargs -n1 head -5",
        "xargs -a viking://m/list cat",
        "find viking://m -name '*.md'",
        "find . -name x -exec cat viking://m/a \\;",
        "find . -exec sh -c 'cat viking://m/a' \\;",
        "cat $'viking://m/a'",
        "cat $'\\x76iking://m/a'",
        "cat $'\\166iking://m/a'",
        "cat vik''ing://m/a",
        "cat \"viking:\"//m/a",
        "cat $(echo viking://m/a)",
        "cat `echo viking://m/a`",
        "cat \"$(printf 'viking://%s' m/a)\"",
        "echo $(cat viking://m/a)",
        "x=$(cat viking://m/a)",
        "u=viking://m/a; cat \"$u\"",
        "export U=viking://m/a && cat $U",
        "cat ${NOPE:-viking://m/a}",
        "for f in viking://m/a; do cat \"$f\"; done",
        "cat < viking://m/a",
        "wc -l <viking://m/a",
        "exec 3< viking://m/a",
        "echo 'cat viking://m/a' | sh",
        "bash <<< 'cat viking://m/a'",
        "sh <<EOF\ncat viking://m/a\nEOF",
        "cat {viking://m/a,b}",
        "if true; then cat viking://m/a; fi",
        "{ cat viking://m/a; }",
        "(cat viking://m/a)",
        "source viking://m/a.sh",
        ". viking://m/a.sh",
        "bash viking://m/a.sh",
        "python3 viking://m/a.py",
        "grep -f viking://m/patterns src/",
        "rg --file=viking://m/p .",
        "sed -f viking://m/a.sed x",
        "awk -f viking://m/a.awk x",
        "jq . viking://m/a.json",
        "jq --slurpfile x viking://m/a.json -n '$x'",
        "dd if=viking://m/a of=/tmp/x",
        "cp viking://m/a /tmp/",
        "tar -cf /tmp/x.tar -C viking://m .",
        "parallel cat ::: viking://m/a",
        "watch cat viking://m/a",
        "su -c 'cat viking://m/a' root",
        "strace -o /tmp/t cat viking://m/a",
        "cat --number -- viking://m/a",
        "less viking://m/a",
        "cat <(cat viking://m/a)",
        "cat${IFS}viking://m/a",
        "c=cat; $c viking://m/a",
        "$(echo cat) viking://m/a",
        "cat ${HOME:+viking://m/a}",
        "sh -c 'cat \"$1\"' _ viking://m/a",
        "bash -c 'exec \"$@\"' _ cat viking://m/a",
        "read u <<< viking://m/a; cat $u",
        "echo Y2F0IHZpa2luZzovL20vYQ== | base64 -d | sh",
        "eval \"$(echo Y2F0IHZpa2luZzovL20vYQ== | base64 --decode)\"",
        "echo a/m//:gnikiv | rev | xargs cat",
        "bash <(echo 'cat viking://m/a')",
        "source <(printf 'cat viking://m/a')",
        "xargs -0 cat < <(printf 'viking://m/a')",
        "xargs -a <(echo viking://m/a) cat",
        "script -qc 'cat viking://m/a' /dev/null",
        "su -lc 'cat viking://m/a' root",
        "busybox cat viking://m/a",
        "cat 0<viking://m/a",
        "< viking://m/a cat",
        "sh -c \"sh -c 'sh -c \\\"cat viking://m/a\\\"'\"",
    ] {
        assert!(bash(cmd), "allowed: {cmd}");
    }
}

#[test]
fn never_denies_text_mentions_or_ordinary_paths() {
    assert!(!deny("Grep", json!({"pattern": "viking://", "path": "/src"})));
    assert!(!deny("Grep", json!({"pattern": "viking://x", "path": "src", "glob": "*.rs"})));
    assert!(!deny("search_file_content", json!({"pattern": "viking://m/a"})));
    assert!(!deny("search_files", json!({"path": "src", "regex": "viking://m", "file_pattern": "*.ts"})));
    assert!(!deny("read_many_files", json!({"paths": ["src/"], "exclude": ["viking://x"]})));
    for cmd in [
        "grep -rn 'viking://' src/",
        "grep -rn viking://m/a src/",
        "rg -e viking://x src",
        "rg -e viking:// .",
        "rg --fixed-strings 'viking://m' -g '*.md'",
        "rg 'viking://' | head -5",
        "echo see viking://x",
        "echo viking://x > /tmp/note.txt",
        "git commit -m 'docs: viking://x'",
        "git commit -m \"see viking://x\"",
        "git log --grep=viking://x",
        "printf '%s' 'viking://'",
        "printf '%s\\n' viking://m/a",
        "cat viking://",
        "sed -i 's#viking://#ovmem://#g' docs/a.md",
        "sed -e 's/viking:\\/\\///' a.md",
        "awk '/viking:/ {print}' notes.md",
        "jq '.uri == \"viking://m/a\"' data.json",
        "python3 -c \"print('viking://m/a')\"",
        "node -e 'console.log(\"viking://m/a\")'",
        "python3 tool.py --uri viking://m/a",
        "find . -name '*viking://*'",
        "find src -type f -exec grep -l 'viking://' {} +",
        "curl -d 'uri=viking://m/a' http://127.0.0.1:1933/api",
        "ovmem memory search viking://m/a",
        "bash -c 'echo viking://m/a'",
        "echo viking://m/a | xargs echo",
        "echo viking://m/a | xargs -I{} grep {} src/",
        "xargs echo <<< viking://m/a",
        "cat README.md | grep viking://",
        "cat <<'EOF' > notes.md\nuse viking://m/a\nEOF",
        "echo $(printf viking://m/a)",
        "U=viking://m/a; echo \"$U\"",
        "grep -rl 'viking://' src | xargs sed -i 's/viking:/ov:/'",
        "ls -la src/viking",
        "cat /tmp/viking://x",
        "cat ./viking://x",
        "echo \"cat viking://m/a\"",
        "test -e viking://m/a && echo yes",
    ] {
        assert!(!bash(cmd), "denied: {cmd}");
    }
    assert!(!deny("Read", json!({"file_path": "/home/u/viking/notes.md"})));
    assert!(!deny("Read", json!({"file_path": "/tmp/viking://x"})));
    assert!(!deny("Write", json!({"file_path": "viking://x"})));
    assert!(!bash(""));
    assert!(!deny("Bash", json!({"command": 42})));
    assert!(!deny("Bash", json!({})));
}

#[test]
fn pathological_inputs_end_quickly() {
    assert!(bash(&("eval ".repeat(40) + "cat viking://m/a")), "past the depth limit a URI is denied");
    assert!(!bash(&("eval ".repeat(8) + "echo viking://m/a")), "a mention within the limit stays a mention");
    let mut nested = "cat viking://m/a".to_string();
    for _ in 0..5 {
        nested = format!("sh -c {}", shell::quote(&nested));
    }
    assert!(bash(&nested), "{nested}");
    let wide = "echo a; ".repeat(20_000) + "cat viking://m/a";
    let t = std::time::Instant::now();
    assert!(bash(&wide));
    assert!(t.elapsed() < std::time::Duration::from_secs(2));
    let bomb = "$(".repeat(500) + "cat viking://m/a" + &")".repeat(500);
    assert!(bash(&bomb));
    assert!(!bash(&"$(".repeat(500)));
}

proptest::proptest! {
    #[test]
    fn check_never_panics(cmd in "[ -~\\n]{0,80}") {
        let _ = bash(&cmd);
    }

    #[test]
    fn check_never_panics_on_unicode(cmd in "(\\PC|[-'\"$`\\\\(){}<>|;&]){0,60}") {
        let _ = bash(&cmd);
        let _ = bash(&format!("xargs -{cmd} cat"));
        let _ = deny("Read", json!({ "file_path": cmd, "paths": [cmd] }));
    }
}

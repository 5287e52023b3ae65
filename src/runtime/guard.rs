//! The URI guard: local file tools cannot open virtual memory URIs (`viking://…`, `ovmem://…`),
//! so a Read of one, or a shell command passing one as a file argument, is denied with a hint
//! to use the memory tools. Only path-like arguments count: grepping source code for the text
//! `viking://`, or echoing it, is never denied (OpenViking's guard denies both).

use serde_json::Value;

/// Which kind of tool a harness tool name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolKind {
    Read,
    Glob,
    Grep,
    Shell,
}

fn classify(tool: &str) -> Option<ToolKind> {
    match tool.trim().to_ascii_lowercase().as_str() {
        "read" | "read_file" | "readfile" | "read_many_files" | "view" | "ls" | "list_files" | "listfiles"
        | "list_directory" => Some(ToolKind::Read),
        "glob" => Some(ToolKind::Glob),
        "grep" | "search_files" | "searchfiles" | "search_file_content" => Some(ToolKind::Grep),
        "bash" | "shell" | "execute_command" | "exec_command" | "runcommand" | "run_command" | "run_shell_command" => {
            Some(ToolKind::Shell)
        }
        _ => None,
    }
}

const PATH_KEYS: &[&str] = &[
    "file_path",
    "filePath",
    "filepath",
    "absolute_path",
    "dir_path",
    "path",
    "uri",
    "target_uri",
    "targetUri",
    "notebook_path",
];

/// The memory URI in `s`, when `s` is one (a scheme from `schemes` followed by a non-empty path).
fn memory_uri<'a>(s: &'a str, schemes: &[String]) -> Option<&'a str> {
    let t = s.trim();
    schemes.iter().find_map(|scheme| {
        let head = t.get(..scheme.len())?;
        (head.eq_ignore_ascii_case(scheme) && t.len() > scheme.len()).then_some(t)
    })
}

/// Returns the reason to deny, or `None` to allow.
pub fn check(tool: &str, input: Option<&Value>, schemes: &[String], guarded: &[String]) -> Option<String> {
    if !guarded.iter().any(|g| g.eq_ignore_ascii_case(tool)) {
        return None;
    }
    let kind = classify(tool)?;
    let input = input?;
    let uri = match kind {
        ToolKind::Read | ToolKind::Grep | ToolKind::Glob => {
            let mut keys: Vec<&str> = PATH_KEYS.to_vec();
            if kind == ToolKind::Glob {
                keys.push("pattern");
            }
            keys.iter().find_map(|k| {
                input.get(*k).and_then(Value::as_str).and_then(|s| memory_uri(s, schemes)).map(String::from)
            })
        }
        ToolKind::Shell => {
            let cmd = match input.get("command") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
                _ => return None,
            };
            shell_uri_argument(&cmd, schemes)
        }
    }?;
    Some(format!(
        "`{uri}` is a memory URI, not a file on this disk, so {tool} cannot open it. \
         Use the memory tools instead (the OpenViking or ovmem MCP `read` / `search` tools)."
    ))
}

/// Commands whose arguments are text, never files.
const TEXT_ONLY: &[&str] = &["echo", "printf", "git", "gh", "ovmem", "ov", "openviking"];
/// Commands whose first positional argument is a pattern, not a file.
const PATTERN_FIRST: &[&str] = &["grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "jq", "find"];

/// The first memory URI passed as a file argument in a shell command line.
fn shell_uri_argument(cmd: &str, schemes: &[String]) -> Option<String> {
    for segment in crate::shell::commands(cmd, true) {
        let mut words = segment.iter().skip_while(|w| is_assignment(w)).map(String::as_str);
        let Some(program) = words.next() else { continue };
        let name = program.rsplit('/').next().unwrap_or(program);
        if TEXT_ONLY.contains(&name) {
            continue;
        }
        let pattern_first = PATTERN_FIRST.contains(&name);
        let mut skipped_pattern = false;
        let mut skip_next = false;
        for w in words {
            if skip_next {
                skip_next = false;
                continue;
            }
            if pattern_first && (w == "-e" || w == "--regexp" || w == "-f" || w == "--name" || w == "-name") {
                skip_next = true;
                skipped_pattern = true;
                continue;
            }
            if w.starts_with('-') {
                continue;
            }
            if pattern_first && !skipped_pattern && name != "find" {
                skipped_pattern = true;
                continue;
            }
            if let Some(u) = memory_uri(w, schemes) {
                return Some(u.to_string());
            }
        }
    }
    None
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemes() -> Vec<String> {
        vec!["viking://".into(), "ovmem://".into()]
    }

    fn guarded() -> Vec<String> {
        ["Read", "Glob", "Grep", "Bash", "read_file", "execute_command"].iter().map(|s| s.to_string()).collect()
    }

    fn deny(tool: &str, input: Value) -> bool {
        check(tool, Some(&input), &schemes(), &guarded()).is_some()
    }

    #[test]
    fn denies_reading_memory_uris() {
        assert!(deny("Read", json!({"file_path": "viking://user/memories/profile.md"})));
        assert!(deny("Read", json!({"file_path": "OVMEM://x"})));
        assert!(deny("Glob", json!({"pattern": "viking://resources/**"})));
        assert!(deny("Grep", json!({"pattern": "TODO", "path": "viking://resources"})));
        assert!(deny("read_file", json!({"path": "viking://a"})));
        assert!(deny("Bash", json!({"command": "cat viking://user/memories/profile.md"})));
        assert!(deny("Bash", json!({"command": "cat 'viking://x y' | head"})));
        assert!(deny("Bash", json!({"command": "cd /tmp && ls -la viking://resources/"})));
        assert!(deny("Bash", json!({"command": "grep TODO viking://resources/a.md"})));
        assert!(deny("execute_command", json!({"command": "head -n 5 ovmem://m/1"})));
    }

    #[test]
    fn never_denies_text_mentions_or_ordinary_paths() {
        assert!(!deny("Grep", json!({"pattern": "viking://", "path": "/src"})));
        assert!(!deny("Bash", json!({"command": "grep -rn 'viking://' src/"})));
        assert!(!deny("Bash", json!({"command": "rg -e viking://x src"})));
        assert!(!deny("Bash", json!({"command": "echo see viking://x"})));
        assert!(!deny("Bash", json!({"command": "git commit -m 'docs: viking://x'"})));
        assert!(!deny("Bash", json!({"command": "cat viking://"})));
        assert!(!deny("Read", json!({"file_path": "/home/u/viking/notes.md"})));
        assert!(!deny("Read", json!({"file_path": "/tmp/viking://x"})));
        assert!(!deny("Write", json!({"file_path": "viking://x"})));
        assert!(!deny("Bash", json!({"command": 42})));
        assert!(!deny("Bash", json!({})));
    }
}

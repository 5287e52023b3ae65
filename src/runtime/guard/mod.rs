//! The URI guard: local file tools cannot open virtual memory URIs (`viking://…`, `ovmem://…`),
//! so a tool call that would read one as a file is denied with a hint to use the memory tools.
//! Every path-like parameter counts (strings, arrays, glob fields, nested argument objects), and
//! shell commands are read as bash would run them: wrappers (`sh -c`, `eval`, `env`, `sudo`,
//! `timeout`, `xargs`, `find -exec` …), ANSI-C quoting, command substitution, variables,
//! here-strings and redirections. A mere mention is never denied: grepping source code for the
//! text `viking://`, echoing it, or a commit message naming it (OpenViking's guard denies those).

use std::collections::HashMap;

use serde_json::Value;

use crate::shell::{self, Part, Redir, Word};

mod commands;
mod eval;
#[cfg(test)]
mod tests;

use commands::*;
use eval::Eval;

/// Which kind of tool a harness tool name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolKind {
    Read,
    Glob,
    Grep,
    Shell,
    Patch,
}

fn classify(tool: &str) -> ToolKind {
    let t = tool.trim().to_ascii_lowercase();
    if t.contains("patch") {
        ToolKind::Patch
    } else if ["bash", "shell", "command", "exec", "terminal", "process"].iter().any(|k| t.contains(k))
        || t == "sh"
        || t == "run"
        || t.starts_with("run_")
    {
        // `execute` (Factory Droid), `launch-process` (Auggie), `background_process` (Kilo Code).
        ToolKind::Shell
    } else if t.contains("glob") || t == "find" {
        // Pi's `find` takes a glob pattern and a path.
        ToolKind::Glob
    } else if t.contains("grep") || t.contains("search") {
        ToolKind::Grep
    } else {
        ToolKind::Read
    }
}

/// Parameters that name files or directories to read, in any harness's file tools.
const PATH_KEYS: &[&str] = &[
    "file_path",
    "filepath",
    "path",
    "paths",
    "absolute_path",
    "dir_path",
    "dirpath",
    "directory",
    "directory_path",
    "folder",
    "dir",
    "notebook_path",
    "uri",
    "uris",
    "target_uri",
    "target_file",
    "target_directory",
    "file",
    "files",
    "filename",
    "file_paths",
    "include",
    "includes",
    "source",
];
/// Glob parameters (Glob's `pattern`, Grep's `glob`, Cline's `file_pattern`): paths too.
const GLOB_KEYS: &[&str] = &["pattern", "patterns", "glob", "globs", "file_pattern"];
/// Working directories of shell tools.
const DIR_KEYS: &[&str] = &["dir_path", "directory", "cwd", "workdir", "working_directory"];
/// Command parameters of shell tools.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "commands", "script", "command_line"];

/// `filePath` and `file_path` alike.
fn key_is(key: &str, set: &[&str]) -> bool {
    let k: String = key.chars().filter(|c| *c != '_' && *c != '-').collect::<String>().to_ascii_lowercase();
    set.iter().any(|s| s.replace('_', "") == k)
}

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
    let input = input?;
    let kind = classify(tool);
    // Some harnesses pass the arguments as a JSON string; a shell tool may get the bare command.
    let parsed;
    let input = match input {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v) if v.is_object() || v.is_array() => {
                parsed = v;
                &parsed
            }
            _ if kind == ToolKind::Shell => {
                parsed = serde_json::json!({ "command": s });
                &parsed
            }
            _ => input,
        },
        _ => input,
    };
    let uri = match kind {
        ToolKind::Shell => shell_input(input, schemes),
        ToolKind::Patch => patch_input(input, schemes),
        kind => path_input(input, kind, schemes, 0),
    }?;
    Some(format!(
        "`{uri}` is a memory URI, not a file on this disk, so {tool} cannot open it. \
         Use the memory tools instead (the OpenViking or ovmem MCP `read` / `search` tools)."
    ))
}

/// The first memory URI in a path-like parameter, at any depth of the arguments.
fn path_input(v: &Value, kind: ToolKind, schemes: &[String], depth: usize) -> Option<String> {
    if depth > 6 {
        return None;
    }
    match v {
        Value::Object(m) => m.iter().find_map(|(k, val)| {
            let pathy = key_is(k, PATH_KEYS) || (kind != ToolKind::Grep || k != "pattern") && key_is(k, GLOB_KEYS);
            let pathy = pathy && !(kind == ToolKind::Grep && key_is(k, &["pattern", "patterns"]));
            if pathy {
                if let Some(u) = path_value(val, schemes) {
                    return Some(u);
                }
            }
            match val {
                Value::Object(_) | Value::Array(_) => path_input(val, kind, schemes, depth + 1),
                // Arguments nested as a JSON string (`"arguments": "{\"path\": …}"`).
                Value::String(s) if s.trim_start().starts_with(['{', '[']) => {
                    serde_json::from_str::<Value>(s).ok().and_then(|v| path_input(&v, kind, schemes, depth + 1))
                }
                _ => None,
            }
        }),
        Value::Array(a) => a.iter().find_map(|x| path_input(x, kind, schemes, depth + 1)),
        _ => None,
    }
}

/// A path value: a string (brace alternatives of a glob each count, `!exclusions` do not), or
/// an array of them.
fn path_value(v: &Value, schemes: &[String]) -> Option<String> {
    match v {
        Value::String(s) => brace_expand(s.trim()).into_iter().find_map(|alt| {
            let alt = alt.trim().trim_start_matches('@');
            memory_uri(alt, schemes).map(String::from)
        }),
        Value::Array(a) => a.iter().find_map(|x| path_value(x, schemes)),
        _ => None,
    }
}

/// `a{b,c}d` -> `abd`, `acd` (nested, at most 64 results); text without braces is itself.
fn brace_expand(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(s, &mut out);
    out
}

fn expand_into(s: &str, out: &mut Vec<String>) {
    if out.len() >= 64 {
        return;
    }
    let Some(open) = s.find('{') else {
        out.push(s.to_string());
        return;
    };
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut close = None;
    for (i, c) in s[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(open + i),
            _ => {}
        }
    }
    let Some(close) = close.filter(|_| !commas.is_empty()) else {
        out.push(s.to_string());
        return;
    };
    let (head, tail) = (&s[..open], &s[close + 1..]);
    let mut start = open + 1;
    for end in commas.into_iter().chain(std::iter::once(close)) {
        expand_into(&format!("{head}{}{tail}", &s[start..end]), out);
        start = end + 1;
    }
}

fn shell_input(input: &Value, schemes: &[String]) -> Option<String> {
    let obj = input.as_object()?;
    let mut eval = Eval::new(schemes);
    for (k, v) in obj {
        if key_is(k, DIR_KEYS) {
            if let Some(u) = path_value(v, schemes) {
                return Some(u);
            }
        }
        if !key_is(k, COMMAND_KEYS) {
            continue;
        }
        let verdict = match v {
            Value::String(s) => eval.script(s, None),
            // An argv (Codex `shell`): already split, no shell in between.
            Value::Array(a) => eval.words(a.iter().filter_map(Value::as_str).map(String::from).collect(), None),
            _ => Ok(None),
        };
        if let Err(u) = verdict {
            return Some(u);
        }
    }
    None
}

/// `apply_patch` input: every file a patch adds, updates, deletes or moves to.
fn patch_input(input: &Value, schemes: &[String]) -> Option<String> {
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(m) => m.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    strings(input, &mut all);
    all.iter().find_map(|s| patch_paths(s, schemes))
}

fn patch_paths(text: &str, schemes: &[String]) -> Option<String> {
    const HEADS: &[&str] =
        &["*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:", "--- ", "+++ ", "diff --git "];
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = HEADS.iter().find_map(|h| l.strip_prefix(h))?;
        rest.split_whitespace().find_map(|p| {
            let p = p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")).unwrap_or(p);
            memory_uri(p, schemes).map(String::from)
        })
    })
}

//! Hook entries as `[[hooks]]` tables in a TOML file, each naming its event in an `event` key
//! (Kimi Code's `config.toml`). The file is edited as text, never re-serialised: an entry is a
//! block appended at the end of the file (a blank line, the header, the template's keys, in the
//! file's line endings), and uninstall cuts exactly that block out again, so comments, layout,
//! CRLF and a BOM stay byte for byte. Every edit is checked by parsing: the result must hold
//! the same values as before plus or minus ovmem's tables, or nothing is written.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use super::editor::{Edit, Editor, TargetPlan};
use super::marker::{self, Owner};
use super::{still_ours, Action, Desired, EntryNote, Options, Refused};
use crate::fsx::journal::Mode;
use crate::harness::Harness;
use crate::receipt::{self, Entry, FileRecord};

pub fn plan(p: &mut TargetPlan, install: bool, opts: Options) -> Result<()> {
    let t = p.target;
    let path = t.location()?;
    let record = p.record(&path);
    let ours = t.env.runtime_bin();
    let key = t.events_key()?;
    let editor: Box<dyn Editor> = if install {
        Box::new(Install {
            harness: t.harness,
            path: path.clone(),
            key,
            desired: t.desired()?,
            record,
            force: opts.force,
            ours,
        })
    } else {
        let pristine = super::editor::pristine_text(&crate::fsx::resolve_in(&path, t.root())?);
        Box::new(Uninstall {
            harness: t.harness,
            path: path.clone(),
            key,
            record,
            force: opts.force,
            ours,
            pristine: pristine.map(|t| t.to_string()),
        })
    };
    p.file(path, Mode::Keep { new: 0o600 }, editor)
}

/// One `[[<key>]]` table of the file.
#[derive(Debug, Clone)]
pub struct Table {
    /// Byte span from the start of its header line to the end of its last key line (with that
    /// line's line break): comments and blank lines after it belong to what follows.
    pub start: usize,
    pub end: usize,
    /// 1-based line of the header.
    pub line: usize,
    pub value: Value,
}

impl Table {
    pub fn event(&self) -> Option<&str> {
        self.value.get("event").and_then(Value::as_str)
    }

    pub fn command(&self) -> Option<&str> {
        self.value.get("command").and_then(Value::as_str)
    }
}

fn unparseable(path: &Path, detail: impl Into<String>) -> anyhow::Error {
    Refused::Unparseable { path: path.to_path_buf(), detail: detail.into() }.into()
}

/// The file's values (a BOM is not TOML).
pub fn parse(path: &Path, text: &str) -> Result<toml::Table> {
    if crate::edit::toml::too_large(text) {
        return Err(unparseable(path, crate::edit::toml::Unreadable::TooLarge.to_string()));
    }
    let body = text.trim_start_matches('\u{feff}');
    body.parse::<toml::Table>()
        .map_err(|e| unparseable(path, crate::edit::toml::ParseError::from((body, e)).to_string()))
}

fn is_header(trimmed: &str, key: &str) -> bool {
    let Some(inner) = trimmed.strip_prefix("[[") else { return false };
    let Some(end) = inner.find("]]") else { return false };
    let rest = inner[end + 2..].trim_start();
    inner[..end].trim() == key && (rest.is_empty() || rest.starts_with('#'))
}

/// The `[[key]]` tables of `text`, with their spans. Lines inside multi-line strings are
/// skipped; the values come from parsing each table's own text, so a table whose text does
/// not parse alone is left out (and never touched).
pub fn tables(text: &str, key: &str) -> Vec<Table> {
    struct Open {
        start: usize,
        line: usize,
        body_start: usize,
        last_end: usize,
    }
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    let mut in_multi: Option<&str> = None;
    let mut pos = 0;
    let close = |o: Open, out: &mut Vec<Table>| {
        let body = &text[o.body_start..o.last_end.max(o.body_start)];
        if let Some(Ok(t)) = (!crate::edit::toml::too_large(body)).then(|| body.parse::<toml::Table>()) {
            if let Ok(value) = serde_json::to_value(&t) {
                out.push(Table { start: o.start, end: o.last_end.max(o.body_start), line: o.line, value });
            }
        }
    };
    for (n, line) in text.split_inclusive('\n').enumerate() {
        // A table on the first line starts after the byte-order mark, which is the file's.
        let start = pos + if line.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
        pos += line.len();
        let trimmed = line.trim_start_matches('\u{feff}').trim();
        if let Some(q) = in_multi {
            if line.matches(q).count() % 2 == 1 {
                in_multi = None;
            }
            if let Some(o) = open.as_mut() {
                o.last_end = pos;
            }
            continue;
        }
        if trimmed.starts_with('[') {
            if let Some(o) = open.take() {
                close(o, &mut out);
            }
            if is_header(trimmed, key) {
                open = Some(Open { start, line: n + 1, body_start: pos, last_end: pos });
            }
            continue;
        }
        for q in ["\"\"\"", "'''"] {
            if line.matches(q).count() % 2 == 1 {
                in_multi = Some(q);
            }
        }
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            if let Some(o) = open.as_mut() {
                o.last_end = pos;
            }
        }
    }
    if let Some(o) = open.take() {
        close(o, &mut out);
    }
    out
}

fn eol(text: &str) -> &'static str {
    if text.contains("\r\n") && !text.replace("\r\n", "").contains('\n') {
        "\r\n"
    } else {
        "\n"
    }
}

/// The block ovmem writes for one entry: header and keys in the file's line endings.
fn block(key: &str, body: &str, nl: &str) -> String {
    let mut s = format!("[[{key}]]{nl}");
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        s.push_str(line.trim_end());
        s.push_str(nl);
    }
    s
}

/// What goes before a block appended to `text`: nothing in an empty file, else a line break to
/// end an unterminated last line and one blank line.
fn separator(text: &str, nl: &str) -> String {
    let body = text.trim_start_matches('\u{feff}');
    if body.is_empty() {
        String::new()
    } else if body.ends_with('\n') {
        nl.to_string()
    } else {
        format!("{nl}{nl}")
    }
}

/// The value a rendered body stands for.
pub fn body_value(body: &str) -> Result<Value> {
    let t: toml::Table = body.parse().map_err(|e| anyhow::anyhow!("a template did not render to TOML: {e}"))?;
    Ok(serde_json::to_value(t)?)
}

/// ovmem's table for `harness`/`event` in `t`, and who it belongs to.
fn ours(t: &Table, harness: &str, event: &str, bin: &Path) -> Option<Owner> {
    if t.event() != Some(event) {
        return None;
    }
    let runtime = marker::hook_runtime(t.command()?, harness, Some(event))?;
    Some(marker::owner(&runtime, bin))
}

/// `before` and `after` hold the same values apart from the `key` tables whose command is one
/// of `commands`.
fn check(path: &Path, key: &str, before: &str, after: &str, commands: &[String]) -> Result<()> {
    let strip = |text: &str| -> Result<toml::Table> {
        let mut t =
            if text.trim_start_matches('\u{feff}').trim().is_empty() { toml::Table::new() } else { parse(path, text)? };
        if let Some(toml::Value::Array(a)) = t.get_mut(key) {
            a.retain(|v| {
                !v.get("command").and_then(toml::Value::as_str).is_some_and(|c| commands.iter().any(|x| x == c))
            });
            if a.is_empty() {
                t.remove(key);
            }
        }
        Ok(t)
    };
    let (a, b) = (strip(before)?, strip(after));
    match b {
        Ok(b) if a == b => Ok(()),
        _ => Err(super::Refused::Shape {
            path: path.to_path_buf(),
            detail: format!(
                "an edit would have changed more than ovmem's `[[{key}]]` tables: `{key}` is defined some other way \
                 (`{key} = [...]`?). Write it as `[[{key}]]` tables and run ovmem again"
            ),
        }
        .into()),
    }
}

pub struct Install {
    pub harness: &'static Harness,
    pub path: PathBuf,
    pub key: String,
    pub desired: Vec<Desired>,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
}

impl Editor for Install {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let h = self.harness;
        let record = self.record.as_ref();
        let created = text.is_none() || record.is_some_and(|r| r.created);
        let original = text.unwrap_or("");
        let values = if original.trim_start_matches('\u{feff}').trim().is_empty() {
            toml::Table::new()
        } else {
            parse(&self.path, original)?
        };
        match values.get(&self.key) {
            None | Some(toml::Value::Array(_)) => {}
            Some(_) => return Err(unparseable(&self.path, format!("`{}` is not an array of tables", self.key))),
        }
        let nl = eol(original);
        let mut out = original.to_string();
        let mut notes = Vec::new();
        let mut entries = Vec::new();
        for d in &self.desired {
            let event = d.event.as_str();
            let want = body_value(&d.text)?;
            let hash = receipt::hash_value(&want);
            let rec = record.and_then(|r| r.entries.iter().find(|e| e.event == event));
            let found: Vec<(Table, Owner)> = tables(&out, &self.key)
                .into_iter()
                .filter_map(|t| ours(&t, h.id(), event, &self.ours).map(|o| (t, o)))
                .collect();
            if !self.force {
                if let Some((_, Owner::Other { runtime, home, live: true })) =
                    found.iter().find(|(_, o)| matches!(o, Owner::Other { live: true, .. }))
                {
                    return Err(Refused::Foreign {
                        path: self.path.clone(),
                        runtime: runtime.clone(),
                        home: home.clone(),
                        harness: h.id().to_string(),
                    }
                    .into());
                }
            }
            let entry = |sha: String, commands: Vec<String>, text: Option<String>| Entry {
                event: event.to_string(),
                key_path: format!("{}[event={event}]", self.key),
                sha256: sha,
                handler: None,
                commands,
                text,
            };
            let Some((first, owner)) = found.first().cloned() else {
                let sep = separator(&out, nl);
                let b = format!("{sep}{}", block(&self.key, &d.text, nl));
                out.push_str(&b);
                notes.push(EntryNote::new(event, Action::Added));
                entries.push(entry(hash, vec![d.command.clone()], Some(b)));
                continue;
            };
            // Exact copies of ovmem's table after the first (a copied config) go.
            for (t, _) in found.iter().skip(1).rev() {
                if t.value == first.value || t.value == want {
                    out.replace_range(t.start..t.end, "");
                }
            }
            let kept_text = rec.and_then(|r| r.text.clone());
            if first.value == want {
                notes.push(EntryNote::new(event, Action::Unchanged));
                entries.push(entry(hash, vec![d.command.clone()], kept_text));
            } else if matches!(owner, Owner::Other { .. })
                || still_ours(self.force, rec.map(|r| r.sha256.as_str()), &receipt::hash_value(&first.value))
            {
                let detail = match &owner {
                    Owner::Other { runtime, .. } => Some(format!("took over from `{}`", runtime.display())),
                    Owner::Us => None,
                };
                let b = block(&self.key, &d.text, nl);
                // The block keeps whatever preceded it; the receipt's text gets the new keys.
                let text = kept_text.map(|k| match k.find(&format!("[[{}]]", self.key)) {
                    Some(i) => format!("{}{b}", &k[..i]),
                    None => b.clone(),
                });
                out.replace_range(first.start..first.end, &b);
                notes.push(EntryNote { event: event.into(), action: Action::Updated, detail });
                entries.push(entry(hash, vec![d.command.clone()], text));
            } else {
                notes.push(EntryNote::with(
                    event,
                    Action::UserEdited,
                    "ovmem's entry was edited since install; left as it is (--force replaces it)",
                ));
                let sha = rec.map(|r| r.sha256.clone()).unwrap_or_else(|| receipt::hash_value(&first.value));
                entries.push(entry(sha, Vec::new(), kept_text));
            }
        }
        let commands: Vec<String> = self.desired.iter().map(|d| d.command.clone()).collect();
        check(&self.path, &self.key, original, &out, &commands)?;
        Ok(Edit {
            after: Some(out),
            record: Some(FileRecord {
                path: self.path.clone(),
                format: "toml".into(),
                created,
                created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
                entries,
                backup_hash: record.and_then(|r| r.backup_hash.clone()),
                ..FileRecord::default()
            }),
            notes,
            warnings: Vec::new(),
        })
    }
}

pub struct Uninstall {
    pub harness: &'static Harness,
    pub path: PathBuf,
    pub key: String,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
    /// The `.ovmem.bak` copy: the file before ovmem first changed it.
    pub pristine: Option<String>,
}

impl Editor for Uninstall {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let Some(text) = text else { return Ok(Edit::keep(None)) };
        let h = self.harness;
        let record = self.record.as_ref();
        parse(&self.path, text)?;
        let mut out = text.to_string();
        let mut notes = Vec::new();
        let mut warnings = Vec::new();
        let mut removed = Vec::new();
        // Last first, so the spans of the tables before stay valid.
        let mut found: Vec<Table> = tables(text, &self.key);
        found.reverse();
        for t in found {
            let (Some(event), Some(cmd)) = (t.event(), t.command()) else { continue };
            let Some(runtime) = marker::hook_runtime(cmd, h.id(), Some(event)) else { continue };
            let owner = marker::owner(&runtime, &self.ours);
            if let Owner::Other { home, .. } = &owner {
                if !self.force && runtime.exists() {
                    warnings.push(format!(
                        "`{}`: the {event} hook of another ovmem home (`{}`) was left in place",
                        self.path.display(),
                        home.display()
                    ));
                    continue;
                }
            }
            let rec = record.and_then(|r| r.entries.iter().find(|e| e.event == event));
            if owner == Owner::Us
                && !still_ours(self.force, rec.map(|r| r.sha256.as_str()), &receipt::hash_value(&t.value))
            {
                notes.push(EntryNote::with(
                    event,
                    Action::UserEdited,
                    "edited since install; left in place (--force removes it)",
                ));
                continue;
            }
            // Exactly the block ovmem inserted, when it is still there as written.
            let exact = rec.and_then(|r| r.text.as_deref()).and_then(|b| {
                let at = out[..t.end.min(out.len())].rfind(b)?;
                (at <= t.start && at + b.len() >= t.end).then_some((at, at + b.len()))
            });
            let (from, to) = exact.unwrap_or_else(|| {
                // No record of the text: the table and one blank line before it.
                let before = &out[..t.start];
                let blank = before
                    .strip_suffix("\r\n")
                    .or_else(|| before.strip_suffix('\n'))
                    .filter(|b| b.is_empty() || b.ends_with('\n'));
                (blank.map_or(t.start, |b| if b.is_empty() { t.start } else { b.len() }), t.end)
            });
            out.replace_range(from..to, "");
            removed.push(cmd.to_string());
            notes.push(EntryNote::new(event, Action::Removed));
        }
        check(&self.path, &self.key, &out, text, &removed)?;
        // Without a record of the text ovmem inserted, the separator it added after a last line
        // with no line break is not known to be its own; the copy from before ovmem's first edit
        // says so, when the file otherwise came back to it.
        if let Some(p) =
            self.pristine.as_deref().filter(|_| record.and_then(|r| r.entries.first()?.text.as_ref()).is_none())
        {
            if out != p && out.trim_end() == p.trim_end() && out.starts_with(p) {
                out = p.to_string();
            }
        }
        let created = record.is_some_and(|r| r.created);
        let after = if created && out.trim_start_matches('\u{feff}').trim().is_empty() { None } else { Some(out) };
        Ok(Edit { after, record: None, notes, warnings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_found_with_their_spans_and_skip_multiline_strings() {
        let text = "a = 1\n\n[[hooks]]\nevent = \"Stop\" # c\ncommand = \"x\"\n\n# note\n[p]\ns = '''\n[[hooks]]\n'''\n[[ hooks ]]\nevent = \"PreToolUse\"\n";
        let t = tables(text, "hooks");
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(&text[t[0].start..t[0].end], "[[hooks]]\nevent = \"Stop\" # c\ncommand = \"x\"\n");
        assert_eq!(t[0].line, 3);
        assert_eq!(t[1].event(), Some("PreToolUse"));
    }

    #[test]
    fn blocks_follow_the_file_line_endings() {
        assert_eq!(
            block("hooks", "event = \"Stop\"\ncommand = \"c\"\n", "\r\n"),
            "[[hooks]]\r\nevent = \"Stop\"\r\ncommand = \"c\"\r\n"
        );
        assert_eq!(separator("", "\n"), "");
        assert_eq!(separator("\u{feff}", "\n"), "");
        assert_eq!(separator("a = 1", "\n"), "\n\n");
        assert_eq!(separator("a = 1\r\n", "\r\n"), "\r\n");
    }
}

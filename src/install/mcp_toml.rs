//! The `ovmem` MCP server as a TOML table: `[mcp_servers.ovmem]` in Codex's `config.toml` and TRAE
//! CLI's `traecli.toml`, files that also hold the harness's own settings and the hook trust records
//! ovmem writes. The table is spliced in as text at the end of the file and the receipt keeps
//! those exact bytes, so uninstall cuts out exactly them: comments, order, spacing, CRLF, a BOM and
//! a missing final newline stay as they were. Where those bytes are no longer there (someone
//! rewrote the file) the entry is taken out through `toml_edit`, and the pristine `.ovmem.bak` is
//! given back when nothing else differs from it. Every result is parsed again and must differ from
//! the file it came from by ovmem's entry alone.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

use super::editor::{Edit, Editor};
use super::marker::{self, Owner};
use super::mcp::NAME;
use super::{still_ours, Action, EntryNote, Options, Refused, Target};
use crate::edit::toml as layout;
use crate::fsx;
use crate::receipt::{self, Entry, FileRecord};

/// The editor of the `[mcp_servers.ovmem]` table in `path` (see [`super::mcp::plan`]).
pub fn editor(
    t: &Target,
    install: bool,
    opts: Options,
    path: &Path,
    key: String,
    record: Option<FileRecord>,
) -> Result<Box<dyn Editor>> {
    let ours = t.env.runtime_bin();
    let path = path.to_path_buf();
    Ok(if install {
        let value = t.desired_mcp()?.expect("a template");
        Box::new(Install { path, key, value, record, force: opts.force, ours, harness: t.harness.id().into() })
    } else {
        let pristine = super::editor::pristine_text(&fsx::resolve_in(&path, t.root())?);
        Box::new(Uninstall { path, key, record, force: opts.force, ours, pristine: pristine.map(|t| t.to_string()) })
    })
}

fn unparseable(path: &Path, detail: impl ToString) -> anyhow::Error {
    Refused::Unparseable { path: path.to_path_buf(), detail: detail.to_string().trim().to_string() }.into()
}

/// `v` with every object's keys sorted: a TOML table's key order is layout, not meaning.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The hash a receipt keeps of a TOML entry (its value, keys sorted).
pub fn hash(v: &Value) -> String {
    receipt::hash_value(&sorted(v))
}

fn same(a: &Value, b: &Value) -> bool {
    sorted(a) == sorted(b)
}

/// The value at `path` in a TOML text, as JSON.
pub fn value_at(text: &str, path: &[&str]) -> Option<Value> {
    let mut cur = toml::Value::Table(layout::values(text)?);
    for k in path {
        cur = cur.as_table()?.get(*k)?.clone();
    }
    serde_json::to_value(cur).ok()
}

/// `t` without the member at `path`, and without the tables that leaves empty.
fn without(mut t: toml::Table, path: &[&str]) -> toml::Table {
    fn rm(t: &mut toml::Table, path: &[&str]) {
        match path {
            [] => {}
            [last] => {
                t.remove(*last);
            }
            [first, rest @ ..] => {
                if let Some(toml::Value::Table(sub)) = t.get_mut(*first) {
                    rm(sub, rest);
                    if sub.is_empty() {
                        t.remove(*first);
                    }
                }
            }
        }
    }
    rm(&mut t, path);
    t
}

/// Whether `after` differs from `before` only at `path`, where it holds `want` (`None`: nothing).
fn only_changed(before: &str, after: &str, path: &[&str], want: Option<&Value>) -> bool {
    let (Some(b), Some(a)) = (layout::values(before), layout::values(after)) else { return false };
    let got = value_at(after, path);
    let entry_ok = match (want, &got) {
        (None, None) => true,
        (Some(w), Some(g)) => same(w, g),
        _ => false,
    };
    entry_ok && without(a, path) == without(b, path)
}

/// A TOML value for a JSON one (templates are JSON); `null` has no TOML form.
fn toml_value(v: &Value) -> Result<toml_edit::Value> {
    Ok(match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::Array(a) => {
            let mut arr = toml_edit::Array::new();
            for x in a {
                arr.push(toml_value(x)?);
            }
            toml_edit::Value::Array(arr)
        }
        Value::Object(m) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, x) in m {
                t.insert(k, toml_value(x)?);
            }
            toml_edit::Value::InlineTable(t)
        }
        Value::Null => return Err(anyhow!("an MCP template holds `null`, which TOML cannot write")),
    })
}

fn table_of(v: &Value) -> Result<Table> {
    let Value::Object(m) = v else { return Err(anyhow!("an MCP template is not a JSON object")) };
    let mut t = Table::new();
    for (k, x) in m {
        t.insert(k, Item::Value(toml_value(x)?));
    }
    Ok(t)
}

/// ovmem's table as text: `[mcp_servers.ovmem]` and its keys, with `nl` line endings.
fn entry_text(keys: &[&str], value: &Value, nl: &str) -> Result<String> {
    let mut doc = DocumentMut::new();
    let mut item = doc.as_item_mut();
    for k in keys {
        let mut t = Table::new();
        t.set_implicit(true);
        item.as_table_like_mut().expect("a table").insert(k, Item::Table(t));
        item = item.get_mut(*k).expect("just inserted");
    }
    item.as_table_like_mut().expect("a table").insert(NAME, Item::Table(table_of(value)?));
    Ok(doc.to_string().replace('\n', nl))
}

/// The line breaks that separate an appended table from what the file ends with.
fn lead(body: &str, nl: &str) -> String {
    if body.is_empty() || body.ends_with("\n\n") || body.ends_with("\n\r\n") {
        String::new()
    } else if body.ends_with('\n') {
        nl.to_string()
    } else {
        format!("{nl}{nl}")
    }
}

/// What stands where ovmem's table's parents go.
enum Parents {
    /// Standard tables, or missing from the first absent one (its index) on.
    Tables(Option<usize>),
    /// An inline table (`mcp_servers = { … }`): a `[header]` cannot extend it.
    Inline,
    /// A value that is not a table, at this dotted key.
    NotTable(String),
}

fn parents(doc: &DocumentMut, keys: &[&str]) -> Parents {
    let mut item = doc.as_item();
    for (i, k) in keys.iter().enumerate() {
        match item.get(*k) {
            None => return Parents::Tables(Some(i)),
            Some(it) if it.is_table() => item = it,
            Some(it) if it.is_inline_table() => return Parents::Inline,
            Some(_) => return Parents::NotTable(keys[..=i].join(".")),
        }
    }
    Parents::Tables(None)
}

/// The table-like item at `keys`, created (implicit) where missing.
fn parent_mut<'d>(doc: &'d mut DocumentMut, keys: &[&str]) -> Option<&'d mut dyn toml_edit::TableLike> {
    let mut item = doc.as_item_mut();
    for k in keys {
        let t = item.as_table_like_mut()?;
        if t.get(k).is_none() {
            let mut new = Table::new();
            new.set_implicit(true);
            t.insert(k, Item::Table(new));
        }
        item = t.get_mut(k)?;
    }
    item.as_table_like_mut()
}

fn put(parent: &mut dyn toml_edit::TableLike, value: &Value, inline: bool) -> Result<()> {
    let item = if inline {
        Item::Value(toml_value(value)?)
    } else {
        let mut t = table_of(value)?;
        if let Some(Item::Table(old)) = parent.get(NAME) {
            // Keep where the old table stood and the comments above it.
            t.decor_mut().clone_from(old.decor());
            if let Some(pos) = old.position() {
                t.set_position(pos);
            }
        }
        Item::Table(t)
    };
    parent.insert(NAME, item);
    Ok(())
}

pub struct Install {
    pub path: PathBuf,
    /// Dotted key of the servers table (`mcp_servers`).
    pub key: String,
    pub value: Value,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
    pub harness: String,
}

impl Install {
    fn full(&self) -> Vec<&str> {
        self.key.split('.').chain([NAME]).collect()
    }

    /// Through `toml_edit` (an inline parent, or a file the splice would not fit): the text, or
    /// an error when even that does not give exactly ovmem's entry.
    fn structural(&self, src: &str, doc: &DocumentMut) -> Result<String> {
        let keys: Vec<&str> = self.key.split('.').collect();
        let inline = matches!(parents(doc, &keys), Parents::Inline);
        let mut doc = doc.clone();
        let parent = parent_mut(&mut doc, &keys).ok_or_else(|| unparseable(&self.path, "a parent is not a table"))?;
        put(parent, &self.value, inline)?;
        let out = layout::render(src, &doc);
        if !only_changed(src, &out, &self.full(), Some(&self.value)) {
            return Err(anyhow!(
                "could not add the `{NAME}` MCP server to `{}` without changing anything else; nothing was written. \
                 Add it by hand: [{}] command = \"{}\", args = [\"mcp\"]",
                self.path.display(),
                self.full().join("."),
                self.ours.display()
            ));
        }
        Ok(out)
    }

    /// Adds the entry: spliced at the end when the file allows it. (text, spliced bytes)
    fn insert(&self, src: &str, doc: &DocumentMut) -> Result<(String, Option<String>)> {
        let keys: Vec<&str> = self.key.split('.').collect();
        match parents(doc, &keys) {
            Parents::NotTable(k) => return Err(unparseable(&self.path, format!("`{k}` is not a table"))),
            Parents::Tables(_) => {
                let body = layout::strip_bom(src).0;
                let nl = layout::newline(body);
                let spliced = format!("{}{}", lead(body, nl), entry_text(&keys, &self.value, nl)?);
                let out = format!("{src}{spliced}");
                if only_changed(src, &out, &self.full(), Some(&self.value)) {
                    return Ok((out, Some(spliced)));
                }
            }
            Parents::Inline => {}
        }
        Ok((self.structural(src, doc)?, None))
    }

    /// Replaces ovmem's outdated entry: in its own bytes when they are still there.
    fn replace(&self, src: &str, doc: &DocumentMut, old: Option<&str>) -> Result<(String, Option<String>)> {
        if let Some(b) = old.filter(|b| src.matches(*b).count() == 1) {
            let keys: Vec<&str> = self.key.split('.').collect();
            let head = b.find('[').unwrap_or(0);
            let fresh = format!("{}{}", &b[..head], entry_text(&keys, &self.value, layout::newline(b))?);
            let out = src.replacen(b, &fresh, 1);
            if only_changed(src, &out, &self.full(), Some(&self.value)) {
                return Ok((out, Some(fresh)));
            }
        }
        Ok((self.structural(src, doc)?, None))
    }
}

impl Editor for Install {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let record = self.record.as_ref();
        let created = text.is_none() || record.is_some_and(|r| r.created);
        let src = text.unwrap_or("");
        let doc = layout::parse(src).map_err(|e| unparseable(&self.path, e))?;
        let keys: Vec<&str> = self.key.split('.').collect();
        let full = self.full();
        let mut created_keys: Vec<String> = record.map(|r| r.created_keys.clone()).unwrap_or_default();
        let rec = record.and_then(|r| r.entries.iter().find(|e| e.event == "mcp"));
        let recorded = rec.map(|e| e.sha256.clone());
        // ovmem's bytes from the last install, while the file still holds them.
        let kept = rec.and_then(|e| e.text.clone()).filter(|b| src.contains(b.as_str()));
        let want = hash(&self.value);
        let (action, after, sha, spliced, detail) = match value_at(src, &full) {
            None => {
                if let Parents::Tables(Some(i)) = parents(&doc, &keys) {
                    for j in i..keys.len() {
                        let k = keys[..=j].join(".");
                        if !created_keys.contains(&k) {
                            created_keys.push(k);
                        }
                    }
                }
                let (after, spliced) = self.insert(src, &doc)?;
                (Action::Added, after, want, spliced, None)
            }
            Some(cur) if same(&cur, &self.value) => (Action::Unchanged, src.to_string(), want, kept, None),
            Some(cur) => match marker::mcp_runtime(&cur).map(|r| marker::owner(&r, &self.ours)) {
                None if !self.force => (
                    Action::Conflict,
                    src.to_string(),
                    hash(&cur),
                    None,
                    Some(format!("an MCP server named `{NAME}` that is not ovmem's is already there; left alone")),
                ),
                Some(Owner::Other { runtime, home, live: true }) if !self.force => {
                    return Err(Refused::Foreign {
                        path: self.path.clone(),
                        runtime,
                        home,
                        harness: self.harness.clone(),
                    }
                    .into());
                }
                Some(Owner::Other { runtime, .. }) => {
                    let (after, spliced) = self.replace(src, &doc, kept.as_deref())?;
                    (Action::Updated, after, want, spliced, Some(format!("took over from `{}`", runtime.display())))
                }
                _ if still_ours(self.force, recorded.as_deref(), &hash(&cur)) => {
                    let (after, spliced) = self.replace(src, &doc, kept.as_deref())?;
                    (Action::Updated, after, want, spliced, None)
                }
                _ => (
                    Action::UserEdited,
                    src.to_string(),
                    recorded.unwrap_or_else(|| hash(&cur)),
                    None,
                    Some("edited since install; left as it is (--force replaces it)".into()),
                ),
            },
        };
        let ours = action != Action::Conflict;
        let after = if text.is_none() && after.is_empty() { None } else { Some(after) };
        Ok(Edit {
            after,
            record: ours.then(|| FileRecord {
                path: self.path.clone(),
                format: "toml".into(),
                created,
                created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
                created_keys,
                entries: vec![Entry {
                    event: "mcp".into(),
                    key_path: full.join("."),
                    sha256: sha,
                    handler: None,
                    commands: Vec::new(),
                    text: spliced,
                }],
                backup_hash: record.and_then(|r| r.backup_hash.clone()),
                empty: Vec::new(),
                replaced: Vec::new(),
            }),
            notes: vec![EntryNote { event: "mcp".into(), action, detail }],
            warnings: Vec::new(),
        })
    }
}

pub struct Uninstall {
    pub path: PathBuf,
    pub key: String,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
    /// The file before ovmem first changed it (`.ovmem.bak`), when there is one.
    pub pristine: Option<String>,
}

impl Uninstall {
    fn full(&self) -> Vec<&str> {
        self.key.split('.').chain([NAME]).collect()
    }

    /// Takes the entry out: its own bytes when they are still there, else through `toml_edit`
    /// (and then the pristine copy, when that is all that is left).
    fn remove(&self, src: &str, doc: &DocumentMut) -> Result<String> {
        let full = self.full();
        let record = self.record.as_ref();
        let spliced = record.and_then(|r| r.entries.iter().find(|e| e.event == "mcp")).and_then(|e| e.text.as_deref());
        if let Some(b) = spliced.filter(|b| !b.is_empty()) {
            for (i, _) in src.rmatch_indices(b) {
                let out = format!("{}{}", &src[..i], &src[i + b.len()..]);
                if only_changed(src, &out, &full, None) {
                    return Ok(out);
                }
            }
        }
        let keys: Vec<&str> = self.key.split('.').collect();
        let mut doc = doc.clone();
        if let Some(parent) = parent_mut(&mut doc, &keys) {
            parent.remove(NAME);
        }
        // Parents ovmem created go once they are empty.
        let created: &[String] = record.map(|r| r.created_keys.as_slice()).unwrap_or(&[]);
        for i in (0..keys.len()).rev() {
            let empty = parent_mut(&mut doc, &keys[..=i]).is_some_and(|t| t.is_empty());
            if empty && created.contains(&keys[..=i].join(".")) {
                if let Some(up) = parent_mut(&mut doc, &keys[..i]) {
                    up.remove(keys[i]);
                }
            }
        }
        let out = layout::render(src, &doc);
        if !only_changed(src, &out, &full, None) {
            return Err(anyhow!(
                "could not take the `{NAME}` MCP server out of `{}` without changing anything else; nothing was \
                 written. Remove the [{}] table by hand",
                self.path.display(),
                full.join(".")
            ));
        }
        if let Some(p) = &self.pristine {
            if layout::values(p) == layout::values(&out) && layout::comments(p) == layout::comments(src) {
                return Ok(p.clone());
            }
        }
        Ok(out)
    }
}

impl Editor for Uninstall {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let Some(src) = text else { return Ok(Edit::keep(None)) };
        let doc = layout::parse(src).map_err(|e| unparseable(&self.path, e))?;
        let record = self.record.as_ref();
        let Some(cur) = value_at(src, &self.full()) else { return Ok(Edit::keep(Some(src))) };
        let recorded = record.and_then(|r| r.entries.iter().find(|e| e.event == "mcp")).map(|e| e.sha256.clone());
        let mut notes = Vec::new();
        let mut warnings = Vec::new();
        match marker::mcp_runtime(&cur).map(|r| marker::owner(&r, &self.ours)) {
            // Someone else's server under the same name, never ovmem's: not touched.
            None if !(self.force && record.is_some()) => return Ok(Edit::keep(Some(src))),
            Some(Owner::Other { home, .. }) if !self.force => {
                warnings.push(format!(
                    "`{}`: the `{NAME}` MCP server of another ovmem home (`{}`) was left in place",
                    self.path.display(),
                    home.display()
                ));
                return Ok(Edit { after: Some(src.to_string()), warnings, ..Edit::default() });
            }
            Some(Owner::Us) if !still_ours(self.force, recorded.as_deref(), &hash(&cur)) => {
                notes.push(EntryNote::with(
                    "mcp",
                    Action::UserEdited,
                    "edited since install; left in place (--force removes it)",
                ));
                return Ok(Edit { after: Some(src.to_string()), notes, ..Edit::default() });
            }
            _ => {}
        }
        let out = self.remove(src, &doc)?;
        notes.push(EntryNote::new("mcp", Action::Removed));
        let created = record.is_some_and(|r| r.created);
        let after = if created && layout::strip_bom(&out).0.trim().is_empty() { None } else { Some(out) };
        Ok(Edit { after, record: None, notes, warnings })
    }
}

/// A receipt record for ovmem's entry in a TOML file found without a receipt (`repair`): the
/// spliced bytes are recovered when the file is exactly the pristine copy plus ovmem's table.
/// The entry is recorded as ovmem writes it (`want`), so one the user edited reads as edited.
pub fn rebuild(path: &Path, real: &Path, text: &str, key: &str, ours: &Path, want: &Value) -> Option<FileRecord> {
    let keys: Vec<&str> = key.split('.').collect();
    let full: Vec<&str> = keys.iter().copied().chain([NAME]).collect();
    let value = value_at(text, &full)?;
    if marker::mcp_runtime(&value).is_none_or(|r| marker::owner(&r, ours) != Owner::Us) {
        return None;
    }
    let before = super::editor::pristine_text(real);
    let spliced = match &before {
        Some(p) => text.strip_prefix(p.as_str()).filter(|_| only_changed(text, p, &full, None)).map(String::from),
        None => only_changed(text, "", &full, None).then(|| text.to_string()),
    };
    let had = before.as_deref().and_then(layout::values);
    let created_keys = (0..keys.len())
        .filter(|&i| {
            let mut cur = had.as_ref().map(|t| toml::Value::Table(t.clone()));
            for k in &keys[..=i] {
                cur = cur.and_then(|c| c.as_table().and_then(|t| t.get(*k).cloned()));
            }
            cur.is_none()
        })
        .map(|i| keys[..=i].join("."))
        .collect();
    Some(FileRecord {
        path: path.to_path_buf(),
        format: "toml".into(),
        created: before.is_none(),
        created_dirs: Vec::new(),
        created_keys,
        entries: vec![Entry {
            event: "mcp".into(),
            key_path: full.join("."),
            sha256: hash(want),
            handler: None,
            commands: Vec::new(),
            text: spliced,
        }],
        backup_hash: None,
        empty: Vec::new(),
        replaced: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::trust::{then_untrust, Trust, Untrust};
    use crate::receipt::{TrustConfig, TrustRecord};

    const BIN: &str = "/h/.ovmem/bin/ovmem";
    const CODEX: &str = "# my codex settings (keep this comment)\nmodel = \"stub-model\"\n\n[model_providers.stub]\nname = \"Stub\"   # inline comment\nbase_url = \"http://127.0.0.1:1/v1\"\n\n[analytics]\nenabled = false\n";

    fn value() -> Value {
        serde_json::json!({"command": BIN, "args": ["mcp"]})
    }

    fn install(text: Option<&str>, record: Option<FileRecord>) -> Edit {
        let e = Install {
            path: "/h/.codex/config.toml".into(),
            key: "mcp_servers".into(),
            value: value(),
            record,
            force: false,
            ours: BIN.into(),
            harness: "codex".into(),
        };
        e.edit(text).unwrap()
    }

    fn uninstall(record: Option<FileRecord>, pristine: Option<&str>) -> Uninstall {
        Uninstall {
            path: "/h/.codex/config.toml".into(),
            key: "mcp_servers".into(),
            record,
            force: false,
            ours: BIN.into(),
            pristine: pristine.map(String::from),
        }
    }

    fn records() -> Vec<TrustRecord> {
        ["stop", "session_start"]
            .iter()
            .map(|e| TrustRecord {
                config: "/h/.codex/config.toml".into(),
                key: format!("/h/.codex/hooks.json:{e}:0:0"),
                hash: format!("sha256:{e}"),
            })
            .collect()
    }

    fn trust(text: Option<&str>) -> String {
        Trust { path: "/h/.codex/config.toml".into(), records: records() }.edit(text).unwrap().after.unwrap()
    }

    /// Uninstall of both as the plan makes it: the MCP entry, then the trust records.
    fn remove_both(text: &str, record: Option<FileRecord>, trust_before: Option<&str>, pristine: Option<&str>) -> Edit {
        let untrust = Untrust {
            path: "/h/.codex/config.toml".into(),
            records: records(),
            before: Some(TrustConfig {
                path: "/h/.codex/config.toml".into(),
                before: trust_before.map(String::from),
                mode: None,
            }),
        };
        then_untrust(Box::new(uninstall(record, pristine)), untrust).edit(Some(text)).unwrap()
    }

    fn inputs() -> Vec<(&'static str, Option<String>)> {
        vec![
            ("absent", None),
            ("empty", Some(String::new())),
            ("codex", Some(CODEX.into())),
            ("crlf-bom", Some(format!("\u{feff}{}", CODEX.replace('\n', "\r\n")))),
            ("no-final-newline", Some(CODEX.trim_end().into())),
            ("trailing-comment", Some(format!("{CODEX}# the end\n"))),
            ("blank-line-at-end", Some(format!("{CODEX}\n"))),
            (
                "other-server",
                Some("[mcp_servers.other]\ncommand = \"other\" # mine\n\n[profile.x]\nmodel = \"m\"\n".into()),
            ),
            ("explicit-parent", Some("[mcp_servers]\n# servers below\n\n[tui]\nx = 1\n".into())),
            ("inline-parent", Some("mcp_servers = { other = { command = \"o\" } }\n".into())),
            ("dotted-parent", Some("mcp_servers.other.command = \"o\"\n".into())),
            ("mixed-endings", Some("a = 1\r\nb = 2\n\n[t]\r\nc = 3".into())),
            (
                "hooks-table",
                Some("[hooks]\n# user's hooks settings\n\n[hooks.state.\"x\"]\ntrusted_hash = \"h\"\n".into()),
            ),
        ]
    }

    #[test]
    fn install_reinstall_uninstall_give_back_every_byte() {
        for (name, t) in inputs() {
            let first = install(t.as_deref(), None);
            let after = first.after.clone().unwrap();
            assert_eq!(value_at(&after, &["mcp_servers", NAME]), Some(value()), "{name}: {after}");
            assert!(after.contains("# ") || t.as_deref().is_none_or(|t| !t.contains('#')), "{name}");
            if let Some(t) = &t {
                assert_eq!(t.starts_with('\u{feff}'), after.starts_with('\u{feff}'), "{name}");
                if t.contains("\r\n") && !t.contains("\n\n") {
                    assert!(!after.replace("\r\n", "").contains('\n'), "{name}: a bare LF in a CRLF file: {after:?}");
                }
            }
            let record = first.record.clone();
            let again = install(Some(&after), record.clone());
            assert_eq!(again.after.as_deref(), Some(after.as_str()), "{name}: reinstall changed the file");
            assert_eq!(again.record, record, "{name}: reinstall changed the record");
            let back = uninstall(record, t.as_deref()).edit(Some(&after)).unwrap();
            assert_eq!(back.after, t, "{name}: uninstall did not give back the bytes");
        }
    }

    #[test]
    fn mcp_and_trust_in_one_file_come_out_exactly_in_either_install_order() {
        for (name, t) in inputs() {
            // MCP first, then the trust records (one install).
            let m = install(t.as_deref(), None);
            let with_mcp = m.after.clone().unwrap();
            let both = trust(Some(&with_mcp));
            assert!(both.contains("trusted_hash"), "{name}: {both}");
            assert_eq!(value_at(&both, &["mcp_servers", NAME]), Some(value()), "{name}: {both}");
            let back = remove_both(&both, m.record.clone(), Some(&with_mcp), t.as_deref());
            assert_eq!(back.after, t, "{name}: MCP then trust");
            // Trust first (an older ovmem), then the MCP entry (an upgrade).
            let trusted = trust(t.as_deref());
            let m = install(Some(&trusted), None);
            let both = m.after.clone().unwrap();
            let back = remove_both(&both, m.record.clone(), t.as_deref(), t.as_deref());
            assert_eq!(back.after, t, "{name}: trust then MCP");
        }
    }

    #[test]
    fn what_the_user_added_since_stays() {
        let m = install(Some(CODEX), None);
        let both = trust(m.after.as_deref());
        let edited = format!("{both}\n[profile.fast]\nmodel = \"m\" # theirs\n");
        let back = remove_both(&edited, m.record.clone(), m.after.as_deref(), Some(CODEX)).after.unwrap();
        assert_eq!(back, format!("{CODEX}\n[profile.fast]\nmodel = \"m\" # theirs\n"));
    }

    #[test]
    fn someone_else_s_ovmem_server_is_left_alone_and_reported() {
        let theirs = "[mcp_servers.ovmem]\ncommand = \"/opt/ovmem-server\"\nargs = [\"serve\"]\n";
        let e = install(Some(theirs), None);
        assert_eq!(e.after.as_deref(), Some(theirs));
        assert!(e.record.is_none());
        assert_eq!(e.notes[0].action, Action::Conflict);
        assert_eq!(uninstall(None, None).edit(Some(theirs)).unwrap().after.as_deref(), Some(theirs));
    }

    #[test]
    fn an_edited_entry_is_kept_and_an_outdated_one_replaced_in_place() {
        let m = install(Some(CODEX), None);
        let after = m.after.unwrap();
        let edited = after.replace("args = [\"mcp\"]", "args = [\"mcp\"]\nenv = { X = \"1\" }");
        let e = install(Some(&edited), m.record.clone());
        assert_eq!(e.notes[0].action, Action::UserEdited);
        assert_eq!(e.after.as_deref(), Some(edited.as_str()));
        let u = uninstall(m.record.clone(), Some(CODEX)).edit(Some(&edited)).unwrap();
        assert_eq!(u.after.as_deref(), Some(edited.as_str()));
        assert_eq!(u.notes[0].action, Action::UserEdited);
        // The runtime moved: the entry is rewritten where it stands, and still comes out exactly.
        let moved = Install {
            ours: "/new/bin/ovmem".into(),
            value: serde_json::json!({"command": "/new/bin/ovmem", "args": ["mcp"]}),
            ..Install {
                path: "/h/.codex/config.toml".into(),
                key: "mcp_servers".into(),
                value: Value::Null,
                record: m.record.clone(),
                force: false,
                ours: BIN.into(),
                harness: "codex".into(),
            }
        };
        let e = moved.edit(Some(&after)).unwrap();
        assert_eq!(e.notes[0].action, Action::Updated);
        let text = e.after.unwrap();
        assert!(text.starts_with(CODEX) && text.contains("/new/bin/ovmem"), "{text}");
        let u = Uninstall { ours: "/new/bin/ovmem".into(), ..uninstall(e.record, Some(CODEX)) };
        assert_eq!(u.edit(Some(&text)).unwrap().after.as_deref(), Some(CODEX));
    }

    #[test]
    fn a_file_rewritten_since_still_loses_only_ovmem_s_entry() {
        let m = install(Some(CODEX), None);
        // The harness rewrote the file: the spliced bytes are gone, the entry is still there.
        let rewritten = m.after.unwrap().replace("[mcp_servers.ovmem]\n", "[mcp_servers.ovmem]  # added by ovmem\n");
        let out = uninstall(m.record, None).edit(Some(&rewritten)).unwrap().after.unwrap();
        assert_eq!(layout::values(&out), layout::values(CODEX), "{out}");
        assert!(!out.contains("ovmem"), "{out}");
    }

    #[test]
    fn a_non_table_parent_is_refused() {
        let e = Install {
            path: "/h/.codex/config.toml".into(),
            key: "mcp_servers".into(),
            value: value(),
            record: None,
            force: false,
            ours: BIN.into(),
            harness: "codex".into(),
        }
        .edit(Some("mcp_servers = 5\n"))
        .unwrap_err();
        assert!(e.downcast_ref::<Refused>().is_some(), "{e:#}");
    }

    #[test]
    fn repair_recovers_the_spliced_bytes_from_the_pristine_copy() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("config.toml");
        std::fs::write(fsx::sibling(&real, ".ovmem.bak"), CODEX).unwrap();
        let m = install(Some(CODEX), None);
        let after = m.after.unwrap();
        let rec = rebuild(&real, &real, &after, "mcp_servers", Path::new(BIN), &value()).unwrap();
        assert_eq!(rec.entries[0].text, m.record.as_ref().unwrap().entries[0].text);
        assert_eq!(rec.entries[0].sha256, m.record.unwrap().entries[0].sha256);
        assert_eq!(uninstall(Some(rec), Some(CODEX)).edit(Some(&after)).unwrap().after.as_deref(), Some(CODEX));
    }
}

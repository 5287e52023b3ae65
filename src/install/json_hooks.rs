//! Hook entries in a JSON/JSONC file under an events key (Claude Code, Codex, Cursor, Gemini
//! CLI, TRAE CLI). Entries are either groups holding handlers (`{"matcher", "hooks": [...]}`) or
//! flat handlers (Cursor). ovmem owns exactly the handlers whose command is its marker; in a
//! group it shares with someone else's handlers, only its own handler is added or removed.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use super::editor::{Edit, Editor, TargetPlan};
use super::marker::{self, Owner};
use super::{still_ours, Action, Desired, EntryNote, Options, Refused};
use crate::edit::json::{Document, Node};
use crate::fsx::journal::Mode;
use crate::harness::Harness;
use crate::receipt::{self, EmptyContainer, Entry, FileRecord};

pub fn plan(p: &mut TargetPlan, install: bool, opts: Options) -> Result<()> {
    let t = p.target;
    let ours = t.env.runtime_bin();
    let desired = if install { t.desired()? } else { Vec::new() };
    let events = t.events_key()?;
    let mut paths = t.hook_files()?;
    let hooks = |f: &FileRecord| f.format == "json" && f.entries.iter().any(|e| e.event != "mcp");
    // The records of files that are gone (an agent file renamed since): a file the receipt does
    // not name may be one of them under its new name.
    let mut gone: Vec<FileRecord> = Vec::new();
    if !install {
        // Files the receipt names that no longer match (an agent file renamed since) still get
        // ovmem's entries taken out.
        let more = p.recorded(hooks, &paths);
        paths.extend(more);
        let records = p.base.iter().flat_map(|r| r.files.iter()).filter(|f| hooks(f));
        gone = records.filter(|f| std::fs::symlink_metadata(&f.path).is_err()).cloned().collect();
    }
    if paths.is_empty() {
        if let Some(note) = t.harness.scope(t.scope)?.files_glob_none.clone() {
            if install {
                p.warnings.push(format!("`{}`: {note}", t.location()?.display()));
            }
        }
    }
    for path in paths {
        let record = p.record(&path);
        let editor: Box<dyn Editor> = if install {
            Box::new(Install {
                harness: t.harness,
                path: path.clone(),
                events: events.clone(),
                desired: desired.clone(),
                record,
                force: opts.force,
                ours: ours.clone(),
            })
        } else {
            Box::new(Uninstall {
                harness: t.harness,
                path: path.clone(),
                events: events.clone(),
                renamed: if record.is_none() { gone.clone() } else { Vec::new() },
                record,
                force: opts.force,
                ours: ours.clone(),
            })
        };
        p.file(path, Mode::Keep { new: 0o644 }, editor)?;
    }
    Ok(())
}

/// A dotted key path as the parts `Document` takes (`""` is the top level).
pub fn split_path(key: &str) -> Vec<&str> {
    if key.is_empty() {
        Vec::new()
    } else {
        key.split('.').collect()
    }
}

/// `a.b` + `c` as a dotted key path.
pub fn join_path(base: &[&str], last: &str) -> String {
    base.iter().copied().chain(std::iter::once(last)).collect::<Vec<_>>().join(".")
}

/// Makes sure the objects along `path` exist, recording the ones ovmem creates; refuses when
/// one of them is not an object.
pub fn ensure_objects(
    doc: &mut Document,
    file: &Path,
    path: &[&str],
    created_keys: &mut Vec<String>,
    empty: &mut Vec<EmptyContainer>,
) -> Result<()> {
    for i in 0..path.len() {
        match doc.node_at(&path[..=i]) {
            None => {
                note_empty(doc, &path[..i], empty);
                doc.insert_member(&path[..i], path[i], &Value::Object(Default::default())).map_err(err)?;
                push_unique(created_keys, path[..=i].join("."));
            }
            Some(n) if !n.is_object() => {
                return Err(Refused::Unparseable {
                    path: file.to_path_buf(),
                    detail: format!("`{}` is not an object", path[..=i].join(".")),
                }
                .into());
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Removes the objects along `path` that ovmem created and that are empty now, deepest first;
/// containers that were empty before ovmem get their old inner text back.
pub fn drop_objects(
    doc: &mut Document,
    path: &[&str],
    created_keys: &[String],
    empty: &[EmptyContainer],
) -> Result<()> {
    for i in (0..path.len()).rev() {
        let here = path[..=i].join(".");
        if doc.node_at(&path[..=i]).is_some_and(|n| n.is_object() && n.members().is_empty()) {
            if created_keys.contains(&here) {
                let idx = doc.member_index(&path[..i], path[i]).expect("member");
                doc.remove_child(&path[..i], idx).map_err(err)?;
            } else {
                restore_empty(doc, &path[..=i], empty)?;
            }
        }
    }
    Ok(())
}

/// Sets the manifest's `set_keys` (ZCode's `hooks.enabled = true`): a key that is absent is
/// added and recorded; one already holding the value is left (and stays the user's); one
/// holding another value is the user's choice, refused unless forced (then its old text is
/// recorded and put back by uninstall).
pub fn set_keys(
    doc: &mut Document,
    file: &Path,
    keys: &toml::Table,
    force: bool,
    created_keys: &mut Vec<String>,
    empty: &mut Vec<EmptyContainer>,
    replaced: &mut Vec<receipt::Replaced>,
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    for (dotted, value) in keys {
        let want = serde_json::to_value(value)?;
        let path = split_path(dotted);
        let (leaf, parents) = path.split_last().expect("a key");
        ensure_objects(doc, file, parents, created_keys, empty)?;
        match doc.node_at(&path).cloned() {
            None => {
                note_empty(doc, parents, empty);
                doc.insert_member(parents, leaf, &want).map_err(err)?;
                push_unique(created_keys, dotted.clone());
            }
            Some(n) if doc.value(&n).as_ref() == Some(&want) => {}
            Some(n) if replaced.iter().any(|r| &r.key_path == dotted) => {
                // Set by ovmem before; the user changed it back since: theirs now.
                warnings.push(format!(
                    "`{}`: `{dotted}` is `{}` again, so the hooks will not run; ovmem left it as it is",
                    file.display(),
                    doc.slice(&n)
                ));
            }
            Some(n) if force => {
                let before = doc.slice(&n).to_string();
                replaced.push(receipt::Replaced { key_path: dotted.clone(), before: before.clone() });
                doc.replace_value(&n, &want).map_err(err)?;
                warnings.push(format!(
                    "`{}`: `{dotted}` was `{before}`; set to `{want}` because of --force (uninstall puts it back)",
                    file.display(),
                ));
            }
            Some(n) => {
                return Err(Refused::Setting {
                    path: file.to_path_buf(),
                    key: dotted.clone(),
                    have: doc.slice(&n).to_string(),
                    want: want.to_string(),
                }
                .into());
            }
        }
    }
    Ok(warnings)
}

/// Takes out what [`set_keys`] put in: keys ovmem added (while they still hold its value), and
/// values it replaced (given their old text back).
pub fn unset_keys(
    doc: &mut Document,
    keys: &toml::Table,
    created_keys: &[String],
    replaced: &[receipt::Replaced],
    empty: &[EmptyContainer],
) -> Result<Vec<String>> {
    let mut unset = Vec::new();
    for (dotted, value) in keys {
        let want = serde_json::to_value(value)?;
        let path = split_path(dotted);
        let (leaf, parents) = path.split_last().expect("a key");
        let Some(n) = doc.node_at(&path).cloned() else { continue };
        if doc.value(&n).as_ref() != Some(&want) {
            continue;
        }
        if created_keys.contains(dotted) {
            let idx = doc.member_index(parents, leaf).expect("member");
            doc.remove_child(parents, idx).map_err(err)?;
            unset.push(dotted.clone());
        } else if let Some(r) = replaced.iter().find(|r| &r.key_path == dotted) {
            // The value's own text (spacing, a comment inside it) comes back byte for byte.
            doc.replace_raw(&n, &r.before).map_err(err)?;
            unset.push(dotted.clone());
        }
        restore_empty(doc, parents, empty)?;
    }
    Ok(unset)
}

pub fn parse(path: &Path, text: &str) -> Result<Document> {
    let doc =
        Document::parse(text).map_err(|e| Refused::Unparseable { path: path.to_path_buf(), detail: e.to_string() })?;
    if !doc.root.is_object() {
        return Err(Refused::Unparseable {
            path: path.to_path_buf(),
            detail: "the top level is not a JSON object".into(),
        }
        .into());
    }
    Ok(doc)
}

fn err(e: crate::edit::json::ParseError) -> anyhow::Error {
    anyhow::anyhow!("an edit produced invalid JSON ({e}); nothing was written")
}

/// Records the text inside the container at `path` when it is empty and not recorded yet.
pub fn note_empty(doc: &Document, path: &[&str], empty: &mut Vec<EmptyContainer>) {
    let key_path = path.join(".");
    let Some(node) = doc.node_at(path) else { return };
    let inner = doc.inner(node);
    let is_empty = node.members().is_empty() && node.elements().is_empty();
    if is_empty && !inner.is_empty() && !empty.iter().any(|e| e.key_path == key_path) {
        empty.push(EmptyContainer { key_path, inner: inner.to_string() });
    }
}

/// Gives an emptied container its old inner text back (when what is inside now is only blanks).
pub fn restore_empty(doc: &mut Document, path: &[&str], empty: &[EmptyContainer]) -> Result<()> {
    let key_path = path.join(".");
    let Some(e) = empty.iter().find(|e| e.key_path == key_path) else { return Ok(()) };
    let Some(node) = doc.node_at(path) else { return Ok(()) };
    let blank = doc.inner(node).trim().is_empty();
    if blank && node.members().is_empty() && node.elements().is_empty() {
        doc.set_inner(path, &e.inner).map_err(err)?;
    }
    Ok(())
}

/// Whether a JSON file ovmem created holds nothing once ovmem's keys are out: `{}` and
/// whitespace only. A comment the user wrote into it (JSONC) keeps the file.
pub fn bare(text: &str) -> bool {
    text.chars().filter(|c| !c.is_whitespace()).eq("{}".chars())
}

/// The node of handler `slot` (see [`marker::handlers`]) inside entry node `el`.
fn handler_node<'d>(el: &'d Node, slot: &Option<(String, usize)>) -> Option<&'d Node> {
    match slot {
        None => Some(el),
        Some((k, i)) => el.member(k)?.elements().get(*i),
    }
}

/// An ovmem handler found in an entry.
struct Found {
    slot: Option<(String, usize)>,
    value: Value,
    owner: Owner,
}

/// ovmem's handlers in entry `v` for `harness`/`event`, and the number of handlers it has.
fn ours_in(v: &Value, harness: &str, event: &str, ours: &Path) -> (Vec<Found>, usize) {
    let hs = marker::handlers(v);
    let n = hs.len();
    let found = hs
        .into_iter()
        .filter_map(|(slot, h)| {
            let (_, runtime) = marker::handler_runtime(h, harness, Some(event))?;
            Some(Found { slot, value: h.clone(), owner: marker::owner(&runtime, ours) })
        })
        .collect();
    (found, n)
}

fn foreign(path: &Path, harness: &str, owner: &Owner) -> Option<Refused> {
    match owner {
        Owner::Other { runtime, home, live: true } => Some(Refused::Foreign {
            path: path.to_path_buf(),
            runtime: runtime.clone(),
            home: home.clone(),
            harness: harness.to_string(),
        }),
        _ => None,
    }
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// Adds (or updates) ovmem's entries.
pub struct Install {
    pub harness: &'static Harness,
    pub path: PathBuf,
    /// Dotted path of the events object (`""`: the top level).
    pub events: String,
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
        let mut doc = parse(&self.path, text.unwrap_or("{}\n"))?;
        let mut created_keys: Vec<String> = record.map(|r| r.created_keys.clone()).unwrap_or_default();
        let mut empty: Vec<EmptyContainer> = record.map(|r| r.empty.clone()).unwrap_or_default();
        let mut notes = Vec::new();
        let mut entries = Vec::new();
        for (k, v) in &h.manifest.root_defaults {
            if doc.root.member(k).is_none() {
                note_empty(&doc, &[], &mut empty);
                doc.insert_member(&[], k, &serde_json::to_value(v)?).map_err(err)?;
                push_unique(&mut created_keys, k.clone());
            }
        }
        let mut replaced: Vec<receipt::Replaced> = record.map(|r| r.replaced.clone()).unwrap_or_default();
        let warnings = set_keys(
            &mut doc,
            &self.path,
            &h.manifest.set_keys,
            self.force,
            &mut created_keys,
            &mut empty,
            &mut replaced,
        )?;
        let base = split_path(&self.events);
        ensure_objects(&mut doc, &self.path, &base, &mut created_keys, &mut empty)?;
        for d in &self.desired {
            let event = d.event.as_str();
            let value = d.value()?;
            let want_handler =
                marker::handlers(&value).first().map(|(_, hv)| (*hv).clone()).unwrap_or_else(|| value.clone());
            let key_path = join_path(&base, event);
            let mut at = base.clone();
            at.push(event);
            let at = &at[..];
            let rec = record.and_then(|r| r.entries.iter().find(|e| e.event == event));
            let entry = |sha: String, commands: Vec<String>| Entry {
                event: event.to_string(),
                key_path: key_path.clone(),
                sha256: sha,
                handler: Some(receipt::hash_value(&want_handler)),
                commands,
                text: None,
            };
            let Some(arr) = doc.node_at(at).cloned() else {
                note_empty(&doc, &base, &mut empty);
                doc.insert_member(&base, event, &Value::Array(vec![value.clone()])).map_err(err)?;
                push_unique(&mut created_keys, key_path.clone());
                notes.push(EntryNote::new(event, Action::Added));
                entries.push(entry(receipt::hash_value(&value), vec![d.command.clone()]));
                continue;
            };
            if !arr.is_array() {
                return Err(Refused::Unparseable {
                    path: self.path.clone(),
                    detail: format!("`{key_path}` is not an array"),
                }
                .into());
            }
            // ovmem's entries for this event: (index, value, its handlers, handler count).
            let mut mine: Vec<(usize, Value, Vec<Found>, usize)> = Vec::new();
            for (i, n) in arr.elements().iter().enumerate() {
                let Some(v) = doc.value(n) else { continue };
                let (found, count) = ours_in(&v, h.id(), event, &self.ours);
                if found.is_empty() {
                    continue;
                }
                if !self.force {
                    if let Some(e) = found.iter().find_map(|f| foreign(&self.path, h.id(), &f.owner)) {
                        return Err(e.into());
                    }
                }
                mine.push((i, v, found, count));
            }
            let Some((first, current, found, count)) = mine.first().map(|m| (m.0, m.1.clone(), &m.2, m.3)) else {
                note_empty(&doc, at, &mut empty);
                doc.push_element(at, &value).map_err(err)?;
                notes.push(EntryNote::new(event, Action::Added));
                entries.push(entry(receipt::hash_value(&value), vec![d.command.clone()]));
                continue;
            };
            let found_first = found.first().map(|f| (f.slot.clone(), f.value.clone(), f.owner.clone())).expect("found");
            let took_over = match &found_first.2 {
                Owner::Other { runtime, .. } => Some(format!("took over from `{}`", runtime.display())),
                Owner::Us => None,
            };
            // Exact copies of ovmem's entry (a copied config) are dropped.
            for (i, v, _, _) in mine.iter().skip(1).rev() {
                if *v == current || *v == value {
                    doc.remove_child(at, *i).map_err(err)?;
                }
            }
            let el = doc.node_at(at).expect("array").elements()[first].clone();
            if current == value {
                notes.push(EntryNote::new(event, Action::Unchanged));
                entries.push(entry(receipt::hash_value(&value), vec![d.command.clone()]));
            } else if count == 1 {
                if took_over.is_some()
                    || still_ours(self.force, rec.map(|r| r.sha256.as_str()), &receipt::hash_value(&current))
                {
                    doc.replace_value(&el, &value).map_err(err)?;
                    notes.push(EntryNote { event: event.into(), action: Action::Updated, detail: took_over });
                    entries.push(entry(receipt::hash_value(&value), vec![d.command.clone()]));
                } else {
                    notes.push(EntryNote::with(
                        event,
                        Action::UserEdited,
                        "ovmem's entry was edited since install; left as it is (--force replaces it)",
                    ));
                    let sha = rec.map(|r| r.sha256.clone()).unwrap_or_else(|| receipt::hash_value(&current));
                    entries.push(entry(sha, Vec::new()));
                }
            } else {
                // A group shared with other handlers: only ovmem's handler is ovmem's business.
                let (slot, have, _) = found_first;
                let recorded = rec.and_then(|r| r.handler.as_deref());
                if have == want_handler {
                    notes.push(EntryNote::new(event, Action::Unchanged));
                } else if took_over.is_some() || still_ours(self.force, recorded, &receipt::hash_value(&have)) {
                    let node = handler_node(&el, &slot).expect("handler").clone();
                    doc.replace_value(&node, &want_handler).map_err(err)?;
                    notes.push(EntryNote { event: event.into(), action: Action::Updated, detail: took_over });
                } else {
                    notes.push(EntryNote::with(
                        event,
                        Action::UserEdited,
                        "ovmem's hook was edited since install; left as it is (--force replaces it)",
                    ));
                    let sha = receipt::hash_value(
                        &doc.value(doc.node_at(at).expect("array").elements().get(first).expect("entry"))
                            .unwrap_or_default(),
                    );
                    entries.push(Entry { commands: Vec::new(), ..entry(sha, Vec::new()) });
                    continue;
                }
                let now = doc.node_at(at).expect("array").elements()[first].clone();
                let sha = receipt::hash_value(&doc.value(&now).unwrap_or_default());
                entries.push(entry(sha, vec![d.command.clone()]));
            }
        }
        Ok(Edit {
            after: Some(doc.into_string()),
            record: Some(FileRecord {
                path: self.path.clone(),
                format: "json".into(),
                created,
                created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
                created_keys,
                entries,
                backup_hash: record.and_then(|r| r.backup_hash.clone()),
                empty,
                replaced,
            }),
            notes,
            warnings,
        })
    }
}

/// Removes ovmem's entries, and the keys and file ovmem created once they are empty.
pub struct Uninstall {
    pub harness: &'static Harness,
    pub path: PathBuf,
    pub events: String,
    pub record: Option<FileRecord>,
    /// For a file the receipt does not name: the records of files that are gone since install,
    /// one of which this file may be under a new name.
    pub renamed: Vec<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
}

impl Uninstall {
    /// The record of the file this one was before it was renamed: the gone files' records that
    /// hold an entry of ovmem's hash for every event ovmem has one on here. When several could
    /// be, only what all of them say: a key counts as ovmem's only when every one created it.
    /// The renamed file itself is never deleted (ovmem did not create it under this name).
    fn renamed_from(&self, doc: &Document, base: &[&str]) -> Option<FileRecord> {
        let mut here: Vec<(String, String, Vec<String>)> = Vec::new();
        for m in doc.node_at(base).map(Node::members).unwrap_or_default() {
            for el in m.value.elements() {
                let Some(v) = doc.value(el) else { continue };
                let (found, _) = ours_in(&v, self.harness.id(), &m.key, &self.ours);
                if !found.is_empty() {
                    let handlers = found.iter().map(|f| receipt::hash_value(&f.value)).collect();
                    here.push((m.key.clone(), receipt::hash_value(&v), handlers));
                }
            }
        }
        let fits = |r: &&FileRecord| {
            here.iter().all(|(event, whole, handlers)| {
                r.entries.iter().any(|e| {
                    &e.event == event
                        && (&e.sha256 == whole || e.handler.as_ref().is_some_and(|h| handlers.contains(h)))
                })
            })
        };
        let mut fit = self.renamed.iter().filter(fits);
        let mut rec = fit.next().filter(|_| !here.is_empty())?.clone();
        for other in fit {
            rec.created_keys.retain(|k| other.created_keys.contains(k));
            rec.empty.retain(|e| other.empty.contains(e));
            rec.replaced.retain(|x| other.replaced.contains(x));
        }
        rec.path = self.path.clone();
        rec.created = false;
        rec.created_dirs.clear();
        Some(rec)
    }
}

impl Editor for Uninstall {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let Some(text) = text else { return Ok(Edit::keep(None)) };
        let h = self.harness;
        let mut doc = parse(&self.path, text)?;
        let base = split_path(&self.events);
        let renamed = if self.record.is_none() { self.renamed_from(&doc, &base) } else { None };
        let record = self.record.as_ref().or(renamed.as_ref());
        let mut notes = Vec::new();
        let mut warnings = Vec::new();
        let mut emptied = Vec::new();
        // Hooks of other ovmem homes left in place: (home, its runtime exists) -> events.
        let mut left: std::collections::BTreeMap<(PathBuf, bool), Vec<String>> = Default::default();
        let events: Vec<String> = doc
            .node_at(&base)
            .filter(|n| n.is_object())
            .map(|n| n.members().iter().filter(|m| m.value.is_array()).map(|m| m.key.clone()).collect())
            .unwrap_or_default();
        for event in events {
            let mut at = base.clone();
            at.push(&event);
            let at = &at[..];
            let Some(arr) = doc.node_at(at).cloned() else { continue };
            let rec = record.and_then(|r| r.entries.iter().find(|e| e.event == event));
            let mut removed_any = false;
            for (i, n) in arr.elements().iter().enumerate().rev() {
                let Some(v) = doc.value(n) else { continue };
                let (found, count) = ours_in(&v, h.id(), &event, &self.ours);
                if found.is_empty() {
                    continue;
                }
                let mut mine = Vec::new();
                for f in found {
                    match &f.owner {
                        Owner::Other { home, live, .. } if !self.force => {
                            let e = left.entry((home.clone(), *live)).or_default();
                            if !e.contains(&event) {
                                e.push(event.clone());
                            }
                        }
                        _ => mine.push(f),
                    }
                }
                if mine.is_empty() {
                    continue;
                }
                let dead = mine.iter().all(|f| matches!(f.owner, Owner::Other { .. }));
                if mine.len() == count {
                    if dead || still_ours(self.force, rec.map(|r| r.sha256.as_str()), &receipt::hash_value(&v)) {
                        doc.remove_child(at, i).map_err(err)?;
                        removed_any = true;
                        notes.push(EntryNote::new(&event, Action::Removed));
                    } else {
                        notes.push(EntryNote::with(
                            &event,
                            Action::UserEdited,
                            "edited since install; left in place (--force removes it)",
                        ));
                    }
                    continue;
                }
                // A group shared with other handlers: only ovmem's handlers go.
                for f in mine.iter().rev() {
                    let ok = matches!(f.owner, Owner::Other { .. })
                        || still_ours(
                            self.force,
                            rec.and_then(|r| r.handler.as_deref()),
                            &receipt::hash_value(&f.value),
                        );
                    if !ok {
                        notes.push(EntryNote::with(
                            &event,
                            Action::UserEdited,
                            "edited since install; left in place (--force removes it)",
                        ));
                        continue;
                    }
                    let Some((k, idx)) = &f.slot else { continue };
                    let el = doc.node_at(at).expect("array").elements()[i].clone();
                    let container = el.member(k).expect("handler array").clone();
                    doc.remove_child_of(&container, *idx).map_err(err)?;
                    notes.push(EntryNote::new(&event, Action::Removed));
                }
            }
            if removed_any && doc.node_at(at).is_some_and(|a| a.elements().is_empty()) {
                emptied.push(event);
            }
        }
        let others_left = !left.is_empty();
        for ((home, live), events) in left {
            warnings.push(if live {
                format!(
                    "`{}`: the hooks of another ovmem home (`{}`) were left in place ({}); remove them with \
                     `OVMEM_HOME={} ovmem uninstall --harness {} --yes`",
                    self.path.display(),
                    home.display(),
                    events.join(", "),
                    home.display(),
                    h.id()
                )
            } else {
                format!(
                    "`{}`: the hooks of an ovmem home that no longer exists (`{}`) were left in place ({}); they \
                     fail on every run: `ovmem uninstall --harness {} --yes --force` removes them",
                    self.path.display(),
                    home.display(),
                    events.join(", "),
                    h.id()
                )
            });
        }
        let created_keys: &[String] = record.map(|r| r.created_keys.as_slice()).unwrap_or(&[]);
        let empty: &[EmptyContainer] = record.map(|r| r.empty.as_slice()).unwrap_or(&[]);
        let replaced: &[receipt::Replaced] = record.map(|r| r.replaced.as_slice()).unwrap_or(&[]);
        for event in emptied {
            let mut at = base.clone();
            at.push(&event);
            if created_keys.contains(&join_path(&base, &event)) {
                let idx = doc.member_index(&base, &event).expect("member");
                doc.remove_child(&base, idx).map_err(err)?;
            } else {
                restore_empty(&mut doc, &at, empty)?;
            }
        }
        // What ovmem set for its hooks to run goes once none of ovmem's hooks are left.
        let ours_left = notes.iter().any(|n| n.action == Action::UserEdited) || others_left;
        if !ours_left {
            let unset = unset_keys(&mut doc, &h.manifest.set_keys, created_keys, replaced, empty)?;
            let others = doc.node_at(&base).is_some_and(|n| n.members().iter().any(|m| !m.value.elements().is_empty()));
            if !unset.is_empty() && others {
                warnings.push(format!(
                    "`{}`: {} went back to how it was before ovmem; the other hooks there run only while it is set",
                    self.path.display(),
                    unset.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        drop_objects(&mut doc, &base, created_keys, empty)?;
        for dotted in h.manifest.set_keys.keys() {
            let path = split_path(dotted);
            drop_objects(&mut doc, &path[..path.len() - 1], created_keys, empty)?;
        }
        // Keys ovmem added at the top (Cursor's `version`) go too: the file returns to its bytes.
        for k in h.manifest.root_defaults.keys() {
            if created_keys.contains(k) {
                if let Some(idx) = doc.member_index(&[], k) {
                    doc.remove_child(&[], idx).map_err(err)?;
                }
            }
        }
        restore_empty(&mut doc, &[], empty)?;
        let created = record.is_some_and(|r| r.created);
        let out = doc.into_string();
        let after = if created && super::json_hooks::bare(&out) { None } else { Some(out) };
        Ok(Edit { after, record: None, notes, warnings })
    }
}

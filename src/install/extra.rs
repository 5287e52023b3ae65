//! What a harness needs beside its hook entries, as more editors of the same transaction:
//! whole files ovmem owns (a plugin's `plugin.json`, created and removed whole), and one string
//! in an array of another JSON file (TraeCode runs hooks in a sandbox that must allow
//! `$OVMEM_HOME`: `filesystem.readWrite` in `~/.trae-cn/sandbox.json`), added and removed exactly.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::Value;

use super::editor::{Edit, Editor, TargetPlan};
use super::json_hooks::{drop_objects, ensure_objects, note_empty, parse, restore_empty, split_path};
use super::{Action, EntryNote, Options, Refused};
use crate::fsx::{self, journal::Mode};
use crate::harness::{self, HookSpec};
use crate::receipt::{self, EmptyContainer, Entry, FileRecord, Replaced};

pub fn plan(p: &mut TargetPlan, install: bool, opts: Options) -> Result<()> {
    let t = p.target;
    let spec = t.harness.scope(t.scope)?.clone();
    let bin = t.env.runtime_bin();
    let home = t.env.ovmem_home();
    let none = HookSpec { event: "file".into(), matcher: None, timeout: None };
    let ph = t.placeholders(&bin, &home, &none);
    let mut owned: Vec<(PathBuf, String)> = Vec::new();
    for f in &spec.owned_files {
        owned.push((t.env.expand(&f.path, t.project.as_deref())?, harness::render(&f.template, &ph)?));
    }
    if !install {
        // A file the receipt names where the environment no longer places it: taken out where it
        // was made (it is removed only while its bytes are what the receipt recorded).
        let known: Vec<PathBuf> = owned.iter().map(|(path, _)| path.clone()).collect();
        owned.extend(p.recorded(|f| f.format == "owned", &known).into_iter().map(|path| (path, String::new())));
    }
    for (path, content) in owned {
        let record = p.record(&path);
        let editor = Owned { path: path.clone(), content, record, install, force: opts.force };
        p.file(path, Mode::Keep { new: 0o644 }, Box::new(editor))?;
    }
    for m in &spec.array_members {
        let path = t.env.expand(&m.file, t.project.as_deref())?;
        let value = harness::render_str(&m.value, &ph)?;
        let record = p.record(&path);
        let editor = Member { path: path.clone(), key: m.key.clone(), value, record, install };
        p.file(path, Mode::Keep { new: 0o644 }, Box::new(editor))?;
    }
    Ok(())
}

/// A whole file ovmem writes from a template and owns while its bytes are what ovmem wrote.
pub struct Owned {
    pub path: PathBuf,
    pub content: String,
    pub record: Option<FileRecord>,
    pub install: bool,
    pub force: bool,
}

fn name(path: &std::path::Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

impl Owned {
    /// The receipt's record of the file as ovmem leaves it. `replacing`: the user's own file that
    /// `--force` replaces now, given back by uninstall. A file ovmem created stays created, and a
    /// file it replaced keeps the bytes it replaced, however often it is installed again.
    fn record(&self, replacing: Option<&str>) -> FileRecord {
        let before = self.record.as_ref();
        let mut replaced = before.map(|r| r.replaced.clone()).unwrap_or_default();
        if let Some(text) = replacing.filter(|_| replaced.is_empty()) {
            replaced.push(Replaced { key_path: String::new(), before: text.to_string() });
        }
        FileRecord {
            path: self.path.clone(),
            format: "owned".into(),
            created: before.map_or(replaced.is_empty(), |r| r.created && replaced.is_empty()),
            created_dirs: before.map(|r| r.created_dirs.clone()).unwrap_or_default(),
            entries: vec![Entry {
                event: "file".into(),
                key_path: name(&self.path),
                sha256: fsx::sha256_hex(self.content.as_bytes()),
                ..Entry::default()
            }],
            backup_hash: before.and_then(|r| r.backup_hash.clone()),
            replaced,
            ..FileRecord::default()
        }
    }

    /// The user's own file that `--force` replaced at install, as it was.
    fn replaced(&self) -> Option<&str> {
        let r = self.record.as_ref()?;
        r.replaced.iter().find(|r| r.key_path.is_empty()).map(|r| r.before.as_str())
    }

    /// Whether `text` is ovmem's: what the receipt recorded, or (without one) what ovmem writes.
    fn ours(&self, text: &str) -> bool {
        let sha = fsx::sha256_hex(text.as_bytes());
        match self.record.as_ref().and_then(|r| r.entries.first()) {
            Some(e) => e.sha256 == sha,
            None => text == self.content,
        }
    }
}

impl Editor for Owned {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let note = |action, detail: Option<String>| vec![EntryNote { event: "file".into(), action, detail }];
        if !self.install {
            return Ok(match text {
                None => Edit::keep(None),
                // Never recorded, and not what ovmem writes: the user's own file, not ovmem's to
                // remove, even with --force.
                Some(t) if self.record.is_none() && t != self.content => Edit::keep(Some(t)),
                Some(t) if self.force || self.ours(t) => Edit {
                    after: self.replaced().map(String::from),
                    notes: note(Action::Removed, None),
                    ..Edit::default()
                },
                Some(t) => Edit {
                    after: Some(t.to_string()),
                    notes: note(
                        Action::UserEdited,
                        Some(format!("`{}` changed since install; left in place", self.path.display())),
                    ),
                    ..Edit::default()
                },
            });
        }
        Ok(match text {
            None => Edit {
                after: Some(self.content.clone()),
                record: Some(self.record(None)),
                notes: note(Action::Added, None),
                ..Edit::default()
            },
            Some(t) if t == self.content => Edit {
                after: Some(t.to_string()),
                record: Some(self.record(None)),
                notes: note(Action::Unchanged, None),
                ..Edit::default()
            },
            Some(t) if self.force || self.ours(t) && self.record.is_some() => Edit {
                after: Some(self.content.clone()),
                // A file that is not ovmem's, replaced by --force: uninstall gives it back.
                record: Some(self.record(self.record.is_none().then_some(t))),
                notes: note(Action::Updated, None),
                ..Edit::default()
            },
            Some(t) => Edit {
                after: Some(t.to_string()),
                notes: note(
                    Action::Conflict,
                    Some(format!("`{}` is not ovmem's; left alone (--force replaces it)", self.path.display())),
                ),
                ..Edit::default()
            },
        })
    }
}

/// One string in an array of a JSON file: added when missing (and then ovmem's), removed by
/// uninstall only when ovmem added it.
pub struct Member {
    pub path: PathBuf,
    /// Dotted path of the array.
    pub key: String,
    pub value: String,
    pub record: Option<FileRecord>,
    pub install: bool,
}

fn refuse(path: &std::path::Path, detail: String) -> anyhow::Error {
    Refused::Unparseable { path: path.to_path_buf(), detail }.into()
}

impl Editor for Member {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let record = self.record.as_ref();
        let ours = record.is_some_and(|r| r.entries.iter().any(|e| e.event == "member" && e.key_path == self.key));
        let want = Value::String(self.value.clone());
        let path = split_path(&self.key);
        let (leaf, parents) = path.split_last().expect("a key");
        if !self.install {
            let Some(text) = text else { return Ok(Edit::keep(None)) };
            if !ours {
                return Ok(Edit::keep(Some(text)));
            }
            let mut doc = parse(&self.path, text)?;
            let created_keys: &[String] = record.map(|r| r.created_keys.as_slice()).unwrap_or(&[]);
            let empty: &[EmptyContainer] = record.map(|r| r.empty.as_slice()).unwrap_or(&[]);
            let mut notes = Vec::new();
            if let Some(arr) = doc.node_at(&path).filter(|n| n.is_array()).cloned() {
                let at = arr.elements().iter().rposition(|e| doc.value(e).as_ref() == Some(&want));
                if let Some(i) = at {
                    doc.remove_child(&path, i).map_err(|e| anyhow::anyhow!(e))?;
                    notes.push(EntryNote::new("member", Action::Removed));
                }
            }
            if doc.node_at(&path).is_some_and(|n| n.is_array() && n.elements().is_empty()) {
                if created_keys.contains(&self.key) {
                    let idx = doc.member_index(parents, leaf).expect("member");
                    doc.remove_child(parents, idx).map_err(|e| anyhow::anyhow!(e))?;
                } else {
                    restore_empty(&mut doc, &path, empty)?;
                }
            }
            drop_objects(&mut doc, parents, created_keys, empty)?;
            restore_empty(&mut doc, &[], empty)?;
            let created = record.is_some_and(|r| r.created);
            let out = doc.into_string();
            let after = if created && super::json_hooks::bare(&out) { None } else { Some(out) };
            return Ok(Edit { after, notes, ..Edit::default() });
        }
        let created = text.is_none() || record.is_some_and(|r| r.created);
        let mut doc = parse(&self.path, text.unwrap_or("{}\n"))?;
        let mut created_keys: Vec<String> = record.map(|r| r.created_keys.clone()).unwrap_or_default();
        let mut empty: Vec<EmptyContainer> = record.map(|r| r.empty.clone()).unwrap_or_default();
        ensure_objects(&mut doc, &self.path, parents, &mut created_keys, &mut empty)?;
        let (action, mine) = match doc.node_at(&path).cloned() {
            None => {
                note_empty(&doc, parents, &mut empty);
                doc.insert_member(parents, leaf, &Value::Array(vec![want.clone()])).map_err(|e| anyhow::anyhow!(e))?;
                if !created_keys.contains(&self.key) {
                    created_keys.push(self.key.clone());
                }
                (Action::Added, true)
            }
            Some(n) if !n.is_array() => return Err(refuse(&self.path, format!("`{}` is not an array", self.key))),
            Some(n) if n.elements().iter().any(|e| doc.value(e).as_ref() == Some(&want)) => (Action::Unchanged, ours),
            Some(_) => {
                note_empty(&doc, &path, &mut empty);
                doc.push_element(&path, &want).map_err(|e| anyhow::anyhow!(e))?;
                (Action::Added, true)
            }
        };
        let record = mine.then(|| FileRecord {
            path: self.path.clone(),
            format: "json".into(),
            created,
            created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
            created_keys,
            entries: vec![Entry {
                event: "member".into(),
                key_path: self.key.clone(),
                sha256: receipt::hash_value(&want),
                ..Entry::default()
            }],
            backup_hash: record.and_then(|r| r.backup_hash.clone()),
            empty,
            ..FileRecord::default()
        });
        let detail = (!mine).then(|| format!("`{}` already allows it", self.path.display()));
        Ok(Edit {
            after: Some(doc.into_string()),
            record,
            notes: vec![EntryNote { event: "member".into(), action, detail }],
            warnings: Vec::new(),
        })
    }
}

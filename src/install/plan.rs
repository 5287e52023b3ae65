//! Step 2 of the pipeline: a pure plan. For each file of a target, an [`Editor`] turns the
//! file's current text into the text it should hold (and the receipt record that says what ovmem
//! put there); backups and directories follow from that. Nothing is written here: `--dry-run`
//! prints this plan, and the apply step writes exactly it (re-running an editor only when another
//! program rewrote its file meanwhile). The types the editors share live in `editor.rs`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::editor::{file_plan, settle_budget, Backup, Editor, FilePlan, TargetPlan, SETTLE_POLL};
use super::{
    extra, json_hooks, mcp, plugin_file, repair, script_dir, toml_hooks, trust, Options, Refused, Target, Verb,
};
use crate::fsx::{self, journal, reads, Blob};
use crate::harness::InstallKind;
use crate::receipt::{self, FileRecord, Receipt};
use crate::sys;

impl<'t> TargetPlan<'t> {
    /// Plans one more file of this target.
    pub fn file(&mut self, path: PathBuf, mode: journal::Mode, editor: Box<dyn Editor>) -> Result<()> {
        self.files.push(file_plan(path, self.target.root(), mode, editor)?);
        Ok(())
    }

    /// The base receipt's record of `path`.
    pub fn record(&self, path: &Path) -> Option<FileRecord> {
        self.base.as_ref().and_then(|r| r.file(path)).cloned()
    }

    /// The paths the base receipt records that `filter` owns and `known` (where today's
    /// environment places the files) lacks: an uninstall visits them too, so an install made
    /// under another `CODEX_HOME`, `XDG_CONFIG_HOME`, … or into a file since renamed is taken
    /// out where it was made.
    pub fn recorded(&self, filter: impl Fn(&FileRecord) -> bool, known: &[PathBuf]) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for f in self.base.iter().flat_map(|r| r.files.iter()).filter(|f| filter(f)) {
            if !known.contains(&f.path) && !out.contains(&f.path) {
                out.push(f.path.clone());
            }
        }
        out
    }
}

/// [`repair::rebuild`], run again while a file it reads does not parse, as
/// `editor::edit_settled` reads one again.
fn rebuild_settled(t: &Target) -> Result<Option<Receipt>> {
    let started = std::time::Instant::now();
    loop {
        let e = match repair::rebuild(t) {
            Err(e) => e,
            ok => return ok,
        };
        let Some(Refused::Unparseable { path, .. }) = e.downcast_ref::<Refused>() else { return Err(e) };
        let empty = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
        if started.elapsed() >= settle_budget(empty) {
            return Err(e);
        }
        std::thread::sleep(SETTLE_POLL);
        // Read again from disk, not from this run's reads.
        reads::forget(&fsx::resolve_in(path, t.root()).unwrap_or_else(|_| path.clone()));
    }
}

/// Plans `verb` for `t`.
pub fn plan<'t>(t: &'t Target<'t>, verb: Verb, opts: Options) -> Result<TargetPlan<'t>> {
    if verb == Verb::Install {
        if let Err(e) = t.harness.scope(t.scope) {
            return Err(Refused::NoScope(format!("{e:#}")).into());
        }
    }
    let old = match receipt::load(&t.receipt_path()).and_then(|r| plausible(t, r)) {
        Ok(r) => r,
        Err(e) if verb == Verb::Repair && e.downcast_ref::<receipt::Damaged>().is_some() => None,
        Err(e) => match e.downcast::<receipt::Damaged>() {
            Ok(mut d) => {
                d.project = t.project.as_ref().map(|p| format!(" --project {}", p.display())).unwrap_or_default();
                return Err(d.into());
            }
            Err(e) => return Err(e),
        },
    };
    let base = match (&old, verb) {
        (Some(r), Verb::Install | Verb::Uninstall) => Some(r.clone()),
        _ => rebuild_settled(t)?,
    };
    let mut p = TargetPlan { target: t, verb, old, base, files: Vec::new(), warnings: Vec::new() };
    if verb == Verb::Repair {
        return Ok(p);
    }
    let install = verb == Verb::Install;
    if install {
        super::check_unquoted(t)?;
    }
    match t.harness.manifest.kind {
        InstallKind::JsonHooks => json_hooks::plan(&mut p, install, opts)?,
        InstallKind::ScriptDir => script_dir::plan(&mut p, install, opts)?,
        InstallKind::PluginFile => plugin_file::plan(&mut p, install, opts)?,
        InstallKind::TomlHooks => toml_hooks::plan(&mut p, install, opts)?,
    }
    extra::plan(&mut p, install, opts)?;
    mcp::plan(&mut p, install, opts)?;
    if install {
        if let Some(note) = &t.harness.manifest.install_note {
            let (bin, home) = (t.env.runtime_bin(), t.env.ovmem_home());
            let none = crate::harness::HookSpec { event: String::new(), matcher: None, timeout: None };
            p.warnings.push(crate::harness::render_str(note, &t.placeholders(&bin, &home, &none))?);
        }
    }
    if !install {
        trust::plan_untrust(&mut p)?;
    }
    same_as_user(&mut p, install)?;
    for f in &p.files {
        // A file, or the directory it is in, that no one may change: the rename would fail with
        // nothing to do about it, `--force` or not.
        if f.changed() {
            let dir = f.real.parent().filter(|d| !d.as_os_str().is_empty());
            let marked = if sys::immutable(&f.real) {
                Some(f.path.clone())
            } else {
                dir.filter(|d| sys::immutable(d)).map(Path::to_path_buf)
            };
            if let Some(path) = marked {
                return Err(Refused::Immutable { path }.into());
            }
        }
        if f.changed() && f.before.is_some() {
            if let Some(m) = fsx::meta(&f.real).filter(|m| m.mode & 0o222 == 0) {
                if !opts.force {
                    return Err(Refused::ReadOnly { path: f.path.clone(), mode: m.mode }.into());
                }
                p.warnings.push(format!(
                    "`{}` is read-only (mode {:03o}); edited anyway because of --force, and its mode kept",
                    f.path.display(),
                    m.mode
                ));
            }
        }
    }
    let records: Vec<Option<FileRecord>> = p.files.iter().map(|f| p.record(&f.path)).collect();
    for (f, rec) in p.files.iter_mut().zip(records) {
        let w = plan_backups(f, rec.as_ref(), verb);
        p.warnings.extend(w);
    }
    Ok(p)
}

/// `r` when every path it names is one `t`'s harness may have written at `t`'s scope; else the
/// receipt is damaged (edited by hand, or planted), and nothing it names is touched: uninstall
/// would otherwise edit, back up or delete whatever file it points at. The harness's config dir
/// may have moved since install (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, … set otherwise then), so a
/// part of a manifest path that a variable decides may be anything; the rest must be as the
/// manifest writes it, and no path may climb out through `..`.
fn plausible(t: &Target, r: Option<Receipt>) -> Result<Option<Receipt>> {
    let Some(r) = r else { return Ok(None) };
    let Ok(spec) = t.harness.scope(t.scope) else { return Ok(Some(r)) };
    let mut files: Vec<String> = Vec::new();
    files.extend(spec.file.iter().chain(&spec.files_glob).chain(&spec.mcp_file).chain(&spec.mcp_file_macos).cloned());
    files.extend(spec.owned_files.iter().map(|f| f.path.clone()));
    files.extend(spec.array_members.iter().map(|a| a.file.clone()));
    files.extend(spec.dir.iter().chain(&spec.fallback_dir).map(|d| format!("{d}/*")));
    let trust: Vec<String> = t.harness.manifest.trust_config.iter().cloned().collect();
    let fits = |path: &Path, patterns: &[String]| {
        clean(path) && patterns.iter().any(|p| fits_pattern(t, p, path).unwrap_or(false))
    };
    let bad = r
        .files
        .iter()
        .map(|f| &f.path)
        .find(|p| !fits(p, &files))
        .or_else(|| r.files.iter().flat_map(|f| &f.created_dirs).find(|d| !clean(d)))
        .or_else(|| {
            r.trust.iter().map(|x| &x.config).chain(r.trust_config.iter().map(|c| &c.path)).find(|p| !fits(p, &trust))
        });
    match bad {
        None => Ok(Some(r)),
        Some(bad) => Err(receipt::Damaged {
            path: t.receipt_path(),
            detail: format!(
                "it names `{}`, which {} never writes at {} scope; nothing was changed. If you did not edit the \
                 receipt, something else did",
                bad.display(),
                t.harness.manifest.name,
                t.scope.as_str()
            ),
            harness: t.harness.id().to_string(),
            project: String::new(),
        }
        .into()),
    }
}

/// An absolute path with no `..` in it.
fn clean(path: &Path) -> bool {
    path.is_absolute() && !path.components().any(|c| c == std::path::Component::ParentDir)
}

/// Whether `path` may be what manifest path `pattern` named at install: what follows the last
/// `${…}` in the pattern (all of it, expanded, when it has none) ends the path, component by
/// component, a `*` matching any name (an empty rest: the variable named the whole path).
fn fits_pattern(t: &Target, pattern: &str, path: &Path) -> Result<bool> {
    let (fixed, exact) = match after_variables(pattern) {
        Some(rest) => (PathBuf::from(rest), false),
        None => (t.env.expand(pattern, t.project.as_deref())?, true),
    };
    let want: Vec<String> = fixed.components().filter_map(name).collect();
    let have: Vec<String> = path.components().filter_map(name).collect();
    if want.len() > have.len() || (exact && want.len() != have.len()) {
        return Ok(false);
    }
    let glob = |w: &str, h: &str| match w.split_once('*') {
        Some((pre, suf)) => h.len() >= pre.len() + suf.len() && h.starts_with(pre) && h.ends_with(suf),
        None => w == h,
    };
    Ok(want.iter().rev().zip(have.iter().rev()).all(|(w, h)| glob(w, h)))
}

fn name(c: std::path::Component) -> Option<String> {
    match c {
        std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
        _ => None,
    }
}

/// The text after the last top-level `${…}` of a manifest path; `None` when it has none.
fn after_variables(pattern: &str) -> Option<&str> {
    let b = pattern.as_bytes();
    let (mut depth, mut end, mut i) = (0usize, None, 0);
    while i < b.len() {
        if b[i..].starts_with(b"${") {
            depth += 1;
            i += 2;
            continue;
        }
        if b[i] == b'}' && depth > 0 {
            depth -= 1;
            if depth == 0 {
                end = Some(i + 1);
            }
        }
        i += 1;
    }
    end.map(|e| &pattern[e..])
}

/// At project scope, a file that is also the harness's user-scope file (the project is the home
/// directory: `~/.claude/settings.json` is both). Install refuses it, since two receipts would own
/// the same entries and uninstalling either scope would take out the other's; uninstall of the
/// project scope leaves it to the user scope's, with a warning.
fn same_as_user(p: &mut TargetPlan, install: bool) -> Result<()> {
    let t = p.target;
    if t.scope == crate::harness::Scope::User {
        return same_as_project(p, install);
    }
    if t.harness.scope(crate::harness::Scope::User).is_err() {
        return Ok(());
    }
    let user = Target { env: t.env, harness: t.harness, scope: crate::harness::Scope::User, project: None };
    let mut theirs: Vec<PathBuf> = user.hook_files().unwrap_or_default();
    theirs.extend(user.mcp_file().ok().flatten());
    theirs.extend(user.location().ok());
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let theirs: Vec<PathBuf> = theirs.iter().filter_map(|p| real(p)).collect();
    let shared: Vec<usize> =
        (0..p.files.len()).filter(|&i| real(&p.files[i].real).is_some_and(|r| theirs.contains(&r))).collect();
    if let Some(&i) = shared.first() {
        if install {
            return Err(Refused::ProjectIsUser { path: p.files[i].path.clone() }.into());
        }
    }
    for i in shared.into_iter().rev() {
        let f = p.files.remove(i);
        p.warnings.push(format!(
            "`{}` is your user-scope file too (the project is your home directory, or holds the harness's config \
             directory); left as it is: `ovmem uninstall` \
             at user scope removes ovmem's entries from it",
            f.path.display()
        ));
    }
    Ok(())
}

/// A backup path ovmem may use: absent, or a regular file (never a link or anything else a
/// project could plant there).
fn backup_slot(path: &Path) -> Option<Option<Blob>> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Some(None),
        Ok(m) if m.is_file() => reads::read(path).ok(),
        Ok(_) => None,
    }
}

/// `<file>.ovmem.bak` is the file as it was before ovmem first changed it (only for files ovmem
/// did not create); `<file>.bak` the file before the latest change, unless that name holds a file
/// ovmem did not write. Once uninstall gives a file back exactly, both go.
pub fn plan_backups(f: &mut FilePlan, rec: Option<&FileRecord>, verb: Verb) -> Vec<String> {
    let mut warnings = Vec::new();
    let Some(before) = f.before.clone() else { return warnings };
    if f.after.as_ref() == Some(&before) {
        return warnings;
    }
    let pristine_path = fsx::sibling(&f.real, ".ovmem.bak");
    let bak_path = fsx::sibling(&f.real, ".bak");
    let (Some(pristine), Some(bak)) = (backup_slot(&pristine_path), backup_slot(&bak_path)) else {
        warnings.push(format!(
            "`{}` or its `.bak` is not a regular file, so no backup of `{}` was made",
            pristine_path.display(),
            f.path.display()
        ));
        return warnings;
    };
    let bak_ours = match &bak {
        None => true,
        Some(b) => {
            rec.and_then(|r| r.backup_hash.as_deref()).is_some_and(|h| h == b.sha256()) || pristine.as_ref() == Some(b)
        }
    };
    // A file ovmem only keeps trust records in has no file record and got no backups at install
    // (the receipt holds its snapshot): uninstall makes none either.
    if verb == Verb::Uninstall && rec.is_none() && pristine.is_none() {
        return warnings;
    }
    let restored = verb == Verb::Uninstall
        && (f.after.is_none() || pristine.as_deref().is_some_and(|p| Some(p) == f.after.as_deref().map(str::as_bytes)));
    if restored {
        // The file gets its pristine copy's bytes back: one buffer for both.
        if let Some(p) = pristine.as_ref().filter(|p| Some(&p[..]) == f.after.as_deref().map(str::as_bytes)) {
            f.after = p.text();
        }
        if pristine.is_some() {
            f.backups.push(Backup { path: pristine_path, before: pristine, after: None });
        }
        if bak_ours && bak.is_some() {
            f.backups.push(Backup { path: bak_path, before: bak, after: None });
        }
        return warnings;
    }
    let created = rec.is_some_and(|r| r.created);
    // The backups hold the very bytes the plan was made from (one buffer, hashed once).
    let before = Blob::from(before);
    if pristine.is_none() && !created {
        f.backups.push(Backup { path: pristine_path.clone(), before: None, after: Some(before.clone()) });
    }
    if bak_ours {
        f.backup_hash = Some(before.sha256().to_string());
        f.backups.push(Backup { path: bak_path, before: bak, after: Some(before) });
    } else {
        warnings.push(format!(
            "`{}` exists and was not written by ovmem, so it was left alone (the pristine copy is `{}`)",
            bak_path.display(),
            pristine_path.display()
        ));
    }
    warnings
}

/// At user scope, a file a project-scope receipt of this harness records (the user-scope file
/// moved into a project: `CLAUDE_CONFIG_DIR=<project>/.claude`, set per project by direnv). The
/// user-scope receipt would take the project's entries as its own, and uninstalling at user scope
/// would take them out of the project: install refuses, and uninstall leaves the file to the
/// project scope's, with a warning.
fn same_as_project(p: &mut TargetPlan, install: bool) -> Result<()> {
    let t = p.target;
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let mut owned: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (receipt_path, r) in crate::receipt::load_all(&t.env.ovmem_home())? {
        if r.harness != t.harness.id() || r.scope != crate::harness::Scope::Project {
            continue;
        }
        owned.extend(r.files.iter().filter_map(|f| Some((real(&f.path)?, receipt_path.clone()))));
    }
    if owned.is_empty() {
        return Ok(());
    }
    let owner = |i: usize| {
        let here = real(&p.files[i].real)?;
        owned.iter().find(|(path, _)| *path == here).map(|(_, receipt)| receipt.clone())
    };
    let shared: Vec<(usize, PathBuf)> = (0..p.files.len()).filter_map(|i| Some((i, owner(i)?))).collect();
    if let (true, Some((i, receipt))) = (install, shared.first()) {
        return Err(Refused::UserIsProject { path: p.files[*i].path.clone(), receipt: receipt.clone() }.into());
    }
    for (i, receipt) in shared.into_iter().rev() {
        let f = p.files.remove(i);
        p.warnings.push(format!(
            "`{}` is a project's file too (`{}` records it); left as it is: `ovmem uninstall --scope project` for \
             that project removes ovmem's entries from it",
            f.path.display(),
            receipt.display()
        ));
    }
    Ok(())
}

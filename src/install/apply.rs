//! Step 3 of the pipeline: the plans of every target of one command applied as one journaled
//! transaction, in this order: the staged runtime, backups and shared files; then trust (an edit
//! of the harness's TOML config, decided by what the harness lists once the hooks are on disk);
//! then the receipts; then the finishing steps (empty directories, an unused runtime). Any error
//! or signal before the commit rolls all of it back.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::editor::{Editor, FilePlan, TargetPlan};
use super::plan;
use super::{check_runtime_path, trust, Action, Options, Refused, Report, Target, Verb};
use crate::env::Env;
use crate::fsx::journal::{self, Change, Kind, Mode, Post, Tx};
use crate::fsx::{self, reads, Blob, InstallLock};
use crate::harness::Scope;
use crate::interrupt;
use crate::receipt::{self, Receipt, TrustConfig, TrustRecord};

#[derive(Debug, Serialize)]
pub struct HarnessResult {
    #[serde(flatten)]
    pub report: Option<Report>,
    pub harness: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// 1 for a failure, 2 for a refusal.
    #[serde(skip)]
    pub code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<TrustReport>,
    /// `ovmem repair`: the receipt that was rebuilt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<PathBuf>,
    /// Uninstall: a file of the harness that could not be read, with nothing of ovmem's recorded
    /// in it, left as it is; what to tell the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl HarnessResult {
    /// A harness's result before anything is known of it.
    fn new(harness: &str) -> Self {
        Self {
            report: None,
            harness: harness.to_string(),
            error: None,
            code: 0,
            trust: None,
            repaired: None,
            skipped: None,
        }
    }
}

#[derive(Debug, Serialize, Default, Clone)]
pub struct TrustReport {
    /// trusted (now), already-trusted, or pending
    pub state: String,
    pub message: String,
    /// What the harness itself warned about when it listed the hooks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub results: Vec<HarnessResult>,
    /// The runtime copied into place by this run.
    pub staged: Option<PathBuf>,
    /// The runtime removed because nothing uses it any more.
    pub removed_runtime: Option<PathBuf>,
    pub warnings: Vec<String>,
    pub code: i32,
}

fn refusal_code(e: &anyhow::Error) -> i32 {
    let refused = e.downcast_ref::<Refused>().is_some()
        || e.downcast_ref::<fsx::Escape>().is_some()
        || e.downcast_ref::<fsx::Unfit>().is_some()
        || e.downcast_ref::<receipt::Damaged>().is_some();
    if refused {
        2
    } else {
        1
    }
}

/// Why uninstall may leave `t` alone after its plan failed with `e`: a file of it could not be
/// read (it does not parse, it is a directory, a FIFO, too large, a symlink loop), and nothing of
/// ovmem's is there to remove. So there is no receipt of `t`, no receipt of this home names the
/// file, and no file of `t` holds this home's runtime path (without a receipt, ovmem's entries
/// are found by marker, and the file that failed may have hidden them). `None`: a refusal still.
fn unread_and_not_ours(t: &Target, e: &anyhow::Error) -> Option<String> {
    let (path, why) = match (e.downcast_ref::<Refused>(), e.downcast_ref::<fsx::Unfit>()) {
        (Some(Refused::Unparseable { path, detail }), _) => (path.clone(), format!("it does not parse: {detail}")),
        (_, Some(u)) => (u.path().to_path_buf(), u.reason()),
        _ => return None,
    };
    if std::fs::symlink_metadata(t.receipt_path()).is_ok() {
        return None;
    }
    let home = t.env.ovmem_home();
    let real = fsx::resolve_in(&path, t.root()).unwrap_or_else(|_| path.clone());
    let recorded = receipt::load_all(&home)
        .ok()?
        .iter()
        .flat_map(|(_, r)| r.files.iter())
        .any(|f| f.path == path || f.path == real || fsx::resolve_in(&f.path, None).is_ok_and(|p| p == real));
    if recorded {
        return None;
    }
    let runtime = t.env.runtime_bin().display().to_string();
    let mut files: Vec<PathBuf> = t.hook_files().unwrap_or_default();
    files.extend(t.mcp_file().ok().flatten());
    files.push(path.clone());
    for f in files {
        let bytes = fsx::resolve_in(&f, t.root()).ok().and_then(|r| reads::read(&r).ok().flatten());
        if bytes.is_some_and(|b| memchr::memmem::find(&b, runtime.as_bytes()).is_some()) {
            return None;
        }
    }
    Some(format!(
        "could not read `{}` ({why}); no receipt records anything of ovmem's there, so it was left as it is",
        path.display()
    ))
}

/// The runtime copy to stage, when the running binary differs from it.
fn runtime_change<'a>(env: &Env) -> Result<Option<Change<'a>>> {
    let dest = env.runtime_bin();
    let exe = std::env::current_exe()?;
    if fsx::resolve_in(&exe, None).ok() == fsx::resolve_in(&dest, None).ok() {
        return Ok(None);
    }
    let bytes = std::fs::read(&exe).map_err(|e| anyhow::anyhow!("could not read `{}`: {e}", exe.display()))?;
    let same_size = std::fs::metadata(&dest).is_ok_and(|m| m.len() == bytes.len() as u64);
    let before = if same_size || dest.exists() { std::fs::read(&dest).ok() } else { None };
    if before.as_deref() == Some(&bytes[..]) {
        return Ok(None);
    }
    // Private like everything in `$OVMEM_HOME`; the harnesses run it as its owner.
    Ok(Some(Change {
        path: dest,
        before: before.map(Blob::from),
        after: Some(bytes.into()),
        mode: Mode::Set(0o700),
        kind: Kind::Own,
        redo: None,
    }))
}

/// Takes the installer lock, then finishes a transaction a dead process left (it may have died
/// after start-up looked).
pub fn lock(home: &Path) -> Result<InstallLock> {
    let lock = InstallLock::acquire(home)?;
    if let Some(r) = journal::recover(home)? {
        // Files were put back: what this command read before is stale.
        reads::forget_all();
        let p = crate::output::Printer::new();
        p.warn(&r.to_string());
        for w in &r.warnings {
            p.warn(w);
        }
    }
    Ok(lock)
}

/// Runs `verb` for every target: plan, then (unless a dry run) one transaction.
pub fn run(env: &Env, targets: &[Target], verb: Verb, opts: Options) -> Result<Outcome> {
    if verb == Verb::Install {
        check_runtime_path(env)?;
    }
    let home = env.ovmem_home();
    if !opts.dry_run {
        // ovmem's home private before the runtime is staged in it: an existing `~/.ovmem` left open
        // to others (made under umask 000, or by a dotfiles script) would let another local user
        // swap `bin/`, and every hook would run their program.
        // (Only then: a home that is private already is left as it is, and missing directories
        // are made private as the lock makes them.)
        if verb == Verb::Install && crate::home::open_to_others(env) {
            crate::home::prepare(env).with_context(|| format!("could not prepare `{}`", home.display()))?;
        }
        // From here on a signal is answered by rolling back, never by dying half-way.
        interrupt::arm();
    }
    let _lock = if opts.dry_run { None } else { Some(lock(&home)?) };
    // Every file is read once for the plan (the journal still reads each one again from disk
    // right before replacing it).
    let _reads = reads::scope();
    let mut out = Outcome::default();
    let mut plans: Vec<Option<TargetPlan>> = Vec::new();
    for t in targets {
        let mut r = HarnessResult::new(t.harness.id());
        match plan::plan(t, verb, opts) {
            Ok(p) => plans.push(Some(p)),
            Err(e) => {
                let skip = if verb == Verb::Uninstall { unread_and_not_ours(t, &e) } else { None };
                match skip {
                    Some(note) => r.skipped = Some(note),
                    None => {
                        r.code = refusal_code(&e);
                        r.error = Some(format!("{e:#}"));
                    }
                }
                plans.push(None);
            }
        }
        out.results.push(r);
    }
    if opts.dry_run {
        for (p, r) in plans.iter().zip(&mut out.results) {
            if let Some(p) = p {
                r.report = Some(report(p, true));
                if verb == Verb::Repair && p.old.is_none() && p.base.is_some() {
                    r.repaired = Some(p.target.receipt_path());
                }
            }
        }
        out.code = out.results.iter().map(|r| r.code).max().unwrap_or(0);
        return Ok(out);
    }
    let done = transact(env, &mut plans, &mut out, verb, opts);
    // With nothing installed (a failed first install, a refusal), nothing of ovmem's stays
    // behind, not even its lock.
    if receipt::paths(&home).is_empty() {
        let _ = std::fs::remove_file(home.join("locks").join("ovmem.lock"));
        fsx::remove_empty_dirs(&[
            env.runtime_bin().parent().expect("bin dir").to_path_buf(),
            receipt::dir(&home),
            home.join("locks"),
            journal::dir(&home),
        ]);
        crate::home::remove_if_bare(&home);
    }
    done?;
    for (p, r) in plans.iter().zip(&mut out.results) {
        if let Some(p) = p {
            r.report = Some(report(p, false));
        }
    }
    out.code = out.results.iter().map(|r| r.code).max().unwrap_or(0);
    Ok(out)
}

/// The transaction of a run: everything planned, applied and committed, or nothing.
fn transact(env: &Env, plans: &mut [Option<TargetPlan>], out: &mut Outcome, verb: Verb, opts: Options) -> Result<()> {
    let home = env.ovmem_home();
    interrupt::check()?;
    let mut tx = Tx::begin(&home, verb.as_str());
    let any = plans.iter().any(Option::is_some);
    // 1. The runtime first (so no hook ever points at a missing one), then backups, then files.
    let mut changes: Vec<Change> = Vec::new();
    if verb == Verb::Install && any {
        if let Some(c) = runtime_change(env)? {
            out.staged = Some(c.path.clone());
            changes.push(c);
        }
    }
    for p in plans.iter().flatten() {
        for f in &p.files {
            for b in &f.backups {
                changes.push(Change {
                    path: b.path.clone(),
                    before: b.before.clone(),
                    after: b.after.clone(),
                    mode: super::editor::backup_mode(&f.real),
                    kind: Kind::Backup,
                    redo: None,
                });
            }
        }
    }
    for p in plans.iter_mut().flatten() {
        for f in p.files.iter_mut() {
            let before = f.before.clone().map(Blob::from);
            let after = f.after.clone().map(Blob::from);
            changes.push(Change {
                path: f.real.clone(),
                before,
                after,
                mode: f.mode,
                kind: Kind::Shared,
                redo: Some(f),
            });
        }
    }
    tx.apply(&mut changes)?;
    drop(changes);
    // 2. Trust, now that the hooks are where the harness looks.
    let mut trusts: Vec<(Vec<TrustRecord>, Option<TrustConfig>)> = Vec::new();
    for (p, r) in plans.iter_mut().zip(out.results.iter_mut()) {
        let Some(p) = p else {
            trusts.push((Vec::new(), None));
            continue;
        };
        let (report, records, config) = if verb == Verb::Install && p.target.harness.manifest.trust.is_some() {
            trust_step(&mut tx, p, opts)?
        } else {
            (None, Vec::new(), None)
        };
        r.trust = report;
        trusts.push((records, config));
    }
    // 3. Receipts.
    let mut receipts: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    for ((p, r), (records, config)) in plans.iter().zip(out.results.iter_mut()).zip(trusts) {
        let Some(p) = p else { continue };
        let path = p.target.receipt_path();
        let next = next_receipt(p, records, config);
        if verb == Verb::Repair && p.old.is_none() && next.is_some() {
            r.repaired = Some(path.clone());
        }
        receipts.push((path, next.map(|n| n.to_bytes())));
    }
    let mut rchanges: Vec<Change> = Vec::new();
    for (path, after) in receipts {
        let before = std::fs::read(&path).ok();
        if before == after {
            continue;
        }
        let (before, after) = (before.map(Blob::from), after.map(Blob::from));
        rchanges.push(Change { path, before, after, mode: Mode::Keep { new: 0o600 }, kind: Kind::Own, redo: None });
    }
    tx.apply(&mut rchanges)?;
    drop(rchanges);
    // 4. Finishing steps.
    if verb == Verb::Uninstall {
        let mut dirs: Vec<PathBuf> = plans
            .iter()
            .flatten()
            .filter_map(|p| p.old.as_ref())
            .flat_map(|o| o.files.iter())
            .flat_map(|f| f.created_dirs.iter().cloned())
            .collect();
        // Deepest first, so a parent made for one file goes once the children made for another are gone.
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        dirs.dedup();
        let mut post = Post { remove_files: Vec::new(), remove_empty_dirs: dirs };
        // Nothing installed anywhere now: the lock and the empty directories of ovmem's
        // bookkeeping go. The staged runtime goes too (memories stay), but only when this uninstall
        // found something of ovmem's (a receipt, or entries it rebuilt one from): `OVMEM_HOME`
        // pointed at a directory ovmem never installed into (`~/.local`) holds no runtime of
        // ovmem's to remove.
        if receipt::paths(&home).is_empty() {
            let removed_some = plans.iter().flatten().any(|p| p.old.is_some() || p.base.is_some());
            let bin = env.runtime_bin();
            if removed_some {
                if bin.exists() {
                    out.removed_runtime = Some(bin.clone());
                }
                post.remove_files.push(bin.clone());
                post.remove_files.push(crate::cache::path(env));
                post.remove_empty_dirs.extend([
                    bin.parent().expect("bin dir").to_path_buf(),
                    crate::cache::path(env).parent().expect("cache dir").to_path_buf(),
                ]);
            }
            post.remove_files.push(home.join("locks").join("ovmem.lock"));
            post.remove_empty_dirs.extend([receipt::dir(&home), home.join("locks"), journal::dir(&home), home.clone()]);
        }
        tx.post(post);
    }
    out.warnings.extend(tx.commit()?);
    Ok(())
}

fn report(p: &TargetPlan, with_diff: bool) -> Report {
    let t = p.target;
    let mut warnings = p.warnings.clone();
    for f in &p.files {
        warnings.extend(f.edit.warnings.iter().cloned());
    }
    Report {
        harness: t.harness.id().to_string(),
        scope: t.scope,
        project: t.project.clone(),
        files: p.files.iter().map(|f| f.report(with_diff)).collect(),
        warnings,
    }
}

/// The directories the other receipts of this home record as made by ovmem.
fn others_dirs(t: &Target) -> Vec<PathBuf> {
    let others = receipt::load_all(&t.env.ovmem_home()).unwrap_or_default();
    let mine = t.receipt_path();
    others
        .into_iter()
        .filter(|(p, _)| *p != mine)
        .flat_map(|(_, r)| r.files.into_iter().flat_map(|f| f.created_dirs))
        .collect()
}

/// The receipt a target has after this run (`None`: it goes).
fn next_receipt(p: &TargetPlan, new_trust: Vec<TrustRecord>, trust_config: Option<TrustConfig>) -> Option<Receipt> {
    let t = p.target;
    match p.verb {
        Verb::Repair => p.old.clone().or_else(|| p.base.clone()),
        Verb::Uninstall => {
            // The receipt stays while something of ovmem's is left to track.
            let kept = p.files.iter().flat_map(|f| &f.edit.notes).any(|e| e.action == Action::UserEdited);
            if kept {
                p.old.clone()
            } else {
                None
            }
        }
        Verb::Install => {
            let mut files = Vec::new();
            let others_dirs = others_dirs(t);
            for f in &p.files {
                let Some(mut r) = f.edit.record.clone() else { continue };
                let prev = p.base.as_ref().and_then(|o| o.file(&r.path));
                if r.created_dirs.is_empty() {
                    r.created_dirs = prev
                        .map(|x| x.created_dirs.clone())
                        .filter(|d| !d.is_empty())
                        .unwrap_or_else(|| f.new_dirs.clone());
                }
                // A directory another harness's install made (`~/.gemini` for Gemini CLI and
                // Antigravity): this file's receipt records it too, so whichever uninstall comes
                // last takes it out once it is empty.
                for d in others_dirs.iter().filter(|d| r.path.starts_with(d) && r.path != **d) {
                    if !r.created_dirs.contains(d) {
                        r.created_dirs.push(d.clone());
                    }
                }
                r.created_dirs.sort_by_key(|d| d.components().count());
                r.backup_hash = f.backup_hash.clone().or_else(|| prev.and_then(|x| x.backup_hash.clone()));
                files.push(r);
            }
            let old = p.base.as_ref();
            let mut trust = old.map(|o| o.trust.clone()).unwrap_or_default();
            for w in new_trust {
                trust.retain(|x| x.key != w.key || x.config != w.config);
                trust.push(w);
            }
            Some(Receipt {
                schema: receipt::SCHEMA,
                ovmem_version: env!("CARGO_PKG_VERSION").to_string(),
                harness: t.harness.id().to_string(),
                scope: t.scope,
                project: t.project.clone(),
                runtime: t.env.runtime_bin(),
                files,
                trust,
                trust_config: old.and_then(|o| o.trust_config.clone()).or(trust_config),
            })
        }
    }
}

fn pending(message: String) -> Option<TrustReport> {
    Some(TrustReport { state: "pending".into(), message, problems: Vec::new() })
}

type TrustOut = (Option<TrustReport>, Vec<TrustRecord>, Option<TrustConfig>);

/// Trusts exactly the hooks ovmem wrote for this target, as one more change of `tx`.
fn trust_step(tx: &mut Tx, p: &TargetPlan, opts: Options) -> Result<TrustOut> {
    let t = p.target;
    let h = t.harness;
    if opts.no_trust {
        return Ok((pending(trust::manual_step(t)), Vec::new(), None));
    }
    let Ok(hooks_file) = t.location() else { return Ok((None, Vec::new(), None)) };
    let commands: BTreeSet<String> = p
        .files
        .iter()
        .filter(|f| f.path == hooks_file)
        .filter_map(|f| f.edit.record.as_ref())
        .flat_map(|r| r.entries.iter().flat_map(|e| e.commands.clone()))
        .collect();
    if commands.is_empty() {
        return Ok((None, Vec::new(), None));
    }
    let Some(binary) = h.detect(t.env).binary else {
        let msg = format!(
            "`{}` is not on PATH, so ovmem could not trust its hooks. {}",
            h.manifest.binaries[0],
            trust::manual_step(t)
        );
        return Ok((pending(msg), Vec::new(), None));
    };
    let real_hooks = fsx::resolve_in(&hooks_file, t.root())?;
    let mut pend = match trust::prepare(t, &binary, &real_hooks, &commands) {
        Ok(x) => x,
        Err(e) if e.downcast_ref::<interrupt::Interrupted>().is_some() => return Err(e),
        Err(e) => return Ok((pending(format!("trusting failed: {e:#}. {}", trust::manual_step(t))), Vec::new(), None)),
    };
    let problems = std::mem::take(&mut pend.problems);
    if pend.listed == 0 {
        let msg = if t.scope == Scope::Project {
            format!(
                "{} lists no hooks for `{}`: it loads project hooks only in trusted projects. Trust the project in {} \
                 (it asks on first start) and run `ovmem install` again; ovmem does not mark projects trusted for you",
                h.manifest.name,
                trust::cwd(t).display(),
                h.manifest.name
            )
        } else {
            format!("{} lists none of ovmem's hooks. {}", h.manifest.name, trust::manual_step(t))
        };
        let mut report = pending(msg).expect("a report");
        report.problems = problems;
        return Ok((Some(report), Vec::new(), None));
    }
    if pend.todo.is_empty() {
        let report = TrustReport {
            state: "already-trusted".into(),
            message: format!("{} ovmem hook(s) already trusted in {}", pend.already, h.manifest.name),
            problems,
        };
        return Ok((Some(report), Vec::new(), None));
    }
    // The trust records are one more edit, journaled like the rest.
    let config = pend.config.clone();
    let real = fsx::resolve_in(&config, None)?;
    let before = fsx::read_opt(&real)?.map(|b| String::from_utf8_lossy(&b).into_owned());
    let editor = trust::Trust { path: config.clone(), records: pend.todo.clone() };
    let edit = editor.edit(before.as_deref())?;
    let mut fp = FilePlan {
        path: config.clone(),
        real: real.clone(),
        before: before.clone().map(Into::into),
        after: None,
        edit: Default::default(),
        mode: Mode::Keep { new: 0o600 },
        editor: Box::new(editor),
        backups: Vec::new(),
        backup_hash: None,
        new_dirs: Vec::new(),
    };
    fp.set_edit(edit);
    let mode_before = fsx::meta(&real).map(|m| m.mode);
    let mut change = [Change {
        path: real.clone(),
        before: fp.before.clone().map(Blob::from),
        after: fp.after.clone().map(Blob::from),
        mode: fp.mode,
        kind: Kind::Shared,
        redo: Some(&mut fp),
    }];
    tx.apply(&mut change)?;
    let (trusted, left) = trust::confirm(&mut pend, t, &real_hooks, &commands)?;
    let records = pend.todo.clone();
    let config_record = TrustConfig { path: config, before, mode: mode_before };
    let report = if left == 0 {
        TrustReport {
            state: "trusted".into(),
            message: format!("trusted {} ovmem hook(s) in {}", records.len().min(trusted), h.manifest.name),
            problems,
        }
    } else {
        TrustReport {
            state: "pending".into(),
            message: format!("{left} ovmem hook(s) still pending trust. {}", trust::manual_step(t)),
            problems,
        }
    };
    Ok((Some(report), records, Some(config_record)))
}

/// Used by status and check: ovmem's hooks of a target and whether they are trusted.
pub fn trust_state(env: &Env, t: &Target, receipt: &Receipt) -> Option<String> {
    let h = t.harness;
    h.manifest.trust.as_ref()?;
    let Some(binary) = h.detect(env).binary else {
        return Some(format!("trust unknown: `{}` is not on PATH", h.manifest.binaries[0]));
    };
    Some(match trust::status(env, t, &binary, receipt) {
        Ok((n, pending)) if pending.is_empty() && n > 0 => "trusted".to_string(),
        Ok((_, pending)) if !pending.is_empty() => {
            format!("trust pending ({} hook(s)); open `/hooks` in {}", pending.len(), h.manifest.name)
        }
        Ok(_) => format!("trust pending: {} lists none of ovmem's hooks (is the project trusted?)", h.manifest.name),
        Err(e) => format!("trust unknown: {e:#}"),
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::Rc;

    use super::*;
    use crate::fsx::journal::moments;
    use crate::fsx::reads;

    /// Runs `verb` for Claude Code's user settings in `env` through the real plan and transaction
    /// (the runtime is a link to this test binary, so nothing is staged).
    fn transact_claude(env: &Env, verb: Verb) -> Outcome {
        // As `install::run` does: the installer's lock first (its directory marks the home as
        // ovmem's, see `marker::staged`).
        let _lock = lock(&env.ovmem_home()).unwrap();
        let t =
            Target { env, harness: crate::harness::find("claude-code").unwrap(), scope: Scope::User, project: None };
        let mut plans = vec![Some(plan::plan(&t, verb, Options::default()).unwrap())];
        let result = HarnessResult::new(t.harness.id());
        let mut out = Outcome { results: vec![result], ..Outcome::default() };
        transact(env, &mut plans, &mut out, verb, Options::default()).unwrap();
        out
    }

    /// An in-place writer (truncate and rewrite, no rename) racing ovmem's rename, at the exact
    /// moments that matter: it writes between ovmem's read and its rename, so ovmem puts that
    /// write back; but in the instant ovmem's bytes were in place the writer read them, and its
    /// next write (its own change on top of them) is what ovmem's redo finds. The hooks object
    /// and arrays in it are ovmem's first edit, copied: they must stay recorded as ovmem's, so
    /// uninstall takes them out again; a container the user had before install stays.
    #[test]
    fn a_redo_on_a_copy_of_ovmems_own_edit_still_records_what_ovmem_created() {
        for original in [r#"{"theme": "dark", "writer": 0}"#, r#"{"theme": "dark", "hooks": {}, "writer": 0}"#] {
            let tmp = tempfile::tempdir().unwrap();
            let home = tmp.path();
            let env = Env::from_vars(HashMap::from([("HOME".to_string(), home.display().to_string())])).unwrap();
            let bin = env.runtime_bin();
            std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(std::env::current_exe().unwrap(), &bin).unwrap();
            let settings = home.join(".claude/settings.json");
            std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
            std::fs::write(&settings, original).unwrap();

            // The harness: reads its file, sets its own key, writes it back in place.
            let rewrite = |path: &Path, from: &[u8], n: i64| {
                let mut v: serde_json::Value = serde_json::from_slice(from).unwrap();
                v["writer"] = n.into();
                std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
            };
            let steps = Rc::new(RefCell::new(Vec::<&'static str>::new()));
            let seen = Rc::new(RefCell::new(Vec::new()));
            let (s, read) = (Rc::clone(&steps), Rc::clone(&seen));
            let guard = moments::set(move |moment, path| {
                if path.file_name().is_none_or(|n| n != "settings.json") || s.borrow().len() == 3 {
                    return;
                }
                match (moment, s.borrow().len()) {
                    // Between ovmem's read and its rename: ovmem will put this write back.
                    ("before-exchange", 0) => rewrite(path, &std::fs::read(path).unwrap(), 1),
                    // The instant ovmem's bytes are in place: the harness reads them ...
                    ("exchanged", 1) => *read.borrow_mut() = std::fs::read(path).unwrap(),
                    // ... and writes them back with its own change, once its write is back.
                    ("put-back", 2) => rewrite(path, &read.borrow(), 2),
                    _ => return,
                }
                s.borrow_mut().push(moment);
            });
            let out = transact_claude(&env, Verb::Install);
            drop(guard);
            assert_eq!(*steps.borrow(), ["before-exchange", "exchanged", "put-back"], "the race did not happen");
            assert!(out.warnings.iter().any(|w| w.contains("written by another program")), "{:?}", out.warnings);
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
            assert_eq!(v["writer"], 2, "the harness's newest write is lost: {v}");
            for event in ["SessionStart", "UserPromptSubmit", "Stop", "PreToolUse", "SessionEnd"] {
                assert_eq!(v["hooks"][event].to_string().matches("ovmem hook claude-code").count(), 1, "{event}: {v}");
            }

            transact_claude(&env, Verb::Uninstall);
            let after: serde_json::Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
            let mut want: serde_json::Value = serde_json::from_str(original).unwrap();
            want["writer"] = 2.into();
            assert_eq!(after, want, "uninstall left ovmem's containers (or took the user's): from {original}");
        }
    }

    /// A home with the runtime linked to this test binary (nothing staged) and a
    /// `~/.claude.json` holding `text`; returns the env and the path of that file.
    fn claude_home(home: &Path, text: &str) -> (Env, PathBuf) {
        let env = Env::from_vars(HashMap::from([("HOME".to_string(), home.display().to_string())])).unwrap();
        let bin = env.runtime_bin();
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(std::env::current_exe().unwrap(), &bin).unwrap();
        let path = fsx::resolve(&home.join(".claude.json")).unwrap();
        std::fs::write(&path, text).unwrap();
        (env, path)
    }

    fn history(n: usize) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| format!("{{\"display\": \"prompt {i} {}\", \"pastedContents\": {{}}}}", "x".repeat(500)))
            .collect();
        format!(
            "{{\n  \"projects\": {{\n    \"/work/app\": {{\n      \"history\": [{}]\n    }}\n  }}\n}}\n",
            items.join(", ")
        )
    }

    /// The read-count guard: an install plans from one read of `~/.claude.json` (the rebuilt
    /// receipt, the editor and the backups share it), and the read right before the rename is
    /// one more, from disk. Anything else that reads the whole file again shows up here.
    #[test]
    fn an_install_reads_the_mcp_file_once_to_plan_and_again_from_disk_before_replacing_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (env, path) = claude_home(tmp.path(), &history(2_000));
        let t = Target {
            env: &env,
            harness: crate::harness::find("claude-code").unwrap(),
            scope: Scope::User,
            project: None,
        };
        let at_rename = Rc::new(RefCell::new(None));
        let seen = Rc::clone(&at_rename);
        let watched = path.clone();
        let guard = moments::set(move |moment, p| {
            if moment == "before-exchange" && p == watched && seen.borrow().is_none() {
                *seen.borrow_mut() = Some(fsx::counted_reads(&watched));
            }
        });
        let before = fsx::counted_reads(&path);
        let out = run(&env, std::slice::from_ref(&t), Verb::Install, Options::default()).unwrap();
        drop(guard);
        assert_eq!(out.code, 0, "{:?}", out.results);
        assert_eq!(
            *at_rename.borrow(),
            Some(before + 2),
            "reads of the file up to its rename: the plan's one and the re-read"
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(v["mcpServers"]["ovmem"].is_object());
        assert_eq!(std::fs::read(fsx::sibling(&path, ".ovmem.bak")).unwrap(), history(2_000).as_bytes());
    }

    /// Another program writes the file after ovmem planned from it (and kept what it read for
    /// the rest of the run): the read right before the rename goes to disk and sees it, so the
    /// edit is redone on those bytes before anything is replaced (no put-back needed).
    #[test]
    fn a_write_between_plan_and_apply_is_seen_by_the_reread_not_hidden_by_the_runs_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let original = history(50);
        let (env, path) = claude_home(tmp.path(), &original);
        let _lock = lock(&env.ovmem_home()).unwrap();
        let _reads = reads::scope();
        let t = Target {
            env: &env,
            harness: crate::harness::find("claude-code").unwrap(),
            scope: Scope::User,
            project: None,
        };
        let mut plans = vec![Some(plan::plan(&t, Verb::Install, Options::default()).unwrap())];
        // Claude Code writes its file meanwhile.
        let theirs = original.replacen("\"projects\"", "\"numStartups\": 313,\n  \"projects\"", 1);
        std::fs::write(&path, &theirs).unwrap();
        let moments_seen = Rc::new(RefCell::new(Vec::new()));
        let m = Rc::clone(&moments_seen);
        let guard = moments::set(move |moment, _| m.borrow_mut().push(moment));
        let mut out = Outcome { results: vec![HarnessResult::new(t.harness.id())], ..Outcome::default() };
        transact(&env, &mut plans, &mut out, Verb::Install, Options::default()).unwrap();
        drop(guard);
        assert!(
            !moments_seen.borrow().contains(&"put-back"),
            "the stale plan reached the disk: {:?}",
            moments_seen.borrow()
        );
        assert!(out.warnings.iter().any(|w| w.contains("written by another program")), "{:?}", out.warnings);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["numStartups"], 313, "their write is lost");
        assert!(v["mcpServers"]["ovmem"].is_object(), "ovmem's edit is lost");
    }
}

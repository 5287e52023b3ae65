//! `ovmem migrate` (and `ovmem uninstall --legacy`): take out the legacy integrations ovmem
//! recognises, and only those, through the same pipeline as install (diff preview, backups, one
//! journaled transaction, refusal on unparseable files); hook scripts and runtime directories are
//! then moved to `$OVMEM_HOME/backups/<time>/`, never deleted, never followed through a symlink.
//! Then install ovmem in their place. The harnesses to install are written down (a plan in
//! `$OVMEM_HOME/state/migrate-plan.json`) before anything is removed and crossed out once ovmem
//! is installed in all of them, so a migrate killed in between is finished by the next one.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::carry::{self, Carry};
use super::{interactive, parse_harnesses, scope_and_project, tilde, Refusal, Selection};
use crate::env::Env;
use crate::fsx;
use crate::fsx::journal::{Change, Kind, Mode, Tx};
use crate::harness::{self, Harness};
use crate::install::editor::{self, FilePlan};
use crate::install::plan;
use crate::install::{Options, Verb};
use crate::legacy::{self, Kind as FindingKind, Scan};
use crate::output::{self, Printer};

#[derive(Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub sel: Selection,
}

/// What a migrate has still to install: written before the first legacy entry is removed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Plan {
    harnesses: Vec<String>,
    scope: crate::harness::Scope,
    project: Option<PathBuf>,
    force: bool,
    started_at: i64,
}

fn plan_path(env: &Env) -> PathBuf {
    env.ovmem_home().join("state").join("migrate-plan.json")
}

/// A plan left by a migrate that did not finish: the harnesses it had still to install.
pub fn unfinished(env: &Env) -> Option<Vec<String>> {
    let bytes = std::fs::read(plan_path(env)).ok()?;
    serde_json::from_slice::<Plan>(&bytes).ok().map(|p| p.harnesses)
}

fn write_plan(env: &Env, plan: &Plan) -> Result<()> {
    let path = plan_path(env);
    let dir = path.parent().expect("state dir");
    fsx::create_dirs(dir, Some(0o700)).map_err(|e| anyhow::anyhow!("could not create `{}`: {e}", dir.display()))?;
    fsx::write_atomic(&path, &serde_json::to_vec_pretty(plan)?, Some(0o600))
}

fn cross_out(env: &Env) -> Result<()> {
    match std::fs::remove_file(plan_path(env)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow::anyhow!("could not remove `{}`: {e}", plan_path(env).display()))
        }
        _ => Ok(()),
    }
}

/// Finishes a migrate that was killed after it removed legacy integrations: installs ovmem into
/// the harnesses its plan names (installing is idempotent: what is there already stays), then
/// crosses the plan out. Returns the install's exit code, or `None` without a plan.
fn resume(env: &Env, json: bool) -> Result<Option<i32>> {
    let Ok(bytes) = std::fs::read(plan_path(env)) else { return Ok(None) };
    let plan: Plan = match serde_json::from_slice(&bytes) {
        Ok(p) => p,
        Err(e) => {
            Printer::new().warn(&format!(
                "`{}` is not a migrate plan ({e}); it is ignored and removed",
                tilde(env, &plan_path(env))
            ));
            cross_out(env)?;
            return Ok(None);
        }
    };
    let targets: Vec<&'static Harness> = plan.harnesses.iter().filter_map(|h| harness::find(h)).collect();
    if !json {
        eprintln!(
            "{} an interrupted migrate: installing ovmem for {}",
            Printer::new().bold("finishing"),
            plan.harnesses.join(", ")
        );
    }
    let done = super::install::install_harnesses(
        env,
        &targets,
        plan.scope,
        plan.project.as_deref(),
        Options { dry_run: false, force: plan.force, no_trust: false },
        json,
    )?;
    cross_out(env)?;
    Ok(Some(done.code))
}

pub fn run(sel: &Selection, install_after: bool, env: &Env) -> Result<i32> {
    let resumed = if install_after && !sel.dry_run { resume(env, sel.json)? } else { None };
    let code = run_once(sel, install_after, env)?;
    Ok(if code == 0 { resumed.unwrap_or(0) } else { code })
}

fn run_once(sel: &Selection, install_after: bool, env: &Env) -> Result<i32> {
    let (scope, project) = scope_and_project(sel)?;
    let scan = Scan { env, project: project.as_deref() };
    let report = legacy::scan(&scan, false);
    if !report.errors.is_empty() {
        let p = Printer::new();
        for e in &report.errors {
            // The error names its file already when it says where a link leads.
            let error = crate::termsafe::clean(&e.error);
            if e.error.contains(&e.file.display().to_string()) {
                eprintln!("{} {error}", p.red("error:"));
            } else {
                eprintln!("{} `{}`: {error}", p.red("error:"), tilde(env, &e.file));
            }
        }
        return Err(Refusal(format!(
            "{} file(s) could not be read or parsed (above), so nothing was changed; fix or move them and run again",
            report.errors.len()
        ))
        .into());
    }
    let wanted: Option<Vec<String>> = match sel.harness.as_deref() {
        None | Some("all") => None,
        Some(list) => Some(parse_harnesses(list, env)?.iter().map(|h| h.id().to_string()).collect()),
    };
    let selected: BTreeSet<String> = report
        .findings
        .iter()
        .filter(|f| matches!(f.kind, FindingKind::Legacy | FindingKind::Deprecated))
        .filter(|f| wanted.as_ref().is_none_or(|w| f.harnesses.iter().any(|h| w.contains(h))))
        .map(|f| f.integration.clone())
        .collect();
    let mut targets: Vec<&'static Harness> = Vec::new();
    for f in report.findings.iter().filter(|f| selected.contains(&f.integration)) {
        for h in f.harnesses.iter().filter_map(|h| harness::find(h)) {
            if wanted.as_ref().is_none_or(|w| w.iter().any(|x| x == h.id()))
                && !targets.iter().any(|t| t.id() == h.id())
            {
                targets.push(h);
            }
        }
    }
    let p = Printer::new();
    // The old integrations' server settings, read before their files move to the backup (and
    // before anything of ovmem's is created: a refusal here leaves no trace).
    let carry = if install_after && !selected.is_empty() {
        let findings: Vec<&legacy::Finding> =
            report.findings.iter().filter(|f| selected.contains(&f.integration)).collect();
        carry::plan(env, &findings, wanted.as_deref().unwrap_or(&[]), project.as_deref(), sel.force)?
    } else {
        Carry::Nothing
    };
    let _lock = if sel.dry_run { None } else { Some(crate::install::apply::lock(&env.ovmem_home())?) };
    let removal = legacy::plan_removal(&scan, &selected)?;
    let mut files: Vec<FilePlan> = Vec::new();
    for strip in removal.edits {
        let path = strip.path.clone();
        let mut fp = editor::file_plan(path, project.as_deref(), Mode::Keep { new: 0o644 }, Box::new(strip))?;
        p_warn_all(&p, plan::plan_backups(&mut fp, None, Verb::Install));
        files.push(fp);
    }
    for s in &removal.skipped {
        p.warn(s);
    }
    if selected.is_empty() {
        eprintln!("{} no legacy integrations to migrate", p.green("ok:"));
    } else if !sel.json {
        eprintln!("{} {}", p.bold("removing:"), selected.iter().cloned().collect::<Vec<_>>().join(", "));
        for f in &files {
            eprintln!("  {} `{}`", p.yellow("edit"), tilde(env, &f.path));
            if sel.dry_run {
                print!("{}", editor::diff(&f.path, f.before.as_deref(), f.after.as_deref()).unwrap_or_default());
            }
        }
        for m in &removal.moves {
            eprintln!("  {} `{}` (to a backup)", p.yellow("move"), tilde(env, m));
        }
        carry.explain(env, sel.dry_run);
    }
    let edited: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    if sel.dry_run {
        if sel.json {
            output::json(
                &serde_json::json!({"dry_run": true, "remove": selected, "edits": edited, "moves": removal.moves,
                "backend": carry.json(None)}),
            );
        }
        return Ok(0);
    }
    if !selected.is_empty() && !sel.yes {
        if !interactive() {
            return Err(Refusal(
                "migrate changes config files; pass --yes to go ahead (or --dry-run to see the diff)".into(),
            )
            .into());
        }
        if !crate::prompt::confirm("Remove these legacy integrations?", false)? {
            eprintln!("nothing was changed");
            return Ok(2);
        }
    }
    // The plan before any change: a migrate killed from here on is finished by the next one.
    if install_after && !targets.is_empty() {
        let plan = Plan {
            harnesses: targets.iter().map(|h| h.id().to_string()).collect(),
            scope,
            project: project.clone(),
            force: sel.force,
            started_at: crate::store::now(),
        };
        write_plan(env, &plan)?;
    }
    // The backend first: if anything after it fails, the old hooks and ovmem use the same server,
    // and running migrate again finds it configured already.
    let adopted = match carry.adopt() {
        Some(planned) => {
            let label = carry.label(env);
            Some(super::install::apply_backend(env, &planned, false, sel.json, label.as_deref())?)
        }
        None => None,
    };
    let backup_root = env.ovmem_home().join("backups").join(timestamp());
    let mut moved: Vec<(PathBuf, PathBuf)> = Vec::new();
    if !selected.is_empty() {
        crate::interrupt::arm();
        let mut tx = Tx::begin(&env.ovmem_home(), "migrate");
        let mut changes: Vec<Change> = Vec::new();
        for f in &files {
            for b in &f.backups {
                changes.push(Change {
                    path: b.path.clone(),
                    before: b.before.clone(),
                    after: b.after.clone(),
                    mode: editor::backup_mode(&f.real),
                    kind: Kind::Backup,
                    redo: None,
                });
            }
        }
        for f in files.iter_mut() {
            let before = f.before.clone().map(fsx::Blob::from);
            let after = f.after.clone().map(fsx::Blob::from);
            changes.push(Change {
                path: f.real.clone(),
                before,
                after,
                mode: f.mode,
                kind: Kind::Shared,
                redo: Some(f),
            });
        }
        tx.apply(&mut changes)?;
        drop(changes);
        for w in tx.commit()? {
            p.warn(&w);
        }
        // Each move is one rename: every item is either where it was or in the backup.
        for m in &removal.moves {
            moved.push((m.clone(), legacy::move_to_backup(m, &backup_root)?));
        }
    }
    drop(_lock);
    let mut code = 0;
    let mut installed = serde_json::Value::Null;
    if install_after && !targets.is_empty() {
        let done = super::install::install_harnesses(
            env,
            &targets,
            scope,
            project.as_deref(),
            Options { dry_run: false, force: sel.force, no_trust: false },
            sel.json,
        )?;
        code = done.code;
        installed = done.json.unwrap_or_default();
        cross_out(env)?;
    }
    if sel.json {
        output::json(
            &serde_json::json!({"removed": selected, "edited": edited, "moved": moved, "installed": targets.iter().map(|h| h.id()).collect::<Vec<_>>(), "install": installed,
                "backend": carry.json(adopted)}),
        );
    } else if !selected.is_empty() {
        eprintln!(
            "{} {} legacy integration(s); file backups are `<file>.ovmem.bak`{}",
            p.green("removed"),
            selected.len(),
            if moved.is_empty() {
                String::new()
            } else {
                format!(", moved items are under `{}`", tilde(env, &backup_root))
            }
        );
    }
    Ok(code)
}

fn p_warn_all(p: &Printer, ws: Vec<String>) {
    for w in ws {
        p.warn(&w);
    }
}

/// `YYYYMMDD-HHMMSS` (UTC) for backup folder names.
fn timestamp() -> String {
    let now = crate::store::now();
    let date = crate::runtime::format_date(now).replace('-', "");
    let s = now.rem_euclid(86_400);
    format!("{date}-{:02}{:02}{:02}-{}", s / 3600, s / 60 % 60, s % 60, std::process::id())
}

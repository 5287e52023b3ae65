//! `ovmem uninstall`: remove exactly what the receipts say ovmem added (without a receipt, what
//! ovmem's markers and backups show), the trust records it wrote, and the directories it
//! created; the runtime goes once nothing uses it. One transaction.

use anyhow::Result;
use clap::Args;

use super::{interactive, parse_harnesses, scope_and_project, tilde, Refusal, Selection};
use crate::env::Env;
use crate::harness::{self, Harness, Scope};
use crate::install::{self, Action, Options, Target, Verb};
use crate::output::{self, Printer};
use crate::receipt;

/// Whether an uninstall plan would change or report anything of ovmem's in a harness.
fn touches(r: &install::Report) -> bool {
    r.changed() || !r.warnings.is_empty() || r.files.iter().any(|f| !f.entries.is_empty())
}

#[derive(Args)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub sel: Selection,
    /// Remove the legacy integrations ovmem recognises instead (OpenViking, Hindsight), without installing ovmem
    #[arg(long)]
    pub legacy: bool,
    /// Remove every trace: every harness at user scope and in every project a receipt names (hooks,
    /// MCP entries, trust records), the staged runtime, receipts, logs, caches. Memories stay
    #[arg(long, conflicts_with_all = ["harness", "project", "legacy"])]
    pub all: bool,
    /// With --all: also delete the memories (memory.db, spooled turns), config.toml, credentials,
    /// backend state and migrate's backups, then `$OVMEM_HOME` itself when nothing else is in it
    #[arg(long, requires = "all")]
    pub purge: bool,
}

/// What `--all` leaves for the memories' sake; `--purge` deletes these too.
const MEMORIES: &[&str] =
    &["memory.db", "memory.db-wal", "memory.db-shm", "spool", "config.toml", "credentials.toml", "state", "backups"];

/// ovmem's own bookkeeping in `$OVMEM_HOME`, gone with `--all` once no harness has ovmem's hooks.
const TRACES: &[&str] = &["bin", "receipts", "logs", "cache", "locks", "journal", ".private-checked"];

pub fn run(args: UninstallArgs, env: &Env) -> Result<i32> {
    if args.all {
        return run_all(&args, env);
    }
    let sel = &args.sel;
    let (scope, project) = scope_and_project(sel)?;
    let named = sel.harness.is_some();
    let harnesses: Vec<&'static Harness> = match &sel.harness {
        Some(list) => parse_harnesses(list, env)?,
        None => harness::all().iter().filter(|h| h.scope(scope).is_ok()).collect(),
    };
    let opts = Options { dry_run: sel.dry_run, force: sel.force, no_trust: false };
    let targets: Vec<Target> =
        harnesses.iter().map(|h| Target { env, harness: h, scope, project: project.clone() }).collect();
    // With --yes nothing comes between the look and the removal: the files are read once for
    // both (a prompt ends this first, so the removal plans from what is on disk by then).
    let mut reads = Some(crate::fsx::reads::scope());
    if !sel.dry_run {
        // What removing would do, planned without writing: nothing at all needs no --yes.
        let plan = install::run(env, &targets, Verb::Uninstall, Options { dry_run: true, ..opts })?;
        let installed: Vec<&str> = targets
            .iter()
            .zip(&plan.results)
            .filter(|(t, r)| r.error.is_none() && (t.receipt_path().exists() || r.report.as_ref().is_some_and(touches)))
            .map(|(t, _)| t.harness.id())
            .collect();
        let failed: Vec<&install::HarnessResult> = plan.results.iter().filter(|r| r.error.is_some()).collect();
        if installed.is_empty() && sel.json {
            output::json(&serde_json::json!({"dry_run": false, "scope": scope, "harnesses": plan.results}));
            return Ok(plan.code);
        }
        if installed.is_empty() {
            // Files that could not be read, with nothing of ovmem's in them: said, not refused.
            warn_skipped(&plan);
        }
        if installed.is_empty() && !failed.is_empty() {
            // Nothing ovmem can tell is installed, and files it could not read: say which.
            let p = Printer::new();
            for r in &failed {
                eprintln!(
                    "{} {}: {}",
                    p.red("✗"),
                    p.bold(&r.harness),
                    crate::termsafe::clean(r.error.as_deref().unwrap_or_default())
                );
            }
            return Ok(plan.code);
        }
        if installed.is_empty() {
            let which = if named {
                format!(" for {}", harnesses.iter().map(|h| h.id()).collect::<Vec<_>>().join(", "))
            } else {
                String::new()
            };
            let where_ = match &project {
                Some(p) => format!("project `{}`", tilde(env, p)),
                None => "user scope".to_string(),
            };
            eprintln!("ovmem is not installed{which} ({where_}); nothing to remove");
            return Ok(0);
        }
        if !sel.yes {
            reads = None;
            if !interactive() || sel.json {
                return Err(Refusal(format!(
                    "uninstall changes config files of {}; pass --yes to go ahead (or --dry-run to see the diff)",
                    installed.join(", ")
                ))
                .into());
            }
            let p = Printer::new();
            eprintln!("{} ({} scope):", p.bold("ovmem will remove"), scope.as_str());
            for r in &failed {
                eprintln!(
                    "  {} {}: {}",
                    p.red("✗"),
                    r.harness,
                    crate::termsafe::clean(r.error.as_deref().unwrap_or_default())
                );
            }
            for r in plan.results.iter().filter(|r| installed.contains(&r.harness.as_str())) {
                for f in r.report.iter().flat_map(|rep| rep.files.iter()).filter(|f| f.change != "unchanged") {
                    let what = if f.change == "deleted" { "delete (ovmem created it)" } else { "edit" };
                    eprintln!("  {}  `{}`: {what}", r.harness, tilde(env, &f.path));
                }
            }
            if !crate::prompt::confirm(&format!("Remove ovmem from {}?", installed.join(", ")), false)? {
                eprintln!("nothing was changed");
                return Ok(2);
            }
        }
    }
    let out = install::run(env, &targets, Verb::Uninstall, opts)?;
    drop(reads);
    if sel.json {
        output::json(&serde_json::json!({"dry_run": opts.dry_run, "scope": scope, "harnesses": out.results}));
        return Ok(out.code);
    }
    let shown = print_results(env, &out, named, opts.dry_run);
    let p = Printer::new();
    if shown == 0 && !named {
        eprintln!("ovmem is not installed ({} scope); nothing to remove", scope.as_str());
    }
    if let Some(bin) = &out.removed_runtime {
        let db = env.ovmem_home().join("memory.db");
        let kept = if db.exists() { format!("; memories stay in `{}`", tilde(env, &db)) } else { String::new() };
        eprintln!("{} runtime `{}`{kept}", p.yellow("removed"), tilde(env, bin));
    }
    Ok(out.code)
}

/// The files uninstall left as they are because they could not be read and nothing of ovmem's is
/// recorded in them, as warnings.
fn warn_skipped(out: &install::Outcome) {
    let p = Printer::new();
    for r in &out.results {
        if let Some(s) = &r.skipped {
            p.warn(&format!("{}: {s}", r.harness));
        }
    }
}

/// Each harness's removal as lines on stderr (diffs on stdout for a dry run); how many were shown.
fn print_results(env: &Env, out: &install::Outcome, named: bool, dry_run: bool) -> usize {
    let p = Printer::new();
    let mut shown = 0;
    warn_skipped(out);
    for r in &out.results {
        if let Some(e) = &r.error {
            eprintln!("{} {}: {}", p.red("✗"), p.bold(&r.harness), crate::termsafe::clean(e));
            shown += 1;
            continue;
        }
        let Some(report) = &r.report else { continue };
        if report.files.iter().all(|f| f.entries.is_empty() && f.change == "unchanged") && report.warnings.is_empty() {
            if !named {
                continue;
            }
            eprintln!("{} {}: not installed ({} scope)", p.dim("·"), p.bold(&r.harness), report.scope.as_str());
            continue;
        }
        shown += 1;
        for f in &report.files {
            eprintln!("{} {} `{}`: {}", p.green("✓"), p.bold(&r.harness), tilde(env, &f.path), f.change);
            for e in &f.entries {
                match e.action {
                    Action::Removed => eprintln!(
                        "    {} {} removed{}",
                        p.yellow("-"),
                        e.event,
                        e.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
                    ),
                    _ => eprintln!(
                        "    {} {} {}",
                        p.yellow("!"),
                        e.event,
                        e.detail.as_deref().unwrap_or("left in place")
                    ),
                }
            }
            if dry_run {
                if let Some(d) = &f.diff {
                    print!("{d}");
                }
            }
        }
        for w in &report.warnings {
            p.warn(w);
        }
    }
    for w in &out.warnings {
        p.warn(w);
    }
    shown
}

/// `uninstall --all [--purge]`: every harness at user scope and in every project a receipt names,
/// in one transaction; then ovmem's bookkeeping, and with `--purge` the memories too.
fn run_all(args: &UninstallArgs, env: &Env) -> Result<i32> {
    let sel = &args.sel;
    let home = env.ovmem_home();
    let mut targets: Vec<Target> = harness::all()
        .iter()
        .filter(|h| h.scope(Scope::User).is_ok())
        .map(|h| Target { env, harness: h, scope: Scope::User, project: None })
        .collect();
    let mut projects: Vec<(String, std::path::PathBuf)> = receipt::load_all(&home)?
        .into_iter()
        .filter(|(_, r)| r.scope == Scope::Project)
        .filter_map(|(_, r)| r.project.map(|p| (r.harness, p)))
        .collect();
    projects.sort();
    projects.dedup();
    for (id, project) in projects {
        if let Some(h) = harness::find(&id) {
            targets.push(Target { env, harness: h, scope: Scope::Project, project: Some(project) });
        }
    }
    let opts = Options { dry_run: sel.dry_run, force: sel.force, no_trust: false };
    let here: Vec<String> =
        MEMORIES.iter().chain(TRACES).filter(|n| home.join(n).exists()).map(|n| n.to_string()).collect();
    if !sel.dry_run && !sel.yes {
        let what = if args.purge { "every ovmem hook and all memories" } else { "every ovmem hook (memories stay)" };
        if !interactive() || sel.json {
            return Err(Refusal(format!(
                "uninstall --all{} removes {what}; pass --yes to go ahead (or --dry-run to see the diff)",
                if args.purge { " --purge" } else { "" }
            ))
            .into());
        }
        if !crate::prompt::confirm(&format!("Remove {what}?"), false)? {
            eprintln!("nothing was changed");
            return Ok(2);
        }
    }
    // Its directories are deleted whole, so only from a directory that is ovmem's: one where ovmem
    // kept receipts, memories or its privacy stamp. `OVMEM_HOME=~/.local` set by mistake must not
    // take `~/.local/bin` with it.
    let ovmem_home = ["receipts", "memory.db", ".private-checked"].iter().any(|n| home.join(n).exists());
    let out = install::run(env, &targets, Verb::Uninstall, opts)?;
    let mut removed: Vec<String> = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    let left = receipt::paths(&home);
    if !opts.dry_run && left.is_empty() && !ovmem_home && !here.is_empty() {
        Printer::new().warn(&format!(
            "`{}` has no receipts, memories or stamp of ovmem's: not an ovmem home, so nothing was deleted from it",
            home.display()
        ));
    }
    if !opts.dry_run && left.is_empty() && ovmem_home {
        let names: Vec<&str> = TRACES.iter().chain(if args.purge { MEMORIES } else { &[] }).copied().collect();
        for n in names {
            let p = home.join(n);
            if std::fs::symlink_metadata(&p).is_err() {
                continue;
            }
            let gone =
                if p.is_dir() && !p.is_symlink() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            match gone {
                Ok(()) => removed.push(n.to_string()),
                Err(e) => Printer::new().warn(&format!("could not remove `{}`: {e}", p.display())),
            }
        }
        if args.purge && std::fs::remove_dir(&home).is_ok() {
            removed.push(home.display().to_string());
        }
    }
    if !args.purge {
        kept = MEMORIES.iter().filter(|n| home.join(n).exists()).map(|n| n.to_string()).collect();
    }
    if sel.json {
        output::json(&serde_json::json!({
            "dry_run": opts.dry_run,
            "harnesses": out.results,
            "ovmem_home": home,
            "present": here,
            "removed": removed,
            "kept": kept,
            "receipts_left": left,
        }));
        return Ok(out.code);
    }
    let shown = print_results(env, &out, false, opts.dry_run);
    let p = Printer::new();
    if shown == 0 {
        eprintln!("no harness has ovmem's hooks");
    }
    if opts.dry_run {
        eprintln!(
            "{} from `{}`: {}",
            p.bold("then would remove"),
            tilde(env, &home),
            if args.purge {
                here.join(", ")
            } else {
                TRACES.iter().filter(|n| here.contains(&n.to_string())).copied().collect::<Vec<_>>().join(", ")
            }
        );
        return Ok(out.code);
    }
    if !left.is_empty() {
        p.warn(&format!(
            "{} receipt(s) are left in `{}` for hooks that could not be removed (see above); the runtime and receipts stay until they are",
            left.len(),
            tilde(env, &receipt::dir(&home))
        ));
    }
    if !removed.is_empty() {
        eprintln!("{} from `{}`: {}", p.yellow("removed"), tilde(env, &home), removed.join(", "));
    }
    if !kept.is_empty() {
        eprintln!(
            "{} in `{}`: {} (`ovmem uninstall --all --purge --yes` deletes them)",
            p.green("memories kept"),
            tilde(env, &home),
            kept.join(", ")
        );
    }
    eprintln!(
        "the `ovmem` command itself stays: remove it the way it was installed (npm uninstall -g ovmem, pipx uninstall ovmem, cargo uninstall ovmem, or delete {})",
        std::env::current_exe().map(|e| e.display().to_string()).unwrap_or_else(|_| "the binary".into())
    );
    Ok(out.code)
}

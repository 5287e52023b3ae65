//! `ovmem uninstall`: remove exactly what the receipts say ovmem added (without a receipt, what
//! ovmem's markers and backups show), the trust records it wrote, and the directories it
//! created; the runtime goes once nothing uses it. One transaction.

use anyhow::Result;
use clap::Args;

use super::{interactive, parse_harnesses, scope_and_project, tilde, Refusal, Selection};
use crate::env::Env;
use crate::harness::{self, Harness};
use crate::install::{self, Action, Options, Target, Verb};
use crate::output::{self, Printer};

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
}

pub fn run(args: UninstallArgs, env: &Env) -> Result<i32> {
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
        if installed.is_empty() && !failed.is_empty() {
            // Nothing ovmem can tell is installed, and files it could not read: say which.
            let p = Printer::new();
            for r in &failed {
                eprintln!("{} {}: {}", p.red("✗"), p.bold(&r.harness), r.error.as_deref().unwrap_or_default());
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
                eprintln!("  {} {}: {}", p.red("✗"), r.harness, r.error.as_deref().unwrap_or_default());
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
    if sel.json {
        output::json(&serde_json::json!({"dry_run": opts.dry_run, "scope": scope, "harnesses": out.results}));
        return Ok(out.code);
    }
    let p = Printer::new();
    let mut shown = 0;
    for r in &out.results {
        if let Some(e) = &r.error {
            eprintln!("{} {}: {e}", p.red("✗"), p.bold(&r.harness));
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
            if opts.dry_run {
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

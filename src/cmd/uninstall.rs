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
    let harnesses: Vec<&'static Harness> = match &sel.harness {
        Some(list) => parse_harnesses(list, env)?,
        None => harness::all().iter().filter(|h| h.scope(scope).is_ok()).collect(),
    };
    if !sel.yes && !sel.dry_run {
        let names: Vec<&str> = harnesses.iter().map(|h| h.id()).collect();
        if !interactive() {
            return Err(Refusal(format!(
                "uninstall changes config files of {}; pass --yes to go ahead (or --dry-run to see the diff)",
                names.join(", ")
            ))
            .into());
        }
        let go = dialoguer::Confirm::new()
            .with_prompt(format!("Remove ovmem from {} ({} scope)?", names.join(", "), scope.as_str()))
            .default(false)
            .interact()?;
        if !go {
            return Err(Refusal("nothing was changed".into()).into());
        }
    }
    let opts = Options { dry_run: sel.dry_run, force: sel.force, no_trust: false };
    let targets: Vec<Target> =
        harnesses.iter().map(|h| Target { env, harness: h, scope, project: project.clone() }).collect();
    let out = install::run(env, &targets, Verb::Uninstall, opts)?;
    if sel.json {
        output::json(&serde_json::json!({"dry_run": opts.dry_run, "scope": scope, "harnesses": out.results}));
        return Ok(out.code);
    }
    let p = Printer::new();
    for r in &out.results {
        if let Some(e) = &r.error {
            eprintln!("{} {}: {e}", p.red("✗"), p.bold(&r.harness));
            continue;
        }
        let Some(report) = &r.report else { continue };
        if report.files.iter().all(|f| f.entries.is_empty() && f.change == "unchanged") && report.warnings.is_empty() {
            eprintln!("{} {}: not installed ({} scope)", p.dim("·"), p.bold(&r.harness), report.scope.as_str());
            continue;
        }
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
    if let Some(bin) = &out.removed_runtime {
        let db = env.ovmem_home().join("memory.db");
        let kept = if db.exists() { format!("; memories stay in `{}`", tilde(env, &db)) } else { String::new() };
        eprintln!("{} runtime `{}`{kept}", p.yellow("removed"), tilde(env, bin));
    }
    Ok(out.code)
}

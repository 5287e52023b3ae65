//! `ovmem repair`: rebuild a receipt that was lost (`rm -rf ~/.ovmem`, a second `OVMEM_HOME`) or
//! damaged, from ovmem's markers in the harnesses' files and the pristine `.ovmem.bak` backups
//! beside them, so that `ovmem uninstall` is exact again.

use anyhow::Result;
use clap::Args;

use super::{parse_harnesses, scope_and_project, tilde, Selection};
use crate::env::Env;
use crate::harness::{self, Harness};
use crate::install::{self, Options, Target, Verb};
use crate::output::{self, Printer};
use crate::receipt;

#[derive(Args)]
pub struct RepairArgs {
    #[command(flatten)]
    pub sel: Selection,
}

pub fn run(args: RepairArgs, env: &Env) -> Result<i32> {
    let sel = &args.sel;
    let (scope, project) = scope_and_project(sel)?;
    let harnesses: Vec<&'static Harness> = match &sel.harness {
        Some(list) => parse_harnesses(list, env)?,
        None => harness::all().iter().filter(|h| h.scope(scope).is_ok()).collect(),
    };
    let targets: Vec<Target> =
        harnesses.iter().map(|h| Target { env, harness: h, scope, project: project.clone() }).collect();
    let opts = Options { dry_run: sel.dry_run, force: sel.force, no_trust: true };
    let out = install::run(env, &targets, Verb::Repair, opts)?;
    if sel.json {
        output::json(&serde_json::json!({"dry_run": opts.dry_run, "scope": scope, "harnesses": out.results}));
        return Ok(out.code);
    }
    let p = Printer::new();
    for (t, r) in targets.iter().zip(&out.results) {
        let rpath = t.receipt_path();
        match (&r.error, &r.repaired) {
            (Some(e), _) => eprintln!("{} {}: {e}", p.red("✗"), p.bold(&r.harness)),
            (None, Some(path)) if opts.dry_run => {
                eprintln!("{} {}: would rebuild `{}`", p.green("✓"), p.bold(&r.harness), tilde(env, path));
            }
            (None, Some(path)) => {
                let files = receipt::load(path).ok().flatten().map(|r| r.files).unwrap_or_default();
                eprintln!("{} {}: rebuilt `{}`", p.green("✓"), p.bold(&r.harness), tilde(env, path));
                for f in files {
                    let events: Vec<&str> = f.entries.iter().map(|e| e.event.as_str()).collect();
                    eprintln!("    {} `{}`: {}", p.dim("·"), tilde(env, &f.path), events.join(", "));
                }
            }
            (None, None) if rpath.exists() => {
                eprintln!("{} {}: the receipt is fine (`{}`)", p.dim("="), p.bold(&r.harness), tilde(env, &rpath));
            }
            (None, None) => eprintln!("{} {}: nothing of ovmem's found", p.dim("·"), p.bold(&r.harness)),
        }
    }
    if opts.dry_run {
        eprintln!("\n{} nothing was written", p.bold("dry run:"));
    }
    Ok(out.code)
}

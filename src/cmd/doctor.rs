//! `ovmem doctor [--json]`: runs every installed hook as its harness would and reports what works
//! (a CI gate like `check`: exit 0 healthy, 1 problems, ovmem's own config's among them, 2 bad
//! usage or a harness file or receipt it cannot read).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{parse_harnesses, tilde};
use crate::doctor::{self, HookReport, Report};
use crate::env::Env;
use crate::output::{self, Printer};

#[derive(Args)]
pub struct DoctorArgs {
    /// Only these harnesses (comma-separated ids or aliases; default: every installed one)
    #[arg(long, value_name = "LIST")]
    pub harness: Option<String>,
    /// Project-scope installs of this project only (default: every project ovmem installed into)
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Report as JSON on stdout (a stable shape, `version: 1`)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DoctorArgs, env: &Env) -> Result<i32> {
    let harnesses = args.harness.as_deref().map(|l| parse_harnesses(l, env)).transpose()?;
    let project = args.project.as_deref().map(|p| super::project_dir(Some(p))).transpose()?;
    // A config ovmem cannot use is a finding like the others: doctor is where the user finds
    // out what is wrong, so it says so and goes on with every other check.
    let report = doctor::run(env, &doctor::Options { harnesses, project })?;
    let code = if !report.errors.is_empty() {
        2
    } else if report.problems > 0 {
        1
    } else {
        0
    };
    if args.json {
        output::json(&report);
    } else {
        print(env, &report);
    }
    Ok(code)
}

/// `mark` (maybe coloured) padded to the widest status, `timed-out`.
fn pad(_: &Printer, mark: &str, plain: &str) -> String {
    format!("{mark}{}", " ".repeat(9usize.saturating_sub(plain.chars().count())))
}

fn hook_line(p: &Printer, h: &HookReport) -> String {
    let mark = if h.status == "ok" { p.green("ok") } else { p.red(h.status) };
    let took = h.latency_ms.map(|l| format!(" {l} ms")).unwrap_or_default();
    let what = match (h.recalled, h.captured, h.output) {
        _ if h.status != "ok" => h.problem.clone().unwrap_or_default(),
        (Some(true), _, _) => "injected the project's memory".into(),
        (_, Some(true), _) => "stored the turn".into(),
        (_, _, Some(s)) => s.as_str().into(),
        _ => String::new(),
    };
    let owner = match h.owner {
        "ovmem" | "missing" => String::new(),
        o => p.yellow(&format!(" [{o}]")),
    };
    format!("  {} {:<20}{took}{owner}  {}", pad(p, &mark, h.status), h.event, p.dim(&what))
}

fn print(env: &Env, r: &Report) {
    let p = Printer::new();
    println!(
        "{}",
        p.dim("hooks run as their harness runs them, against a throwaway copy of ovmem's config (your memories are not touched)")
    );
    if r.targets.is_empty() {
        println!("ovmem is not installed for any harness (`ovmem install`); nothing to check");
    }
    for t in &r.targets {
        let scope = match &t.project {
            Some(pr) => format!("project `{}`", tilde(env, pr)),
            None => t.scope.as_str().to_string(),
        };
        let file = t.location.as_ref().map(|l| format!(" `{}`", tilde(env, l))).unwrap_or_default();
        println!("\n{} ({scope}){file}", p.bold(&t.harness));
        if let Some(s) = &t.skipped {
            println!("  {}", p.dim(s));
        }
        for h in &t.hooks {
            println!("{}", hook_line(&p, h));
            if h.status != "ok" && !h.command.is_empty() {
                println!("            {}", p.dim(&format!("ran: {}", h.command)));
            }
        }
        match t.trust.state {
            "n/a" => {}
            s => {
                let mark = match s {
                    "trusted" => p.green("ok"),
                    "pending" => p.red(s),
                    _ => p.yellow(s),
                };
                let plain = if s == "trusted" { "ok" } else { s };
                println!(
                    "  {} {:<20}  {}",
                    pad(&p, &mark, plain),
                    "trust",
                    p.dim(t.trust.detail.as_deref().unwrap_or(""))
                );
            }
        }
        if let Some(m) = &t.mcp {
            let mark = if m.status == "ok" { p.green("ok") } else { p.red(m.status) };
            let mark = pad(&p, &mark, m.status);
            let took = m.latency_ms.map(|l| format!(" {l} ms")).unwrap_or_default();
            let what = match &m.problem {
                Some(x) => x.clone(),
                None => format!("{} in `{}`", m.tools.join(", "), tilde(env, &m.file)),
            };
            println!("  {mark} {:<20}{took}  {}", "mcp server", p.dim(&what));
        }
    }
    for d in &r.duplicates {
        println!("\n{} {}: {}", p.red("duplicate"), tilde(env, &d.file), d.message);
    }
    for l in &r.legacy {
        println!("{} {l}", p.yellow("legacy"));
    }
    if !r.runtime.present && !r.targets.is_empty() {
        println!(
            "\n{} the runtime `{}` is missing: every hook fails; `ovmem install` stages it again",
            p.red("!"),
            tilde(env, &r.runtime.path)
        );
    }
    if let Some(stale) = &r.runtime.stale {
        println!("\n{} {stale}", p.red("!"));
    }
    if let Some(n) = &r.not_yours {
        let others = match n.count {
            1 => " belongs".to_string(),
            c => format!(" and {} more belong", c - 1),
        };
        let owner = if n.owner == 0 { "root".to_string() } else { format!("uid {}", n.owner) };
        println!(
            "\n{} `{}`{others} to {owner}, not to you: the hooks run as you and cannot store, log or spool in ovmem's home",
            p.red("!"),
            tilde(env, &n.first),
        );
        let fix = format!(
            "fix: sudo chown -R \"$(id -u):$(id -g)\" {}",
            crate::shell::quote(&r.ovmem_home.to_string_lossy())
        );
        let fix = crate::termsafe::clean(&fix);
        println!("  {}", p.dim(&fix));
    }
    for c in &r.config {
        let file = c.file.as_ref().map(|f| tilde(env, f));
        let place = match (&c.key, &file) {
            (Some(k), Some(f)) => format!("`{k}` in `{f}`"),
            (Some(k), None) => match &c.value {
                Some(v) => format!("`{k}` (it is `{v}`)"),
                None => format!("`{k}`"),
            },
            (None, Some(f)) => format!("`{f}`"),
            (None, None) => String::new(),
        };
        println!("\n{} {place} {}; hooks meanwhile: {}", p.red("config"), c.problem, c.hooks);
        println!("       {}", p.dim(&format!("fix: {}", c.fix)));
    }
    let b = &r.backend;
    let mark = match b.status {
        "ok" => p.green("ok"),
        "failed" => p.red("failed"),
        _ => p.dim("skipped"),
    };
    let took = b.latency_ms.map(|l| format!(" in {l} ms")).unwrap_or_default();
    println!("\nbackend {} {mark}{took}: {}", b.kind, b.detail.as_deref().unwrap_or(""));
    for e in &r.errors {
        println!("{} {}: {}", p.red("error"), tilde(env, &e.file), crate::termsafe::clean(&e.error));
    }
    if r.ok {
        if !r.targets.is_empty() {
            eprintln!("{} every installed hook works", p.green("healthy:"));
        }
    } else {
        eprintln!("\n{} problem(s), {} unreadable file(s)", r.problems, r.errors.len());
    }
}

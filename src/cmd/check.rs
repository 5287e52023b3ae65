//! `ovmem check`: legacy, deprecated and duplicate memory integrations, and ovmem's own drift, as
//! a CI gate. Exit 0 clean, 1 findings, 2 a file could not be read or parsed.

use anyhow::Result;

use std::path::PathBuf;

use clap::Args;

use super::tilde;
use crate::env::Env;
use crate::legacy::{self, Scan, Severity};
use crate::output::{self, Printer};

#[derive(Args)]
pub struct CheckArgs {
    /// Check only this repository tree (for CI) instead of the user's own configs
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Github,
}

pub fn run(args: CheckArgs, env: &Env) -> Result<i32> {
    let env = env.clone();
    let project = args.project.as_deref().map(|p| super::project_dir(Some(p))).transpose()?;
    let report = legacy::scan(&Scan { env: &env, project: project.as_deref() }, project.is_none());
    let code = if !report.errors.is_empty() {
        2
    } else if report.findings.is_empty() {
        0
    } else {
        1
    };
    // Paths relative to the project, so annotations land on the repository's files.
    let shown = |p: &std::path::Path| match &project {
        Some(root) => p.strip_prefix(root).map(|r| r.display().to_string()).unwrap_or_else(|_| p.display().to_string()),
        None => tilde(&env, p),
    };
    match args.format {
        Format::Json => output::json(&serde_json::json!({
            "version": 1,
            "scope": if project.is_some() { "project" } else { "user" },
            "project": project,
            "findings": report.findings,
            "errors": report.errors,
        })),
        Format::Github => {
            for f in &report.findings {
                let level = if f.severity == Severity::Error { "error" } else { "warning" };
                let line = f.line.map(|l| format!(",line={l}")).unwrap_or_default();
                println!(
                    "::{level} file={}{line},title=ovmem {:?} {}::{} ({}). Fix: {}",
                    shown(&f.file),
                    f.kind,
                    f.integration,
                    escape_annotation(&f.message),
                    escape_annotation(&f.entry),
                    escape_annotation(&f.fix)
                );
            }
            for e in &report.errors {
                println!(
                    "::error file={}::ovmem could not check this file: {}",
                    shown(&e.file),
                    escape_annotation(&e.error)
                );
            }
        }
        Format::Text => {
            let p = Printer::new();
            for f in &report.findings {
                let sev = if f.severity == Severity::Error { p.red("error") } else { p.yellow("warning") };
                let loc = format!("{}{}", shown(&f.file), f.line.map(|l| format!(":{l}")).unwrap_or_default());
                println!("{sev} {loc}: {} [{}]", f.entry, p.bold(&f.integration));
                println!("    {}", f.message);
                println!("    {} {}", p.dim("fix:"), f.fix);
            }
            for e in &report.errors {
                println!("{} {}: {}", p.red("error"), shown(&e.file), e.error);
            }
            if report.findings.is_empty() && report.errors.is_empty() {
                eprintln!("{} no legacy, deprecated or duplicate memory integrations found", p.green("ok:"));
            } else {
                eprintln!("\n{} finding(s), {} unreadable file(s)", report.findings.len(), report.errors.len());
            }
        }
    }
    Ok(code)
}

/// GitHub workflow commands need `%`, CR and LF escaped in messages.
fn escape_annotation(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A").replace("::", ": :")
}

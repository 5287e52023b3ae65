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
    let mut report = legacy::scan(&Scan { env: &env, project: project.as_deref() }, project.is_none());
    if project.is_none() {
        report.findings.extend(queue_findings(&env));
    }
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
                    "::{level} file={}{line},title={}::{} ({}). Fix: {}",
                    escape_property(&shown(&f.file)),
                    escape_property(&format!("ovmem {:?} {}", f.kind, f.integration)),
                    escape_annotation(&f.message),
                    escape_annotation(&f.entry),
                    escape_annotation(&f.fix)
                );
            }
            for e in &report.errors {
                println!(
                    "::error file={}::ovmem could not check this file: {}",
                    escape_property(&shown(&e.file)),
                    escape_annotation(&e.error)
                );
            }
        }
        Format::Text => {
            let p = Printer::new();
            // File names and entries come from the files checked: shown without control sequences.
            let safe = |s: &str| crate::termsafe::clean(s).into_owned();
            for f in &report.findings {
                let sev = if f.severity == Severity::Error { p.red("error") } else { p.yellow("warning") };
                let loc = format!("{}{}", shown(&f.file), f.line.map(|l| format!(":{l}")).unwrap_or_default());
                println!("{sev} {}: {} [{}]", safe(&loc), safe(&f.entry), p.bold(&safe(&f.integration)));
                println!("    {}", safe(&f.message));
                println!("    {} {}", p.dim("fix:"), safe(&f.fix));
            }
            for e in &report.errors {
                println!("{} {}: {}", p.red("error"), safe(&shown(&e.file)), safe(&e.error));
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

/// How long a memory may wait for the server (or a spooled turn for the store) before `check`
/// calls it stuck: hooks send the queue at every session start, so a day means they cannot.
const STALE_AFTER: i64 = 86_400;

/// The queue as findings: memories waiting for the remote backend, and spooled turns, older than
/// [`STALE_AFTER`].
fn queue_findings(env: &Env) -> Vec<legacy::Finding> {
    let now = crate::store::now();
    let mut out = Vec::new();
    let finding = |file: std::path::PathBuf, entry: &str, message: String, fix: &str| legacy::Finding {
        file,
        line: None,
        entry: entry.to_string(),
        integration: "ovmem".into(),
        vendor: "ovmem".into(),
        kind: legacy::Kind::StaleQueue,
        severity: Severity::Warning,
        message,
        fix: fix.to_string(),
        harnesses: Vec::new(),
    };
    let db = env.ovmem_home().join("memory.db");
    if db.exists() {
        crate::home::private_umask();
        let depth =
            crate::store::Store::open(&db, std::time::Duration::from_millis(500)).and_then(|s| s.outbox_depth());
        let backend = || {
            crate::backend::Settings::load(env)
                .ok()
                .and_then(|s| {
                    s.url.map(|u| format!("{} at {}", s.kind.value.name(), crate::backend::redact_url(&u.value)))
                })
                .unwrap_or_else(|| "the memory server".into())
        };
        if let Ok(d) = &depth {
            if d.parked > 0 {
                out.push(finding(
                    db.clone(),
                    "outbox",
                    format!(
                        "{} refused by {} and parked (kept in the local store, no longer sent); last reason: {}",
                        if d.parked == 1 { "1 memory was".to_string() } else { format!("{} memories were", d.parked) },
                        backend(),
                        d.parked_error.as_deref().unwrap_or("none given")
                    ),
                    "see why with `ovmem status`; once the cause is fixed, `ovmem sync --retry-parked` sends them again",
                ));
            }
        }
        if let Ok(crate::store::Depth { queued: n, since: Some(since), last_error: err, .. }) = depth {
            if n > 0 && now - since > STALE_AFTER {
                let backend = backend();
                out.push(finding(
                    db.clone(),
                    "outbox",
                    format!(
                        "{} waited since {} to be sent to {backend}{}",
                        if n == 1 { "1 memory has".to_string() } else { format!("{n} memories have") },
                        super::status::format_age(since),
                        err.map(|e| format!("; last error: {e}")).unwrap_or_default()
                    ),
                    "check the server with `ovmem backend test`, then send them with `ovmem sync`",
                ));
            }
        }
    }
    let spool = crate::runtime::spool::depth(env);
    let (n, oldest) = (spool.waiting, spool.oldest);
    if let Some(t) = oldest.filter(|t| n > 0 && now - t > STALE_AFTER) {
        out.push(finding(
            crate::runtime::spool::dir(env),
            "spool",
            format!(
                "{} waited since {} to be stored (the store was locked or could not be opened)",
                if n == 1 { "1 captured turn has".to_string() } else { format!("{n} captured turns have") },
                super::status::format_age(t)
            ),
            "run `ovmem sync` to store them; if it fails, see `~/.ovmem/logs/hook.log`",
        ));
    }
    out
}

/// GitHub workflow commands need `%`, CR and LF escaped in messages.
fn escape_annotation(s: &str) -> String {
    crate::termsafe::clean(s).replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A").replace("::", ": :")
}

/// A property of a workflow command (`file=…`): escaped like a message, and `,` and `:` too, so a
/// file name cannot end the property or the command.
fn escape_property(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A").replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file name can neither end an annotation's property nor start a workflow command of its own.
    #[test]
    fn a_file_name_stays_inside_its_annotation_property() {
        let name = ".kiro/agents/a\n::stop-commands::zzz\n,title=x.json";
        let p = escape_property(name);
        assert!(!p.contains('\n') && !p.contains("::") && !p.contains(','), "{p}");
        assert_eq!(p, ".kiro/agents/a%0A%3A%3Astop-commands%3A%3Azzz%0A%2Ctitle=x.json");
        assert!(!escape_annotation("a\u{1b}]52;c;x\u{7}b\nc").contains('\u{1b}'));
    }
}

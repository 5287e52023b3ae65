//! `ovmem migrate` keeps the user's memory: the memory server the replaced integrations used
//! (hindsight-cline, Hindsight's coding-agents and older plugins, OpenViking's plugins) becomes
//! ovmem's backend, with its URL, bank or user, and token (read by `backend::legacy`).
//!
//! The rules, in order:
//! - settings read from inside a project are never adopted: a repository is untrusted input, and a
//!   committed `settings.json` must not decide where every project's memories go; ovmem shows the
//!   command that would adopt them instead;
//! - several integrations pointing at different servers or banks: none is guessed; each is shown;
//! - a backend the user configured already (not `local`) is kept unless it is the same one, or
//!   `--force` is given;
//! - a bank is carried as `[backend] bank`, so ovmem keeps reading and writing the bank that holds
//!   the old memories (hindsight-cline: `cline`) instead of deriving a team bank per repository.
//!
//! Tokens are carried into `credentials.toml` and never shown: messages say "with a token".

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{json, Value};

use super::install::{describe, Planned};
use super::{tilde, Refusal};
use crate::backend::legacy::{self as readers, Found};
use crate::backend::{self, BackendConfig, Choice, Kind};
use crate::env::Env;
use crate::legacy::Finding;
use crate::output::Printer;

/// What migrating does with the old connection settings.
pub enum Carry {
    /// No replaced integration named a server.
    Nothing,
    /// Adopt this one.
    Adopt { integration: String, found: Found },
    /// ovmem already uses exactly this server (and bank or user).
    Same { integration: String, found: Found },
    /// The user configured another backend; kept (`--force` switches).
    Kept { integration: String, found: Found, current: String },
    /// Integrations disagree about the server; nothing is guessed.
    Ambiguous(Vec<(String, Found)>),
    /// Read from inside a project: shown, never adopted.
    Untrusted { integration: String, found: Found },
}

/// The connection settings of the integrations being replaced, and what to do with them.
/// `findings` are the selected integrations' findings; `wanted` the harnesses asked for.
pub fn plan(env: &Env, findings: &[&Finding], wanted: &[String], project: Option<&Path>, force: bool) -> Result<Carry> {
    let mut found: Vec<(String, Found)> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut push = |integration: &str, r: Result<Option<Found>>| match r {
        Ok(Some(f)) => found.push((integration.to_string(), f)),
        Ok(None) => {}
        Err(e) => errors.push(format!("{integration}: {e:#}")),
    };
    let integrations: BTreeSet<&str> = findings.iter().map(|f| f.integration.as_str()).collect();
    if integrations.contains("hindsight-cline") {
        let dirs: BTreeSet<PathBuf> = findings
            .iter()
            .filter(|f| f.integration == "hindsight-cline")
            .filter_map(|f| f.file.parent().map(Path::to_path_buf))
            .collect();
        for d in dirs {
            push("hindsight-cline", readers::hindsight_cline(&d.join("settings.json"), env));
        }
    }
    if integrations.contains("hindsight-coding-agents") {
        push("hindsight-coding-agents", readers::hindsight_coding_agents(env));
    }
    if integrations.contains("hindsight-legacy-plugins") {
        // The per-agent files whose layout is known (`hindsight_agent_plugin`).
        for (harness, agent) in [("claude-code", "claude-code"), ("codex", "codex")] {
            let relevant = findings
                .iter()
                .any(|f| f.integration == "hindsight-legacy-plugins" && f.harnesses.iter().any(|h| h == harness));
            if relevant && (wanted.is_empty() || wanted.iter().any(|w| w == harness)) {
                push("hindsight-legacy-plugins", readers::hindsight_agent_plugin(env, agent));
            }
        }
    }
    if let Some(ov) = integrations.iter().find(|i| i.starts_with("openviking-")) {
        push(ov, readers::openviking(env));
    }
    if !errors.is_empty() && !force {
        return Err(Refusal(format!(
            "the old integration's server settings could not be read, so nothing was changed: {}. Fix the file, or \
             pass --force to migrate without carrying them over",
            errors.join("; ")
        ))
        .into());
    }
    for e in &errors {
        Printer::new().warn(&format!("{e}; its settings were not carried over"));
    }
    // The same server and bank found twice (a global and a per-agent file) counts once.
    let mut distinct: Vec<(String, Found)> = Vec::new();
    for (i, f) in found {
        if !distinct.iter().any(|(_, d)| same_target(&d.choice, &f.choice)) {
            distinct.push((i, f));
        }
    }
    let (integration, found) = match distinct.len() {
        0 => return Ok(Carry::Nothing),
        1 => distinct.pop().expect("one"),
        _ => return Ok(Carry::Ambiguous(distinct)),
    };
    let in_project = |p: &PathBuf| project.is_some_and(|root| p.starts_with(root));
    if found.sources.iter().any(in_project) {
        return Ok(Carry::Untrusted { integration, found });
    }
    let current = backend::settings::configured(env);
    if current.kind == Kind::Local {
        return Ok(Carry::Adopt { integration, found });
    }
    if same_as_configured(&current, &found.choice) {
        return Ok(Carry::Same { integration, found });
    }
    if force {
        return Ok(Carry::Adopt { integration, found });
    }
    Ok(Carry::Kept { integration, found, current: describe_config(&current) })
}

fn norm(url: &str) -> String {
    url.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Two choices that reach the same memories: kind, server, and bank or user.
fn same_target(a: &Choice, b: &Choice) -> bool {
    match (a, b) {
        (Choice::Hindsight { url: u1, bank: b1, .. }, Choice::Hindsight { url: u2, bank: b2, .. }) => {
            norm(u1) == norm(u2) && b1 == b2
        }
        (
            Choice::Openviking { url: u1, user: x1, account: a1, .. },
            Choice::Openviking { url: u2, user: x2, account: a2, .. },
        ) => norm(u1) == norm(u2) && x1 == x2 && a1 == a2,
        (Choice::Local, Choice::Local) => true,
        _ => false,
    }
}

fn same_as_configured(c: &BackendConfig, choice: &Choice) -> bool {
    let url = c.url.as_deref().map(norm);
    match choice {
        Choice::Hindsight { url: u, bank, .. } => {
            c.kind == Kind::Hindsight && url == Some(norm(u)) && (bank.is_none() || c.bank == *bank)
        }
        Choice::Openviking { url: u, user, account, .. } => {
            c.kind == Kind::Openviking
                && url == Some(norm(u))
                && (user.is_none() || c.user == *user)
                && (account.is_none() || c.account == *account)
        }
        Choice::Local => c.kind == Kind::Local,
    }
}

fn describe_config(c: &BackendConfig) -> String {
    let url = c.url.as_deref().map(backend::redact_url).unwrap_or_else(|| "(no URL)".into());
    match c.kind {
        Kind::Hindsight => describe(&Choice::Hindsight { url, token: None, bank: c.bank.clone() }),
        Kind::Openviking => {
            describe(&Choice::Openviking { url, api_key: None, user: c.user.clone(), account: c.account.clone() })
        }
        Kind::Local => describe(&Choice::Local),
    }
}

fn sources(env: &Env, f: &Found) -> String {
    f.sources.iter().map(|s| format!("`{}`", tilde(env, s))).collect::<Vec<_>>().join(", ")
}

/// The `ovmem install` flags that would adopt `choice` (the secret through stdin, never shown; a
/// password in the URL is masked).
fn adopt_command(choice: &Choice) -> String {
    let choice = &match choice.clone() {
        Choice::Hindsight { url, token, bank } => Choice::Hindsight { url: backend::redact_url(&url), token, bank },
        Choice::Openviking { url, api_key, user, account } => {
            Choice::Openviking { url: backend::redact_url(&url), api_key, user, account }
        }
        Choice::Local => Choice::Local,
    };
    match choice {
        Choice::Local => "ovmem install --backend local".into(),
        Choice::Hindsight { url, token, bank } => format!(
            "ovmem install --harness all --backend hindsight --api-url {url}{}{}",
            bank.as_ref().map(|b| format!(" --bank {b}")).unwrap_or_default(),
            if token.is_some() { " --api-token -" } else { "" }
        ),
        Choice::Openviking { url, api_key, user, account } => format!(
            "ovmem install --harness all --backend openviking --api-url {url}{}{}{}",
            user.as_ref().map(|u| format!(" --user {u}")).unwrap_or_default(),
            account.as_ref().map(|a| format!(" --account {a}")).unwrap_or_default(),
            if api_key.is_some() { " --api-key -" } else { "" }
        ),
    }
}

impl Carry {
    /// How the saved backend is introduced: which integration it came from.
    pub fn label(&self, env: &Env) -> Option<String> {
        match self {
            Carry::Adopt { integration, found } => {
                Some(format!("backend carried over from {integration} ({}):", sources(env, found)))
            }
            _ => None,
        }
    }

    /// The settings to save, if any.
    pub fn adopt(&self) -> Option<Planned> {
        match self {
            Carry::Adopt { found, .. } => {
                let from = found.sources.first().map(|s| s.display().to_string());
                let token = match &found.choice {
                    Choice::Hindsight { token, .. } => token.is_some(),
                    Choice::Openviking { api_key, .. } => api_key.is_some(),
                    Choice::Local => false,
                };
                Some(Planned {
                    choice: found.choice.clone(),
                    url_from: from.clone(),
                    token_from: if token { from } else { None },
                })
            }
            _ => None,
        }
    }

    /// Says what happens to the old settings (before anything is written, and in dry runs).
    pub fn explain(&self, env: &Env, dry_run: bool) {
        let p = Printer::new();
        match self {
            Carry::Nothing => {}
            Carry::Adopt { integration, found } => {
                if dry_run {
                    eprintln!(
                        "{} {integration}'s memory server: {} (from {})",
                        p.bold("backend: would carry over"),
                        describe(&found.choice),
                        sources(env, found)
                    );
                }
                for n in &found.notes {
                    eprintln!("    {} {n}", p.dim("note:"));
                }
            }
            Carry::Same { integration, found } => eprintln!(
                "{} ovmem already uses {integration}'s memory server: {}",
                p.bold("backend:"),
                describe(&found.choice)
            ),
            Carry::Kept { integration, found, current } => p.warn(&format!(
                "ovmem's backend is already {current}; {integration} used {} (from {}), which is not carried over. \
                 Pass --force to switch to it, or keep yours",
                describe(&found.choice),
                sources(env, found)
            )),
            Carry::Ambiguous(all) => {
                p.warn("the integrations being replaced used different memory servers, so none was carried over:");
                for (i, f) in all {
                    eprintln!(
                        "    {i}: {} (from {}): `{}`",
                        describe(&f.choice),
                        sources(env, f),
                        adopt_command(&f.choice)
                    );
                }
                eprintln!("    run one of these to keep that memory, or migrate one harness at a time with --harness");
            }
            Carry::Untrusted { integration, found } => p.warn(&format!(
                "{integration} in this project used {} (from {}); settings inside a project are not adopted as \
                 ovmem's backend for every project. To use that server: `{}`",
                describe(&found.choice),
                sources(env, found),
                adopt_command(&found.choice)
            )),
        }
    }

    /// For `--json`: what was found and done, never a token.
    pub fn json(&self, adopted: Option<Value>) -> Value {
        let one = |state: &str, integration: &str, f: &Found| {
            json!({"state": state, "integration": integration, "backend": describe(&f.choice),
                   "sources": f.sources, "notes": f.notes})
        };
        let mut v = match self {
            Carry::Nothing => json!({"state": "none"}),
            Carry::Adopt { integration, found } => one("carried", integration, found),
            Carry::Same { integration, found } => one("already-configured", integration, found),
            Carry::Kept { integration, found, .. } => one("kept-yours", integration, found),
            Carry::Untrusted { integration, found } => one("not-adopted-from-project", integration, found),
            Carry::Ambiguous(all) => json!({"state": "ambiguous", "candidates":
                all.iter().map(|(i, f)| json!({"integration": i, "backend": describe(&f.choice), "sources": f.sources})).collect::<Vec<_>>()}),
        };
        if let Some(a) = adopted {
            v["saved"] = a;
        }
        v
    }
}

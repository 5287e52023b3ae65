//! `ovmem backend show|test`: which memory backend is configured and where each value comes from
//! (tokens only as present or absent), and whether the server answers within the hook budgets.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Subcommand;
use serde::Serialize;
use serde_json::{json, Value};

use super::tilde;
use crate::backend::{self, Kind, Settings, Source, Sourced};
use crate::config::BankMode;
use crate::env::Env;
use crate::output::{self, Printer};

#[derive(Subcommand)]
pub enum BackendCommand {
    /// What is configured, and where each value comes from
    Show {
        /// Report as JSON on stdout
        #[arg(long)]
        json: bool,
    },
    /// Check that the server answers: health, then a recall within the recall budget (exit 1 if not)
    Test {
        /// The bank to recall from (Hindsight; default: the configured bank, else this directory's)
        #[arg(long)]
        bank: Option<String>,
        /// Report as JSON on stdout
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: BackendCommand) -> Result<i32> {
    let env = Env::from_process()?;
    let settings = Settings::load(&env)?;
    // A setting it cannot use is named (the hooks only log it), and the rest is shown or tested.
    let as_json = matches!(cmd, BackendCommand::Show { json: true } | BackendCommand::Test { json: true, .. });
    if !as_json {
        let p = Printer::new();
        for problem in &settings.problems {
            p.warn(&format!("config: {}", problem.for_terminal()));
        }
    }
    match cmd {
        BackendCommand::Show { json } => show(&env, &settings, json),
        BackendCommand::Test { bank, json } => test(&env, &settings, bank, json),
    }
}

fn from(env: &Env, s: &Source) -> String {
    match s {
        Source::Config(p) | Source::Credentials(p) => tilde(env, p),
        other => other.to_string(),
    }
}

fn sourced(env: &Env, v: &Option<Sourced<String>>) -> Value {
    match v {
        Some(s) => json!({ "value": s.value, "from": from(env, &s.from) }),
        None => Value::Null,
    }
}

/// What hooks do while a key that says where memories go is invalid (see `settings::decides_where`).
const NOT_SENT: &str = "hooks send nothing to the server until it is fixed (memories stay in the local store)";

fn show(env: &Env, s: &Settings, as_json: bool) -> Result<i32> {
    let token = s.token.as_ref().map(|t| from(env, &t.from));
    // A key of the wrong type is not an unset one: an unset `bank` is a team bank per project,
    // an invalid one keeps memories off the server.
    let invalid = |key: &str| s.invalid.iter().find(|p| p.key.as_deref() == Some(key));
    let config = tilde(env, &backend::settings::config_path(env));
    let field = |key: &str, v: &Option<Sourced<String>>| match (v, invalid(key)) {
        (None, Some(p)) => json!({ "value": null, "from": config, "invalid": p.what, "hooks": NOT_SENT }),
        _ => sourced(env, v),
    };
    if as_json {
        output::json(&json!({
            "kind": { "value": s.kind.value.id(), "from": from(env, &s.kind.from) },
            "url": field("backend.url", &s.url.as_ref().map(|u| Sourced { value: backend::redact_url(&u.value), from: u.from.clone() })),
            "bank": field("backend.bank", &s.bank),
            "user": field("backend.user", &s.user),
            "account": field("backend.account", &s.account),
            "token": { "present": token.is_some(), "from": token },
            "recall_budget_ms": s.recall_budget.as_millis() as u64,
            "send_budget_ms": s.send_budget.as_millis() as u64,
            "ignored_env": s.ignored_env,
            "unusable": s.unusable,
            "problems": s.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }));
        return Ok(0);
    }
    let p = Printer::new();
    let row = |label: &str, value: &str, origin: Option<String>| {
        let origin = origin.map(|o| format!("  {}", p.dim(&format!("({o})")))).unwrap_or_default();
        println!("{:<9} {value}{origin}", p.bold(label));
    };
    row("backend", s.kind.value.id(), Some(from(env, &s.kind.from)));
    let bad = |label: &str, q: &crate::config::Problem| {
        row(label, &p.red(&format!("invalid: {}; {NOT_SENT}", q.what)), Some(config.clone()))
    };
    match s.kind.value {
        Kind::Local => {
            println!("          memories stay in this machine's store; `ovmem install --backend hindsight|openviking` shares them");
        }
        kind => {
            match &s.url {
                Some(u) => row("url", &backend::redact_url(&u.value), Some(from(env, &u.from))),
                None => match invalid("backend.url") {
                    Some(q) => bad("url", q),
                    None => row("url", &p.red("not set"), kind.url_env().map(|e| format!("set ${e} or [backend] url"))),
                },
            }
            if kind == Kind::Hindsight {
                match &s.bank {
                    Some(b) => row("bank", &b.value, Some(from(env, &b.from))),
                    None => match invalid("backend.bank") {
                        Some(q) => bad("bank", q),
                        None => row("bank", "one team bank per project, named from its git remote", None),
                    },
                }
            } else {
                match &s.user {
                    Some(u) => row("user", &u.value, Some(from(env, &u.from))),
                    None => match invalid("backend.user") {
                        Some(q) => bad("user", q),
                        None => row("user", "from the API key (or the server's default user)", None),
                    },
                }
                match &s.account {
                    Some(a) => row("account", &a.value, Some(from(env, &a.from))),
                    None => {
                        if let Some(q) = invalid("backend.account") {
                            bad("account", q);
                        }
                    }
                }
            }
            row("token", if token.is_some() { "present" } else { "absent" }, token);
            if !s.unusable.is_empty() {
                row(
                    "status",
                    &p.red(
                        "not used: hooks send nothing to the server and keep memories in the local store (not queued \
                         for it) until the setting(s) above are fixed",
                    ),
                    None,
                );
            }
            row(
                "budgets",
                &format!("recall {} ms, send {} ms", s.recall_budget.as_millis(), s.send_budget.as_millis()),
                None,
            );
        }
    }
    for name in &s.ignored_env {
        p.warn(&format!("${name} is set but ignored: the backend is {}", s.kind.value.id()));
    }
    Ok(0)
}

#[derive(Serialize)]
struct Step {
    ok: bool,
    ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn timed<T>(f: impl FnOnce() -> backend::Result<T>) -> (backend::Result<T>, u64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_millis() as u64)
}

fn test(env: &Env, s: &Settings, bank: Option<String>, as_json: bool) -> Result<i32> {
    let p = Printer::new();
    if s.kind.value == Kind::Local {
        // Local because a setting was dropped (`kind = "hindsigth"`) is not the local the user
        // chose: that fails the test.
        let ok = s.problems.is_empty();
        if as_json {
            let problems: Vec<String> = s.problems.iter().map(ToString::to_string).collect();
            output::json(&json!({ "kind": "local", "ok": ok, "problems": problems }));
        } else if ok {
            println!("backend is local: nothing to test (memories stay in this machine's store)");
        } else {
            println!("backend is local until the setting(s) above are fixed: memories stay in this machine's store");
        }
        return Ok(if ok { 0 } else { 1 });
    }
    let remote = match backend::connect(s, Some(&env.ovmem_home().join("state"))) {
        Ok(r) => r.expect("a remote kind"),
        Err(e) => {
            if as_json {
                output::json(&json!({ "kind": s.kind.value.id(), "ok": false, "error": e.to_string() }));
            } else {
                eprintln!("{} {e}", p.red("error:"));
            }
            return Ok(1);
        }
    };
    let url_text = s.url.as_ref().map(|u| u.value.as_str()).unwrap_or_default();
    if let Some(w) = backend::settings::plain_http_warning(url_text, s.token.is_some()) {
        p.warn(&w);
    }
    let bank = bank.or_else(|| s.bank.as_ref().map(|b| b.value.clone())).unwrap_or_else(|| {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let home = env.ovmem_home();
        let local = crate::runtime::bank_for(BankMode::Project, &cwd, "cli", "cli", &home).key;
        crate::runtime::remote::target(s, BankMode::Project, &local, &cwd, &home).0
    });
    let budget = s.recall_budget.max(Duration::from_millis(100));
    let (health, health_ms) = timed(|| remote.health(budget));
    let (recall, recall_ms) =
        timed(|| remote.recall(&bank, "ovmem-backend-test", "ovmem connectivity check", 3, budget));
    let health = match health {
        Ok(d) => Step { ok: true, ms: health_ms, detail: Some(d), error: None },
        Err(e) => Step { ok: false, ms: health_ms, detail: None, error: Some(e.to_string()) },
    };
    let recall = match recall {
        Ok(hits) => Step { ok: true, ms: recall_ms, detail: Some(format!("{} memories", hits.len())), error: None },
        Err(e) => Step { ok: false, ms: recall_ms, detail: None, error: Some(e.to_string()) },
    };
    let ok = health.ok && recall.ok;
    let url = s.url.as_ref().map(|u| backend::redact_url(&u.value)).unwrap_or_default();
    if as_json {
        output::json(&json!({
            "kind": s.kind.value.id(),
            "url": url,
            "bank": (s.kind.value == Kind::Hindsight).then_some(&bank),
            "budget_ms": budget.as_millis() as u64,
            "health": health,
            "recall": recall,
            "ok": ok,
        }));
    } else {
        let line = |name: &str, step: &Step| {
            let mark = if step.ok { p.green("ok") } else { p.red("failed") };
            let what = step.detail.as_deref().or(step.error.as_deref()).unwrap_or_default();
            println!("{name:<7} {mark} in {} ms: {what}", step.ms);
        };
        println!("{} at {}", s.kind.value.name(), url);
        line("health", &health);
        line("recall", &recall);
        if !ok {
            eprintln!(
                "{} hooks will answer from the local store and queue captured turns until this works (budget {} ms)",
                p.yellow("note:"),
                budget.as_millis()
            );
        } else if recall_ms > budget.as_millis() as u64 / 2 {
            p.warn(&format!("recall took {recall_ms} ms of a {} ms budget", budget.as_millis()));
        }
    }
    Ok(if ok { 0 } else { 1 })
}

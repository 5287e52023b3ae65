//! `ovmem install`: stage the runtime, merge hooks into each selected harness's config, and
//! trust them where the harness gates hooks (Codex, TRAE CLI); all one transaction. With
//! `--backend`, the memory server is saved first (`[backend]` in config.toml, the token in
//! credentials.toml). Picked on a terminal, the plan is shown and confirmed before anything is
//! written. `--uninstall` is `ovmem uninstall` (dispatched in `cli.rs`).

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use super::{scope_and_project, select, tilde, Refusal, Selection};
use crate::backend::{self, Choice, Kind, Secret, Settings};
use crate::env::Env;
use crate::harness::{Harness, Scope};
use crate::install::{self, Action, FileReport, HarnessResult, Options, Outcome, Target, Verb};
use crate::output::{self, Printer};

#[derive(Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub sel: Selection,
    /// Do not trust the new hooks in Codex / TRAE CLI (they stay pending until trusted in `/hooks`)
    #[arg(long)]
    pub no_trust: bool,
    /// Remove ovmem instead: exactly `ovmem uninstall` with the same flags
    #[arg(long, conflicts_with_all = ["no_trust", "backend"])]
    pub uninstall: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// Where memories go. Without `--backend`, the backend stays as configured.
#[derive(Args, Default)]
#[command(next_help_heading = "Memory backend")]
pub struct BackendArgs {
    /// local (this machine's store only), hindsight or openviking (a memory server); saved in
    /// ~/.ovmem/config.toml. Without it the backend stays as configured
    #[arg(long, value_enum, value_name = "KIND")]
    pub backend: Option<BackendKind>,
    /// The server's URL (default: $HINDSIGHT_API_URL / $OPENVIKING_URL, else the one configured)
    #[arg(long, value_name = "URL", requires = "backend")]
    pub api_url: Option<String>,
    /// Hindsight's API token; `-` reads it from stdin, keeping it out of shell history (default:
    /// $HINDSIGHT_API_TOKEN, else the saved one). Saved in ~/.ovmem/credentials.toml (0600), never printed
    #[arg(long, value_name = "TOKEN", requires = "backend")]
    pub api_token: Option<String>,
    /// Hindsight: one bank for every project (default: one team bank per repository, named from
    /// its git remote)
    #[arg(long, value_name = "ID", requires = "backend")]
    pub bank: Option<String>,
    /// OpenViking's API key; `-` reads it from stdin (default: $OPENVIKING_API_KEY, else the saved
    /// one). Saved in ~/.ovmem/credentials.toml (0600), never printed
    #[arg(long, value_name = "KEY", requires = "backend")]
    pub api_key: Option<String>,
    /// OpenViking: the user (dev and trusted modes; with an API key the key decides)
    #[arg(long, value_name = "NAME", requires = "backend")]
    pub user: Option<String>,
    /// OpenViking: the account (dev and trusted modes)
    #[arg(long, value_name = "NAME", requires = "backend")]
    pub account: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    Local,
    Hindsight,
    Openviking,
}

/// A backend choice from the flags, with where its URL and token came from (never the token).
pub struct Planned {
    pub choice: Choice,
    pub url_from: Option<String>,
    pub token_from: Option<String>,
}

/// The backend the flags ask for; `None` without `--backend`. Usage errors are refusals (exit 2)
/// and come before anything is asked or written.
pub fn backend_choice(a: &BackendArgs, env: &Env) -> Result<Option<Planned>> {
    let Some(kind) = a.backend else { return Ok(None) };
    let usage = |msg: String| -> anyhow::Error { Refusal(msg).into() };
    let given = |flags: &[(&str, bool)]| -> Vec<String> {
        flags.iter().filter(|(_, set)| *set).map(|(f, _)| format!("--{f}")).collect()
    };
    let hindsight_only = given(&[("api-token", a.api_token.is_some()), ("bank", a.bank.is_some())]);
    let openviking_only =
        given(&[("api-key", a.api_key.is_some()), ("user", a.user.is_some()), ("account", a.account.is_some())]);
    match kind {
        BackendKind::Local => {
            let all = [given(&[("api-url", a.api_url.is_some())]), hindsight_only, openviking_only].concat();
            if !all.is_empty() {
                return Err(usage(format!("{} only go with --backend hindsight or openviking", all.join(", "))));
            }
            return Ok(Some(Planned { choice: Choice::Local, url_from: None, token_from: None }));
        }
        BackendKind::Hindsight if !openviking_only.is_empty() => {
            return Err(usage(format!(
                "{} are OpenViking's; Hindsight takes --api-url, --api-token and --bank",
                openviking_only.join(", ")
            )));
        }
        BackendKind::Openviking if !hindsight_only.is_empty() => {
            return Err(usage(format!(
                "{} are Hindsight's; OpenViking takes --api-url, --api-key, --user and --account",
                hindsight_only.join(", ")
            )));
        }
        _ => {}
    }
    let k = if kind == BackendKind::Hindsight { Kind::Hindsight } else { Kind::Openviking };
    let env_name = k.url_env().expect("a server kind");
    let configured = backend::settings::configured(env);
    let (url, url_from) = match (&a.api_url, env.var(env_name)) {
        (Some(u), _) => (u.trim().to_string(), "--api-url".to_string()),
        (None, Some(u)) => (u.trim().to_string(), format!("${env_name}")),
        (None, None) => match configured.url.filter(|u| configured.kind == k && !u.trim().is_empty()) {
            Some(u) => (u, "config.toml".to_string()),
            None => {
                return Err(usage(format!(
                    "--backend {} needs the server's URL: --api-url http://host:port (or set ${env_name})",
                    k.id()
                )))
            }
        },
    };
    let (flag, what) = if k == Kind::Hindsight {
        (a.api_token.as_deref(), ("--api-token", "Hindsight API token"))
    } else {
        (a.api_key.as_deref(), ("--api-key", "OpenViking API key"))
    };
    let token_env = k.token_env().expect("a server kind");
    let (token, token_from) = match flag {
        Some("-") => {
            let t = crate::prompt::secret(what.1)?;
            if t.is_empty() {
                return Err(usage(format!("{} -: no {} on stdin", what.0, what.1)));
            }
            (Some(Secret::new(t)), Some("stdin".to_string()))
        }
        Some(t) if t.trim().is_empty() => return Err(usage(format!("{} is empty", what.0))),
        Some(t) => {
            Printer::new().warn(&format!(
                "a secret given as {} can stay in your shell history; `{} -` reads it from stdin instead",
                what.0, what.0
            ));
            (Some(Secret::new(t.trim())), Some(what.0.to_string()))
        }
        None => match env.var(token_env) {
            Some(t) => (Some(Secret::new(t.trim())), Some(format!("${token_env}"))),
            None => (None, None),
        },
    };
    let trimmed = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let choice = match k {
        Kind::Hindsight => Choice::Hindsight { url, token, bank: trimmed(&a.bank) },
        _ => Choice::Openviking { url, api_key: token, user: trimmed(&a.user), account: trimmed(&a.account) },
    };
    backend::settings::validate(&choice)?;
    let has_token =
        matches!(&choice, Choice::Hindsight { token: Some(_), .. } | Choice::Openviking { api_key: Some(_), .. });
    if let Some(w) = backend::settings::plain_http_warning(choice_url(&choice), has_token) {
        Printer::new().warn(&w);
    }
    Ok(Some(Planned { choice, url_from: Some(url_from), token_from }))
}

fn choice_url(choice: &Choice) -> &str {
    match choice {
        Choice::Local => "",
        Choice::Hindsight { url, .. } | Choice::Openviking { url, .. } => url,
    }
}

/// A backend choice in words: kind, URL, bank or user, and whether a token comes with it (never
/// the token).
pub fn describe(choice: &Choice) -> String {
    match choice {
        Choice::Local => "local (this machine's store only)".to_string(),
        Choice::Hindsight { url, token, bank } => format!(
            "Hindsight at {}, {}{}",
            backend::redact_url(url),
            match bank {
                Some(b) => format!("bank `{b}`"),
                None => "one team bank per repository".to_string(),
            },
            if token.is_some() { ", with a token" } else { "" }
        ),
        Choice::Openviking { url, api_key, user, account } => format!(
            "OpenViking at {}{}{}{}",
            backend::redact_url(url),
            user.as_ref().map(|u| format!(", user `{u}`")).unwrap_or_default(),
            account.as_ref().map(|a| format!(", account `{a}`")).unwrap_or_default(),
            if api_key.is_some() { ", with an API key" } else { "" }
        ),
    }
}

/// The backend as JSON for reports: never the token, only whether one was given and from where.
pub fn choice_json(p: &Planned) -> Value {
    let (kind, url, bank, user, account, token) = match &p.choice {
        Choice::Local => ("local", None, None, None, None, false),
        Choice::Hindsight { url, token, bank } => ("hindsight", Some(url), bank.as_ref(), None, None, token.is_some()),
        Choice::Openviking { url, api_key, user, account } => {
            ("openviking", Some(url), None, user.as_ref(), account.as_ref(), api_key.is_some())
        }
    };
    let url = url.map(|u| backend::redact_url(u));
    json!({"kind": kind, "url": url, "url_from": p.url_from, "bank": bank, "user": user, "account": account,
           "token": {"given": token, "from": p.token_from}})
}

/// Saves the backend (unless a dry run) and says what was saved; for a server, whether it
/// answers now (within a second: it never blocks the install, hooks fall back when it is down).
/// `label` says where the choice came from (default: "backend:").
pub fn apply_backend(env: &Env, p: &Planned, dry_run: bool, quiet: bool, label: Option<&str>) -> Result<Value> {
    let pr = Printer::new();
    let label = label.unwrap_or("backend:");
    let mut v = choice_json(p);
    if dry_run {
        if !quiet {
            eprintln!("{} {label} {} (not saved)", pr.bold("dry run:"), describe(&p.choice));
        }
        return Ok(v);
    }
    let done = backend::configure(env, &p.choice)?;
    v["config"] = json!(done.config);
    v["credentials"] = json!(done.credentials);
    if !quiet {
        let token = match (&done.credentials, &p.token_from) {
            (Some(c), Some(from)) => {
                format!("; token from {} saved in `{}` (0600)", tilde(env, std::path::Path::new(from)), tilde(env, c))
            }
            _ => String::new(),
        };
        eprintln!("{} {label} {}{token} (`{}`)", pr.green("✓"), describe(&p.choice), tilde(env, &done.config));
    }
    if p.choice.kind() == Kind::Local {
        return Ok(v);
    }
    let settings = Settings::load(env)?;
    if settings.kind.value != p.choice.kind() {
        pr.warn(&format!(
            "{} overrides this in the current environment: the backend here is {}",
            settings.kind.from,
            settings.kind.value.id()
        ));
        return Ok(v);
    }
    let reach = backend::connect(&settings, Some(&env.ovmem_home().join("state")))
        .map_err(|e| e.to_string())
        .and_then(|r| r.expect("a server kind").health(std::time::Duration::from_secs(1)).map_err(|e| e.to_string()));
    match &reach {
        Ok(h) if !quiet => eprintln!("    {} {h}", pr.green("reachable:")),
        Err(e) if !quiet => pr.warn(&format!(
            "{e}. Hooks answer from the local store and queue captured turns until it answers (`ovmem backend test`)"
        )),
        _ => {}
    }
    v["reachable"] = json!(reach.is_ok());
    Ok(v)
}

pub fn run(args: InstallArgs, env: &Env) -> Result<i32> {
    let sel = &args.sel;
    let backend = backend_choice(&args.backend, env)?;
    let picked = sel.harness.is_none();
    let Some(harnesses) = select(sel, env, "install")? else {
        eprintln!("nothing was changed");
        return Ok(2);
    };
    let (scope, project) = scope_and_project(sel)?;
    let opts = Options { dry_run: sel.dry_run, force: sel.force, no_trust: args.no_trust };
    if picked && !sel.yes && !sel.dry_run && !confirm_plan(env, &harnesses, scope, project.as_deref(), opts, &backend)?
    {
        eprintln!("nothing was changed");
        return Ok(2);
    }
    let backend_report = match &backend {
        Some(b) => Some(apply_backend(env, b, sel.dry_run, sel.json, None)?),
        None => None,
    };
    let done = install_harnesses(env, &harnesses, scope, project.as_deref(), opts, sel.json)?;
    if let Some(mut v) = done.json {
        if let Some(b) = backend_report {
            v["backend"] = b;
        }
        output::json(&v);
    } else {
        warn_legacy(env, &harnesses, project.as_deref());
    }
    Ok(done.code)
}

/// Shows what installing would write and asks. True: go ahead (also when there is nothing to
/// write, or nothing that can be written: the run then says so).
fn confirm_plan(
    env: &Env,
    harnesses: &[&'static Harness],
    scope: Scope,
    project: Option<&std::path::Path>,
    opts: Options,
    backend: &Option<Planned>,
) -> Result<bool> {
    let targets: Vec<Target> =
        harnesses.iter().map(|h| Target { env, harness: h, scope, project: project.map(Into::into) }).collect();
    let plan = install::run(env, &targets, Verb::Install, Options { dry_run: true, ..opts })?;
    let p = Printer::new();
    let mut lines: Vec<String> = Vec::new();
    let width = harnesses.iter().map(|h| h.id().len()).max().unwrap_or(0).max("backend".len());
    if !env.runtime_bin().exists() {
        lines.push(format!(
            "  {:<width$}  `{}` (the runtime every hook runs)",
            "ovmem",
            tilde(env, &env.runtime_bin())
        ));
    }
    for r in &plan.results {
        if let Some(e) = &r.error {
            lines.push(format!("  {:<width$}  {} {e}", r.harness, p.red("✗ will be skipped:")));
            continue;
        }
        let Some(report) = &r.report else { continue };
        for f in report.files.iter().filter(|f| f.change != "unchanged") {
            let events: Vec<&str> = f
                .entries
                .iter()
                .filter(|e| matches!(e.action, Action::Added | Action::Updated))
                .map(|e| if e.event == "mcp" { "MCP server `ovmem`" } else { e.event.as_str() })
                .collect();
            lines.push(format!(
                "  {:<width$}  `{}` ({}: {})",
                r.harness,
                tilde(env, &f.path),
                f.change,
                events.join(", ")
            ));
        }
        let h = harnesses.iter().find(|h| h.id() == r.harness);
        if let Some(h) = h.filter(|h| h.manifest.trust.is_some() && !opts.no_trust && report.changed()) {
            let name = &h.manifest.name;
            let how = match h.detect(env).binary {
                Some(_) => format!("then trust these hooks in {name} (asks {name} which hooks are ovmem's)"),
                None => format!("{name} is not on PATH: trust the hooks in its `/hooks` afterwards"),
            };
            lines.push(format!("  {:<width$}  {how}", ""));
        }
    }
    if let Some(b) = backend {
        lines.push(format!("  {:<width$}  {}", "backend", describe(&b.choice)));
    }
    let writes =
        plan.results.iter().any(|r| r.report.as_ref().is_some_and(install::Report::changed)) || backend.is_some();
    if !writes {
        return Ok(true);
    }
    let where_ = match project {
        Some(pr) => format!("project `{}`", tilde(env, pr)),
        None => "user scope".to_string(),
    };
    eprintln!("{} ({where_}):", p.bold("ovmem will write"));
    for l in lines {
        eprintln!("{l}");
    }
    crate::prompt::confirm("Write these changes?", true)
}

/// Points at legacy memory integrations on the same harnesses: both would recall and store.
fn warn_legacy(env: &Env, harnesses: &[&'static Harness], project: Option<&std::path::Path>) {
    let report = crate::legacy::scan(&crate::legacy::Scan { env, project }, false);
    let ids: Vec<&str> = harnesses.iter().map(|h| h.id()).collect();
    let mut seen = std::collections::BTreeSet::new();
    for f in report
        .findings
        .iter()
        .filter(|f| matches!(f.kind, crate::legacy::Kind::Legacy | crate::legacy::Kind::Deprecated))
    {
        if f.harnesses.iter().any(|h| ids.contains(&h.as_str())) && seen.insert(f.integration.clone()) {
            Printer::new().warn(&format!(
                "{} is also installed ({}): memory would be recalled and stored twice. Run `{}` to replace it",
                f.integration,
                tilde(env, &f.file),
                f.fix
            ));
        }
    }
}

/// What [`install_harnesses`] did: the exit code, and with `--json` the report (for the caller
/// to print, alone or inside its own).
pub struct Installed {
    pub code: i32,
    pub json: Option<Value>,
}

/// Installs ovmem into each harness (one transaction for all of them) and reports.
pub fn install_harnesses(
    env: &Env,
    harnesses: &[&'static Harness],
    scope: Scope,
    project: Option<&std::path::Path>,
    opts: Options,
    json: bool,
) -> Result<Installed> {
    let targets: Vec<Target> =
        harnesses.iter().map(|h| Target { env, harness: h, scope, project: project.map(Into::into) }).collect();
    let bar = progress(harnesses.len(), json);
    let out = install::run(env, &targets, Verb::Install, opts);
    bar.finish_and_clear();
    let out = out?;
    if json {
        let v = json!({"runtime": env.runtime_bin(), "dry_run": opts.dry_run, "harnesses": out.results});
        return Ok(Installed { code: out.code, json: Some(v) });
    }
    let p = Printer::new();
    let changed = out.staged.is_some()
        || out.results.iter().filter_map(|r| r.report.as_ref()).any(install::Report::changed)
        || out.results.iter().any(|r| r.trust.as_ref().is_some_and(|t| t.state == "trusted"));
    print_outcome(env, &out, opts.dry_run, !changed);
    let ok: Vec<&str> = out.results.iter().filter(|r| r.error.is_none()).map(|r| r.harness.as_str()).collect();
    let scope_text = match (project, scope) {
        (Some(p), Scope::Project) => format!("project `{}`", p.display()),
        _ => "user scope".into(),
    };
    if opts.dry_run {
        if let Some(w) = crate::upgrade::warning(env) {
            p.warn(&w);
        }
        eprintln!("\n{} nothing was written", p.bold("dry run:"));
    } else if !ok.is_empty() && changed {
        eprintln!(
            "\n{} for {} ({scope_text}); hooks run `{}`",
            p.bold("ovmem is installed"),
            ok.join(", "),
            tilde(env, &env.runtime_bin())
        );
    } else if !ok.is_empty() {
        // One line, the trust that was checked included.
        let trusted: Vec<&str> = out
            .results
            .iter()
            .filter_map(|r| r.trust.as_ref())
            .filter(|t| t.state == "already-trusted")
            .map(|t| t.message.as_str())
            .collect();
        let trusted = if trusted.is_empty() { String::new() } else { format!(" ({})", trusted.join("; ")) };
        eprintln!("ovmem is already installed for {} ({scope_text}); nothing changed{trusted}", ok.join(", "));
    }
    Ok(Installed { code: out.code, json: None })
}

fn progress(n: usize, json: bool) -> indicatif::ProgressBar {
    if n < 2 || json || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(format!("installing into {n} harnesses"));
    bar.enable_steady_tick(std::time::Duration::from_millis(80));
    bar
}

/// Human output of an install, uninstall or repair run. `brief`: nothing changed, so unchanged
/// files are not listed one by one (the caller says it once).
pub fn print_outcome(env: &Env, out: &Outcome, dry_run: bool, brief: bool) {
    let p = Printer::new();
    if let Some(s) = &out.staged {
        eprintln!("{} runtime `{}`", p.green("staged"), tilde(env, s));
    }
    for r in &out.results {
        print_result(&p, env, r, dry_run, brief);
    }
    for w in &out.warnings {
        p.warn(w);
    }
}

fn print_result(p: &Printer, env: &Env, r: &HarnessResult, dry_run: bool, brief: bool) {
    if let Some(e) = &r.error {
        eprintln!("{} {}: {}", p.red("✗"), p.bold(&r.harness), crate::termsafe::clean(e));
        return;
    }
    let Some(report) = &r.report else { return };
    let quiet =
        !report.changed() && report.files.iter().all(|f| f.entries.iter().all(|e| e.action == Action::Unchanged));
    if quiet {
        if !brief {
            let files: Vec<String> = report.files.iter().map(|f| format!("`{}`", tilde(env, &f.path))).collect();
            eprintln!("{} {}: unchanged ({})", p.dim("="), p.bold(&r.harness), files.join(", "));
        }
    } else {
        for f in &report.files {
            print_file(p, env, &r.harness, f, dry_run);
        }
    }
    for w in &report.warnings {
        p.warn(w);
    }
    if let Some(t) = &r.trust {
        match t.state.as_str() {
            "trusted" => eprintln!("    {} {}", p.green("✓"), t.message),
            "already-trusted" if !brief && !quiet => eprintln!("    {} {}", p.dim("="), t.message),
            "pending" => p.warn(&format!("trust pending: {}", t.message)),
            _ => {}
        }
        for w in &t.problems {
            p.warn(&format!("{} reported: {w}", r.harness));
        }
    }
}

pub fn print_file(p: &Printer, env: &Env, harness: &str, f: &FileReport, dry_run: bool) {
    let mark = match f.change {
        "unchanged" => p.dim("="),
        "deleted" => p.yellow("-"),
        _ => p.green("✓"),
    };
    eprintln!("{mark} {} `{}`: {}", p.bold(harness), tilde(env, &f.path), f.change);
    for e in f.entries.iter().filter(|e| f.change != "unchanged" || e.action != Action::Unchanged) {
        let (sym, text) = match e.action {
            Action::Added => (p.green("+"), "added"),
            Action::Updated => (p.green("~"), "updated"),
            Action::Unchanged => (p.dim("="), "unchanged"),
            Action::Removed => (p.yellow("-"), "removed"),
            Action::UserEdited => (p.yellow("!"), "edited by you"),
            Action::Conflict => (p.yellow("!"), "conflict"),
        };
        let detail = e.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
        eprintln!("    {sym} {} {text}{detail}", e.event);
    }
    for b in &f.backups {
        eprintln!("    {} `{}`", p.dim("backup"), tilde(env, b));
    }
    if dry_run {
        if let Some(d) = &f.diff {
            print!("{d}");
        }
    }
}

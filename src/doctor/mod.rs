//! `ovmem doctor`: does what is installed actually work? For every target a receipt records
//! (harness and scope), each hook the harness would run is run the way the harness runs it (the
//! exact command line through `sh -c`, or Cline's hook file itself), with a synthetic payload in
//! that harness's field names, under that harness's timeout, and its output is checked against
//! the shapes the harness accepts. Around that: trust (Codex, TRAE CLI), duplicates (two ovmem
//! entries on an event, or ovmem beside a legacy memory integration), drift (a hook that runs
//! another runtime), the MCP server entry (started, `initialize` and `tools/list` answered), and
//! whether the memory server answers. Hooks run against a throwaway copy of the config
//! ([`sandbox`]), so the user's memories are never read or written.

pub mod exec;
pub mod hooks;
pub mod mcp_probe;
pub mod sandbox;
pub mod shape;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::env::Env;
use crate::harness::{self, Canonical, Harness, McpFormat, Scope};
use crate::install::{trust, Target};
use crate::receipt::{self, Receipt};
use hooks::{How, Kind};
use shape::{Shape, Verdict};

/// How long an MCP server may take to answer `initialize` and `tools/list`: Codex's default
/// startup timeout, the shortest among the harnesses.
pub const MCP_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Options {
    /// Only these harnesses (default: every installed one).
    pub harnesses: Option<Vec<&'static Harness>>,
    /// Project-scope installs of this project only (default: every project a receipt names).
    pub project: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    /// The shape of this report (`--json`); bumped only on incompatible changes.
    pub version: u32,
    /// No problems and no errors.
    pub ok: bool,
    pub problems: usize,
    pub ovmem_home: PathBuf,
    pub runtime: RuntimeState,
    /// Files of ovmem's home this user does not own, which the hooks (run as this user) cannot
    /// write: a problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_yours: Option<NotYours>,
    pub targets: Vec<TargetReport>,
    /// Two memory integrations on one event (ovmem twice, or ovmem and a legacy one).
    pub duplicates: Vec<Duplicate>,
    /// Legacy or deprecated memory integrations elsewhere (warnings: see `ovmem check`).
    pub legacy: Vec<String>,
    pub backend: BackendState,
    /// Settings in ovmem's config (`config.toml`, `OVMEM_*` variables) it cannot use: each a
    /// problem (exit 1). The hooks run on without them, so the other checks still run.
    pub config: Vec<ConfigFinding>,
    /// Files that could not be read or parsed (exit 2).
    pub errors: Vec<FileError>,
}

/// One setting of ovmem's config that it cannot use.
#[derive(Debug, Serialize)]
pub struct ConfigFinding {
    /// `config.toml`, or none for an environment variable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The key (`recall_limit`, `backend.bank`, `redact_patterns[1]`) or the variable; none when
    /// the file as a whole cannot be used (not TOML, unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// What is wrong with it (never its value: a report is pasted into issues).
    pub problem: String,
    /// What the hooks do meanwhile.
    pub hooks: String,
    /// What to do.
    pub fix: String,
    /// A variable's value, for the terminal only (scrubbed; never in `--json`).
    #[serde(skip)]
    pub value: Option<String>,
}

impl ConfigFinding {
    fn new(p: &crate::config::Problem, path: &Path) -> Self {
        Self {
            file: p.value.is_none().then(|| path.to_path_buf()),
            key: p.key.clone(),
            problem: p.what.clone(),
            hooks: p.instead.clone(),
            fix: p.fix(path),
            value: p.value.as_deref().map(|v| crate::redact::scrub(v).into_owned()),
        }
    }
}

/// What of ovmem's home belongs to another user (a `sudo ovmem …` by an ovmem that left what it
/// created root's, or a hook run as root): the hooks run as this user and cannot write there, so
/// nothing is stored, logged or spooled.
#[derive(Debug, Serialize)]
pub struct NotYours {
    /// How many files and directories (up to [`NOT_YOURS_LOOKED_AT`] looked at).
    pub count: usize,
    /// The first found, and its owner's uid.
    pub first: PathBuf,
    pub owner: u32,
}

/// Entries of ovmem's home looked at for [`NotYours`] at most (a home holds a few dozen; the
/// spool of a long outage more).
const NOT_YOURS_LOOKED_AT: usize = 5_000;

/// The entries of ovmem's home (itself included, links not followed) that are not this user's;
/// `None` when all are, as root (who can write anything) and where files have no owners.
fn not_yours(home: &Path) -> Option<NotYours> {
    let me = crate::sys::euid().filter(|&u| u != 0)?;
    let mut todo = vec![home.to_path_buf()];
    let (mut looked, mut found): (usize, Option<NotYours>) = (0, None);
    while let Some(path) = todo.pop() {
        if looked >= NOT_YOURS_LOOKED_AT {
            break;
        }
        looked += 1;
        let Ok(m) = std::fs::symlink_metadata(&path) else { continue };
        if let Some((uid, _)) = crate::sys::owner(&m).filter(|&(uid, _)| uid != me) {
            match &mut found {
                Some(f) => f.count += 1,
                None => found = Some(NotYours { count: 1, first: path.clone(), owner: uid }),
            }
        }
        if m.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                todo.extend(entries.flatten().map(|e| e.path()));
            }
        }
    }
    found
}

#[derive(Debug, Serialize)]
pub struct RuntimeState {
    pub path: PathBuf,
    pub present: bool,
    /// The staged runtime's version, when it said one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Set when the hooks run an older runtime than this ovmem (a problem: what to run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
}

fn runtime_state(env: &Env) -> RuntimeState {
    use crate::upgrade::{self, Staged};
    let (version, stale) = match upgrade::staged(env) {
        Staged::Current => (Some(upgrade::cli_version().to_string()), None),
        Staged::Older { staged } => (Some(staged.clone()), Some(upgrade::stale_message(env, &staged))),
        Staged::Newer { staged } => (Some(staged), None),
        Staged::Absent | Staged::Unknown { .. } => (None, None),
    };
    RuntimeState { path: env.runtime_bin(), present: env.runtime_bin().is_file(), version, stale }
}

#[derive(Debug, Serialize)]
pub struct TargetReport {
    pub harness: String,
    pub scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    /// The hooks file (or directory) the harness reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<PathBuf>,
    pub hooks: Vec<HookReport>,
    pub trust: TrustState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpState>,
    /// Why nothing could be run for this target (an in-process plugin), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub problems: Vec<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct HookReport {
    pub event: String,
    pub file: PathBuf,
    /// Where in the file (`hooks.Stop[0].hooks[0]`), or the hook file's name.
    pub entry: String,
    /// The command line (or hook file) that was run.
    pub command: String,
    /// `ovmem`, `edited` (a hand-edited command that still runs ovmem), `other-runtime`, or
    /// `missing` (recorded by install, gone from the file).
    pub owner: &'static str,
    /// ok, failed, timed-out, untrusted, missing, not-run (a project hook that is not ovmem's
    /// exact one: project files are untrusted input)
    pub status: &'static str,
    pub timeout_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The shape of a valid answer: no-op, inject or deny.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Shape>,
    /// The variant of the harness the payload was judged as (Cline's CLI or VS Code bundles),
    /// which decides what injects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Start and prompt hooks: the project's memory was injected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recalled: Option<bool>,
    /// Stop hooks: the turn was stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured: Option<bool>,
    /// Codex / TRAE CLI: the harness trusts this hook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TrustState {
    /// trusted, pending, unknown (the harness binary is not on PATH or did not answer), n/a
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct McpState {
    pub file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// ok, failed, missing
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Duplicate {
    pub file: PathBuf,
    pub event: String,
    pub integrations: Vec<String>,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct BackendState {
    pub kind: String,
    /// ok, failed, skipped (local: nothing to reach)
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct FileError {
    pub file: PathBuf,
    pub error: String,
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// `SessionStart` -> `session_start`: how Codex names events in trust keys.
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether Codex's trust key `<file>:<event>:<group>:<handler>` names this hook.
fn is_key_of(key: &str, h: &hooks::Hook) -> bool {
    let Some(rest) = h.entry.strip_prefix(&format!("hooks.{}[", h.event)) else { return false };
    let Some((group, rest)) = rest.split_once(']') else { return false };
    let handler = rest.rsplit_once('[').map(|(_, x)| x.trim_end_matches(']')).unwrap_or("0");
    let Some(file) = key.strip_suffix(&format!(":{}:{group}:{handler}", snake(&h.event))) else { return false };
    let same = |a: &Path, b: &Path| a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    same(Path::new(file), &h.file)
}

/// The order a session fires events in, so the stop hook finds the prompt the prompt hook buffered.
fn order(kind: Option<Canonical>) -> usize {
    const SESSION: [Canonical; 5] =
        [Canonical::SessionStart, Canonical::Prompt, Canonical::PreTool, Canonical::Stop, Canonical::SessionEnd];
    SESSION.iter().position(|c| Some(*c) == kind).unwrap_or(SESSION.len())
}

/// Runs every check; `Err` only when the doctor cannot work at all (no temporary directory).
pub fn run(env: &Env, opts: &Options) -> Result<Report> {
    let home = env.ovmem_home();
    let mut report = Report {
        version: 1,
        ok: true,
        problems: 0,
        ovmem_home: home.clone(),
        runtime: runtime_state(env),
        not_yours: not_yours(&home),
        targets: Vec::new(),
        duplicates: Vec::new(),
        legacy: Vec::new(),
        backend: backend(env),
        config: {
            let path = crate::config::Config::path(env);
            let (_, problems) = crate::config::Config::load_lenient(env);
            problems.iter().map(|p| ConfigFinding::new(p, &path)).collect()
        },
        errors: Vec::new(),
    };
    let sandbox = sandbox::Sandbox::new(env)?;
    let wanted = |id: &str| opts.harnesses.as_ref().is_none_or(|hs| hs.iter().any(|h| h.id() == id));
    let mut receipts: Vec<Receipt> = Vec::new();
    for path in receipt::paths(&home) {
        match receipt::load(&path) {
            Ok(Some(r)) => receipts.push(r),
            Ok(None) => {}
            Err(e) => report.errors.push(FileError { file: path, error: format!("{e:#}") }),
        }
    }
    receipts.retain(|r| wanted(&r.harness));
    if let Some(p) = &opts.project {
        receipts.retain(|r| r.scope == Scope::User || r.project.as_deref() == Some(p.as_path()));
    }
    for h in opts.harnesses.iter().flatten() {
        if !receipts.iter().any(|r| r.harness == h.id()) {
            report.targets.push(TargetReport {
                harness: h.id().into(),
                scope: Scope::User,
                project: None,
                location: None,
                hooks: Vec::new(),
                trust: TrustState { state: "n/a", detail: None },
                mcp: None,
                skipped: None,
                problems: vec![format!(
                    "ovmem is not installed for {}: `ovmem install --harness {}`",
                    h.manifest.name,
                    h.id()
                )],
            });
        }
    }
    let mut projects: Vec<Option<PathBuf>> = vec![None];
    for r in &receipts {
        let Some(h) = harness::find(&r.harness) else {
            report.errors.push(FileError {
                file: receipt::path(&home, &r.harness, r.scope, r.project.as_deref()),
                error: format!("a receipt for `{}`, which this ovmem does not know", r.harness),
            });
            continue;
        };
        let t = Target { env, harness: h, scope: r.scope, project: r.project.clone() };
        let checked = check_target(&t, r, &sandbox, &mut report.errors);
        report.targets.push(checked);
        if !projects.contains(&r.project) {
            projects.push(r.project.clone());
        }
    }
    let installed: Vec<(String, Option<PathBuf>)> =
        receipts.iter().map(|r| (r.harness.clone(), r.project.clone())).collect();
    duplicates(env, &projects, &installed, &mut report);
    let mut problems = 0;
    for t in &report.targets {
        problems += t.problems.len();
    }
    problems += report.duplicates.len();
    problems += report.config.len();
    if report.backend.status == "failed" {
        problems += 1;
    }
    if !report.runtime.present && !receipts.is_empty() {
        problems += 1;
    }
    if report.runtime.stale.is_some() {
        problems += 1;
    }
    if report.not_yours.is_some() {
        problems += 1;
    }
    report.problems = problems;
    report.ok = problems == 0 && report.errors.is_empty();
    Ok(report)
}

/// Every check of one installed target.
fn check_target(t: &Target, r: &Receipt, sb: &sandbox::Sandbox, errors: &mut Vec<FileError>) -> TargetReport {
    let h = t.harness;
    let mut out = TargetReport {
        harness: h.id().into(),
        scope: t.scope,
        project: t.project.clone(),
        location: t.location().ok(),
        hooks: Vec::new(),
        trust: TrustState { state: "n/a", detail: None },
        mcp: None,
        skipped: None,
        problems: Vec::new(),
    };
    let adapter = match h.adapter() {
        Ok(a) => a,
        Err(e) => {
            out.problems.push(format!("{e:#}"));
            return out;
        }
    };
    let found = hooks::find(t, Some(r));
    for (file, error) in found.errors {
        errors.push(FileError { file, error });
    }
    // Trust first: an untrusted hook runs fine here and never in the harness.
    let pending = trust_state(t, r, &mut out);
    let cwd = match t.scope {
        Scope::Project => t.project.clone().unwrap_or_else(|| sb.project.clone()),
        Scope::User => sb.project.clone(),
    };
    let session = format!("ovmem-doctor-{}-{}", h.id(), std::process::id());
    let bank = crate::runtime::bank_for(sb.cfg.bank, &cwd, h.id(), &session, &sb.home).key;
    let marker = format!("doctor-marker-{}-{}", h.id(), std::process::id());
    let answer = format!("doctor-reply-{}-{}", h.id(), std::process::id());
    let prompt = format!("ovmem doctor check: which doctor marker is stored for {}?", h.id());
    let reply = format!("The stored doctor marker is {marker}; noted as {answer}.");
    if let Err(e) = sb.seed(&bank, h.id(), &format!("The ovmem doctor marker for {} is {marker}.", h.id())) {
        out.problems.push(format!("could not prepare the doctor's store: {e:#}"));
    }
    let mut list = found.hooks;
    list.sort_by_key(|x| order(adapter.events.get(&x.event).copied()));
    for hook in &list {
        if t.scope == Scope::Project && hook.kind != Kind::Ours {
            // A project's files are untrusted input (a pull can change them): only ovmem's own
            // exact hooks are run there.
            let p = "not run: it is not ovmem's exact hook, and a project's files are untrusted input (check the \
                     command by hand, or `ovmem install --project … --force` to put ovmem's back)";
            out.problems.push(format!("{} {}: {p}", hook.event, hook.entry));
            out.hooks.push(HookReport {
                event: hook.event.clone(),
                file: hook.file.clone(),
                entry: hook.entry.clone(),
                command: hook.run.shown(),
                owner: owner_name(&hook.kind),
                status: "not-run",
                timeout_ms: ms(hook.timeout),
                problem: Some(p.into()),
                ..HookReport::default()
            });
            continue;
        }
        let kind = adapter.events.get(&hook.event).copied();
        // The prompt and the stop share the session (the stop finds the buffered prompt); every
        // other event runs in a session of its own, since a session is not given the same memory
        // twice and each injecting hook must show it.
        let session = match kind {
            Some(Canonical::Prompt | Canonical::Stop) => session.clone(),
            _ => format!("{session}-{}", hook.event),
        };
        let payload = sandbox::payload(&adapter, &hook.event, &session, &cwd, (&prompt, &reply), &sb.scratch);
        let stdin = payload.to_string().into_bytes();
        // Judged as the runtime will read this payload (an adapter's variant can change what injects).
        let variant = crate::runtime::wire::parse(&adapter, &hook.event, &stdin).ok().and_then(|e| e.variant);
        let variant_name = variant.and_then(|i| adapter.variants.get(i)).map(|v| v.name.clone());
        let adapter: &harness::Adapter = &adapter.for_variant(variant);
        let mark = sb.log_mark();
        let program = match &hook.run {
            How::Shell(c) => exec::Program::Shell(c),
            How::File(p) => exec::Program::File(p),
            How::Argv(a) => exec::Program::Argv(a),
        };
        let ran = exec::run(&exec::Run { program, stdin: &stdin, cwd: &cwd, env: &sb.env(), timeout: hook.timeout });
        let mut rep = HookReport {
            event: hook.event.clone(),
            file: hook.file.clone(),
            entry: hook.entry.clone(),
            command: hook.run.shown(),
            owner: owner_name(&hook.kind),
            status: "ok",
            timeout_ms: ms(hook.timeout),
            latency_ms: Some(ms(ran.elapsed)),
            exit_code: ran.code,
            variant: variant_name,
            stderr: Some(exec::excerpt(&ran.stderr)).filter(|s| !s.is_empty()),
            ..HookReport::default()
        };
        let (mut problem, text) = judge_run(adapter, &h.manifest.name, hook, &ran, &mut rep);
        if problem.is_none() {
            let want = Want { bank: &bank, marker: &marker, answer: &answer };
            problem = expectations(adapter, hook, kind, sb, &want, text.as_deref(), &mut rep);
        }
        if problem.is_none() {
            let logged = sb.logged_errors(mark);
            if let Some(first) = logged.first() {
                rep.status = "failed";
                problem = Some(format!("ovmem logged an error and answered with the no-op: {first}"));
            }
        }
        if let Some(pending) = &pending {
            let untrusted = pending.iter().any(|k| is_key_of(k, hook));
            rep.trusted = Some(!untrusted);
            if untrusted && problem.is_none() {
                rep.status = "untrusted";
                problem = Some(format!(
                    "{} does not trust this hook and skips it without a word; `ovmem install --harness {}` trusts \
                     it (or open `/hooks` in {})",
                    h.manifest.name,
                    h.id(),
                    h.manifest.name
                ));
            }
        }
        if hook.kind == Kind::Edited && is_plugin(t) {
            let edited = format!(
                "the plugin module is not what ovmem wrote (edited since), and the doctor cannot judge code it does \
                 not run; `ovmem install --harness {} --force` puts ovmem's back",
                h.id()
            );
            rep.status = if problem.is_none() { "edited" } else { rep.status };
            problem = Some(match problem {
                Some(p) => format!("{p}; {edited}"),
                None => edited,
            });
        }
        if let Kind::OtherRuntime(rt) = &hook.kind {
            let drift = format!(
                "it runs `{}`, not this ovmem's runtime `{}` (drift); `ovmem install --harness {}` points it here",
                rt.display(),
                t.env.runtime_bin().display(),
                h.id()
            );
            problem = Some(match problem {
                Some(p) => format!("{p}; {drift}"),
                None => drift,
            });
        }
        if let Some(p) = &problem {
            out.problems.push(format!("{} {}: {p}", hook.event, hook.entry));
        }
        rep.problem = problem;
        out.hooks.push(rep);
    }
    for (event, file) in found.missing {
        out.problems.push(format!(
            "{event}: ovmem's hook is no longer in `{}` (removed, or edited past recognition); `ovmem install --harness {}` \
             puts it back",
            file.display(),
            h.id()
        ));
        out.hooks.push(HookReport {
            event,
            file,
            owner: "missing",
            status: "missing",
            problem: Some("not in the file any more".into()),
            ..HookReport::default()
        });
    }
    out.mcp = mcp_state(t, r, sb, &cwd, &mut out.problems);
    out
}

/// The one command that installs (and trusts) `t` again.
fn fix_command(t: &Target) -> String {
    match (&t.scope, &t.project) {
        (Scope::Project, Some(p)) => {
            format!(
                "ovmem install --harness {} --project {}",
                t.harness.id(),
                crate::shell::quote(&p.to_string_lossy())
            )
        }
        _ => format!("ovmem install --harness {}", t.harness.id()),
    }
}

fn is_plugin(t: &Target) -> bool {
    t.harness.manifest.kind == crate::harness::InstallKind::PluginFile
}

fn owner_name(k: &Kind) -> &'static str {
    match k {
        Kind::Ours => "ovmem",
        Kind::Edited => "edited",
        Kind::OtherRuntime(_) => "other-runtime",
    }
}

/// Exit code, timeout and output shape of one run: the problem, if it failed, and the text a
/// valid answer carries.
fn judge_run(
    a: &harness::Adapter,
    name: &str,
    hook: &hooks::Hook,
    ran: &exec::Ran,
    rep: &mut HookReport,
) -> (Option<String>, Option<String>) {
    let fail = |rep: &mut HookReport, status, p: String| {
        rep.status = status;
        (Some(p), None)
    };
    if ran.timed_out {
        return fail(
            rep,
            "timed-out",
            format!(
                "no answer within its {} timeout; {name} stops it there and the turn goes on without memory",
                seconds(hook.timeout),
            ),
        );
    }
    if let Some(e) = &ran.spawn_error {
        return fail(rep, "failed", e.clone());
    }
    match ran.code {
        Some(0) => {}
        Some(code) => {
            let why = match code {
                127 => " (command not found: is the runtime there?)",
                126 => " (not executable)",
                2 => " (exit 2 blocks the harness's action)",
                _ => "",
            };
            let err = rep.stderr.as_deref().map(|s| format!(": {s}")).unwrap_or_default();
            return fail(rep, "failed", format!("exit {code}{why}{err}"));
        }
        None => return fail(rep, "failed", format!("killed by signal {}", ran.signal.unwrap_or_default())),
    }
    match shape::judge(a, &hook.event, &ran.stdout) {
        Verdict::Valid(s, text) => {
            rep.output = Some(s);
            (None, text)
        }
        Verdict::Invalid(why) => fail(rep, "failed", format!("invalid output: {why}")),
    }
}

/// What the doctor's synthetic session stored and expects back.
struct Want<'a> {
    bank: &'a str,
    /// In the seeded memory: what start and prompt hooks must inject.
    marker: &'a str,
    /// In the reply: what the stop hook must store.
    answer: &'a str,
}

/// What a working hook of this kind does: start and prompt hooks inject the project's memory,
/// stop hooks store the turn, a guard lets a harmless tool call through.
fn expectations(
    a: &harness::Adapter,
    hook: &hooks::Hook,
    kind: Option<Canonical>,
    sb: &sandbox::Sandbox,
    want: &Want,
    text: Option<&str>,
    rep: &mut HookReport,
) -> Option<String> {
    let injects = a.inject_events.iter().any(|e| e == &hook.event) && sb.cfg.recall_limit > 0;
    let fail = |rep: &mut HookReport, p: &str| {
        rep.status = "failed";
        Some(p.to_string())
    };
    let recalled = rep.output == Some(Shape::Inject) && text.is_some_and(|t| t.contains(want.marker));
    if rep.output == Some(Shape::Inject) {
        rep.recalled = Some(recalled);
    }
    match kind {
        Some(Canonical::SessionStart) | Some(Canonical::Prompt) if injects => {
            rep.recalled = Some(recalled);
            match rep.output {
                _ if recalled => None,
                Some(Shape::Inject) => fail(rep, "it injected something, but not the project's memory"),
                _ => fail(rep, "it answered with the no-op although the project has a memory to recall"),
            }
        }
        Some(Canonical::Stop) if !a.fields.reply.is_empty() || !a.fields.transcript.is_empty() => {
            let stored = sb.stored(want.bank, want.answer);
            rep.captured = Some(stored);
            if stored {
                None
            } else {
                fail(rep, "the turn was not stored")
            }
        }
        Some(Canonical::PreTool) if rep.output == Some(Shape::Deny) => {
            fail(rep, "it denied a harmless tool call (reading README.md)")
        }
        _ => None,
    }
}

/// The harness's own view of trust; the keys of ovmem's hooks still pending, when it could say.
fn trust_state(t: &Target, r: &Receipt, out: &mut TargetReport) -> Option<Vec<String>> {
    let h = t.harness;
    h.manifest.trust.as_ref()?;
    // Unknown is not healthy: a harness that needs trust skips untrusted hooks without a word.
    let Some(binary) = h.detect(t.env).binary else {
        let why = format!(
            "`{}` is not on PATH, so whether {} trusts ovmem's hooks is unknown (it skips hooks it does not trust); \
             with `{}` on PATH, `{}` trusts them",
            h.manifest.binaries[0],
            h.manifest.name,
            h.manifest.binaries[0],
            fix_command(t)
        );
        out.problems.push(why.clone());
        out.trust = TrustState { state: "unknown", detail: Some(why) };
        return None;
    };
    match trust::status(t.env, t, &binary, r) {
        Ok((n, pending)) if pending.is_empty() && n > 0 => {
            out.trust = TrustState { state: "trusted", detail: Some(format!("{n} ovmem hook(s) trusted")) };
            Some(pending)
        }
        Ok((_, pending)) if !pending.is_empty() => {
            out.trust =
                TrustState { state: "pending", detail: Some(format!("{} ovmem hook(s) pending trust", pending.len())) };
            Some(pending)
        }
        Ok(_) => {
            let why = if t.scope == Scope::Project {
                format!(
                    "{} lists none of ovmem's hooks: is the project trusted in {}?",
                    h.manifest.name, h.manifest.name
                )
            } else {
                format!("{} lists none of ovmem's hooks", h.manifest.name)
            };
            out.problems.push(why.clone());
            out.trust = TrustState { state: "pending", detail: Some(why) };
            None
        }
        Err(e) => {
            let why = format!(
                "could not ask {} whether it trusts ovmem's hooks ({e:#}), so memory may never run; `{}` trusts them",
                h.manifest.name,
                fix_command(t)
            );
            out.problems.push(why.clone());
            out.trust = TrustState { state: "unknown", detail: Some(why) };
            None
        }
    }
}

/// The recorded MCP server entry: still there, and answering as the harness would start it.
fn mcp_state(
    t: &Target,
    r: &Receipt,
    sb: &sandbox::Sandbox,
    cwd: &Path,
    problems: &mut Vec<String>,
) -> Option<McpState> {
    let f = r.files.iter().find(|f| f.entries.iter().any(|e| e.event == "mcp"))?;
    let e = f.entries.iter().find(|e| e.event == "mcp")?;
    let keys: Vec<&str> = e.key_path.split('.').collect();
    let text = crate::install::editor::read_text(t, &f.path).ok().and_then(|(_, x)| x);
    let value = text.as_deref().and_then(|x| {
        if t.harness.manifest.mcp_format == McpFormat::Toml || f.format == "toml" {
            crate::install::mcp_toml::value_at(x, &keys)
        } else {
            let d = crate::edit::json::Document::parse(x).ok()?;
            let n = d.node_at(&keys)?;
            d.value(n)
        }
    });
    let mut st = McpState {
        file: f.path.clone(),
        command: None,
        status: "ok",
        latency_ms: None,
        tools: Vec::new(),
        problem: None,
    };
    let Some(value) = value else {
        st.status = "missing";
        let p = format!(
            "the `ovmem` MCP server is no longer in `{}`; `ovmem install --harness {}` puts it back",
            f.path.display(),
            t.harness.id()
        );
        problems.push(format!("mcp: {p}"));
        st.problem = Some(p);
        return Some(st);
    };
    let server = match mcp_probe::Server::from_entry(&value) {
        Ok(s) => s,
        Err(why) => {
            st.status = "failed";
            problems.push(format!("mcp: the `ovmem` entry in `{}` cannot start: {why}", f.path.display()));
            st.problem = Some(why);
            return Some(st);
        }
    };
    st.command = Some(std::iter::once(server.command.clone()).chain(server.args.clone()).collect::<Vec<_>>().join(" "));
    // A project's files are untrusted input (a pull can change them): only the entry exactly as
    // ovmem writes it is started there.
    if t.scope == Scope::Project && !mcp_exact(t, &value) {
        st.status = "edited";
        let p = format!(
            "not started: the `ovmem` entry in `{}` is not what ovmem wrote, and a project's files are untrusted \
             input (check it by hand, or `ovmem install --harness {} --project … --force` to put ovmem's back)",
            f.path.display(),
            t.harness.id()
        );
        problems.push(format!("mcp: {p}"));
        st.problem = Some(p);
        return Some(st);
    }
    let probe = mcp_probe::probe(&server, cwd, &sb.env(), MCP_TIMEOUT);
    st.latency_ms = Some(ms(probe.elapsed));
    st.tools = probe.tools;
    if let Some(e) = probe.error {
        st.status = "failed";
        problems.push(format!("mcp: the `ovmem` server in `{}` does not work: {e}", f.path.display()));
        st.problem = Some(e);
    } else if !st.tools.iter().any(|x| x == "memory_search") {
        st.status = "failed";
        let p = format!("it answers, but without ovmem's memory tools ({})", st.tools.join(", "));
        problems.push(format!("mcp: {p}"));
        st.problem = Some(p);
    }
    Some(st)
}

/// Whether an MCP entry is the one ovmem writes for `t` (TOML entries compared as values).
fn mcp_exact(t: &Target, value: &serde_json::Value) -> bool {
    match t.desired_mcp() {
        Ok(Some(want)) if t.harness.manifest.mcp_format == McpFormat::Toml => {
            crate::install::mcp_toml::hash(&want) == crate::install::mcp_toml::hash(value)
        }
        Ok(Some(want)) => want == *value,
        _ => false,
    }
}

/// Duplicates and legacy integrations, from the legacy scan of each scanned scope: `check`'s own
/// count of the memory integrations on each event (ovmem's entries one by one, edited ones too).
fn duplicates(env: &Env, projects: &[Option<PathBuf>], installed: &[(String, Option<PathBuf>)], report: &mut Report) {
    for p in projects {
        let scan = crate::legacy::scan(&crate::legacy::Scan { env, project: p.as_deref() }, false);
        for f in scan.findings {
            match f.kind {
                crate::legacy::Kind::Duplicate => report.duplicates.push(Duplicate {
                    file: f.file.clone(),
                    event: f.entry.clone(),
                    integrations: f.integration.split('+').map(String::from).collect(),
                    message: format!("{}; fix: {}", f.message, f.fix),
                }),
                crate::legacy::Kind::Legacy | crate::legacy::Kind::Deprecated => {
                    let on_ours = f.harnesses.iter().any(|h| installed.iter().any(|(i, _)| i == h));
                    let line = format!(
                        "{} in `{}` ({}){}",
                        f.integration,
                        f.file.display(),
                        f.entry,
                        if on_ours { "; it runs beside ovmem: `ovmem migrate`" } else { "" }
                    );
                    if !report.legacy.contains(&line) {
                        report.legacy.push(line);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Whether the configured memory server answers `health` within its recall budget.
fn backend(env: &Env) -> BackendState {
    let settings = match crate::backend::Settings::load(env) {
        Ok(s) => s,
        Err(e) => {
            return BackendState {
                kind: "?".into(),
                status: "failed",
                url: None,
                latency_ms: None,
                detail: Some(format!("{e:#}")),
            }
        }
    };
    let kind = settings.kind.value;
    // Shown without its `user:password@` part: a report is pasted into issues.
    let url = settings.url.as_ref().map(|u| crate::backend::redact_url(&u.value));
    if kind == crate::backend::Kind::Local {
        return BackendState {
            kind: kind.id().into(),
            status: "skipped",
            url: None,
            latency_ms: None,
            detail: Some("memories stay in this machine's store; nothing to reach".into()),
        };
    }
    let budget = settings.recall_budget.max(Duration::from_millis(100));
    let started = Instant::now();
    let result = crate::backend::connect(&settings, Some(&env.ovmem_home().join("state")))
        .map_err(|e| e.to_string())
        .and_then(|r| r.ok_or_else(|| "no remote backend".to_string()))
        .and_then(|r| r.health(budget).map_err(|e| e.to_string()));
    let (status, detail) = match result {
        Ok(d) => ("ok", d),
        // Not used at all (a setting that says where memories go is bad): nothing is queued.
        Err(e) if !settings.unusable.is_empty() => ("failed", e),
        Err(e) => ("failed", format!("{e}; hooks answer from the local store and queue turns until it works")),
    };
    BackendState { kind: kind.id().into(), status, url, latency_ms: Some(ms(started.elapsed())), detail: Some(detail) }
}

/// A timeout as people write it: `30s`, `1.5s`, `500ms`.
fn seconds(d: std::time::Duration) -> String {
    match d.as_millis() {
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms if ms >= 1000 => format!("{}s", ms as f64 / 1000.0),
        ms => format!("{ms}ms"),
    }
}

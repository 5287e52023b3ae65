//! The registry of harnesses. Each harness is data: a manifest (what goes where), an adapter
//! (how the runtime reads its stdin and writes its stdout) and templates, all embedded at build
//! time. Adding a harness is those files, one line in [`HARNESSES`] and fixtures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::env::Env;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}
#[allow(unused_imports)]
pub use embedded::LEGACY as LEGACY_FILES;

pub struct Spec {
    pub id: &'static str,
    pub manifest: &'static str,
    pub adapter: &'static str,
}

macro_rules! harness {
    ($id:literal) => {
        Spec {
            id: $id,
            manifest: include_str!(concat!("../manifests/", $id, ".toml")),
            adapter: include_str!(concat!("../adapters/", $id, ".toml")),
        }
    };
}

pub static HARNESSES: &[Spec] = &[
    harness!("claude-code"),
    harness!("codex"),
    harness!("cursor"),
    harness!("cline"),
    harness!("trae-cli"),
    harness!("gemini-cli"),
    harness!("opencode"),
    harness!("kilo-code"),
    harness!("pi"),
    harness!("amp"),
    harness!("qwen-code"),
    harness!("copilot-cli"),
    harness!("factory-droid"),
    harness!("codebuddy"),
    harness!("letta-code"),
    harness!("auggie"),
    harness!("kiro-cli"),
    harness!("goose"),
    harness!("windsurf"),
    harness!("kimi-code"),
    harness!("antigravity-cli"),
    harness!("devin-cli"),
    harness!("zcode"),
    harness!("traecode"),
    harness!("grok-build"),
    harness!("crush"),
];

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum InstallKind {
    /// Hook entries merged into a JSON file under `events_key`.
    JsonHooks,
    /// One executable file per event in a directory.
    ScriptDir,
    /// One whole file ovmem owns (a plugin module the harness loads in-process: opencode, Kilo Code,
    /// Pi, Amp), at the scope's `file`. The module runs `ovmem hook <harness> <event>` itself.
    PluginFile,
    /// `[[hooks]]` tables in a TOML file, each naming its event in an `event` key (Kimi Code).
    TomlHooks,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub kind: InstallKind,
    #[serde(default)]
    pub binaries: Vec<String>,
    #[serde(default)]
    pub version_args: Vec<String>,
    /// The harness version ovmem's end-to-end tests ran.
    pub tested: Option<String>,
    #[serde(default)]
    pub deprecated: bool,
    pub replacement: Option<String>,
    /// Where the events object sits: a key (`hooks`), a dotted path (`hooks.events`), or `""`
    /// for the file's top level. A scope may name its own.
    pub events_key: Option<String>,
    /// Keys ovmem sets (dotted path -> value) for its hooks to run at all (ZCode's
    /// `hooks.enabled = true`); removed on uninstall only when ovmem set them.
    #[serde(default)]
    pub set_keys: toml::Table,
    /// The harness splits `command` on whitespace without a shell: a runtime path that needs
    /// quoting is refused instead of quoted.
    #[serde(default)]
    pub unquoted_command: bool,
    /// Said after install, when part of the integration is the user's to do (MCP in a format
    /// ovmem does not edit, say).
    pub install_note: Option<String>,
    pub template: String,
    pub template_with_matcher: Option<String>,
    #[serde(default)]
    pub root_defaults: toml::Table,
    /// How hooks get trusted after install, when the harness gates them.
    pub trust: Option<String>,
    /// The config file trust records go in, when the harness's app-server does not name it.
    pub trust_config: Option<String>,
    /// The `ovmem mcp` server entry (a JSON value) and the object it goes in, for scopes that
    /// name an `mcp_file`.
    pub mcp_template: Option<String>,
    pub mcp_key: Option<String>,
    /// The format of the `mcp_file`: a JSON object of servers (default), or TOML tables
    /// (`[mcp_servers.ovmem]`, Codex and TRAE CLI).
    #[serde(default)]
    pub mcp_format: McpFormat,
    pub project_scope_note: Option<String>,
    /// The entry rendered when ovmem itself runs on Windows (a PowerShell or cmd.exe form), and
    /// its form with a matcher.
    pub template_windows: Option<String>,
    pub template_windows_with_matcher: Option<String>,
    /// Script-dir harnesses: a second file per event for Windows hosts (`<Event>.ps1`), from
    /// this template, so a Windows machine reading the same directory finds a hook it can run.
    pub script_windows: Option<ScriptWindows>,
    /// The largest `timeout` the harness accepts per event before it clamps it and warns (in the
    /// manifest's own unit); every hook's timeout must stay within it.
    #[serde(default)]
    pub timeout_caps: BTreeMap<String, u32>,
    /// The unit of every timeout in the manifest and in the harness's entries.
    #[serde(default)]
    pub timeout_unit: TimeoutUnit,
    /// What the harness allows a hook whose entry names no timeout (in `timeout_unit`): `ovmem
    /// doctor` runs each hook under the timeout the harness would apply.
    pub default_timeout: Option<u32>,
    pub scopes: Scopes,
    pub hooks: Vec<HookSpec>,
}

/// How the `ovmem` MCP server entry is written into a harness's `mcp_file`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum McpFormat {
    /// A member of a JSON/JSONC object (`mcpServers.ovmem`).
    #[default]
    Json,
    /// A TOML table (`[mcp_servers.ovmem]`), the template's JSON object written as TOML.
    Toml,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
pub enum TimeoutUnit {
    #[default]
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "ms")]
    Milliseconds,
}

impl TimeoutUnit {
    pub fn duration(self, n: u64) -> std::time::Duration {
        match self {
            TimeoutUnit::Seconds => std::time::Duration::from_secs(n),
            TimeoutUnit::Milliseconds => std::time::Duration::from_millis(n),
        }
    }
}

impl Manifest {
    /// The template of `hook`: the matcher form when it has a matcher, the Windows form when
    /// ovmem runs on Windows and the manifest has one.
    pub fn template_for(&self, hook: &HookSpec, windows: bool) -> &str {
        let (plain, matcher) = match (windows, &self.template_windows) {
            (true, Some(w)) => (w, self.template_windows_with_matcher.as_ref()),
            _ => (&self.template, self.template_with_matcher.as_ref()),
        };
        match (&hook.matcher, matcher) {
            (Some(_), Some(t)) => t,
            _ => plain,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scopes {
    pub user: Option<ScopeSpec>,
    pub project: Option<ScopeSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptWindows {
    pub template: String,
    /// Appended to the event's file name (`.ps1`).
    pub suffix: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeSpec {
    pub file: Option<String>,
    /// Hooks live inside every file matching this pattern (`*` in the last component only),
    /// one file per agent (Kiro CLI); ovmem never creates such a file.
    pub files_glob: Option<String>,
    /// What to tell the user when `files_glob` matches nothing.
    pub files_glob_none: Option<String>,
    /// Overrides the manifest's `events_key` for this scope.
    pub events_key: Option<String>,
    pub mcp_file: Option<String>,
    /// The MCP file on macOS, where it differs (an Electron app's user-data folder).
    pub mcp_file_macos: Option<String>,
    /// Whole files ovmem owns beside the hooks (a plugin's manifest), created and removed whole.
    #[serde(default)]
    pub owned_files: Vec<OwnedFile>,
    /// A value ovmem adds to an array in another JSON file for its hooks to work (TraeCode's
    /// sandbox rule for `$OVMEM_HOME`), removed exactly on uninstall.
    #[serde(default)]
    pub array_members: Vec<ArrayMember>,
    pub dir: Option<String>,
    pub fallback_dir: Option<String>,
    pub fallback_note: Option<String>,
    #[serde(default)]
    pub detect: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnedFile {
    pub path: String,
    pub template: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayMember {
    pub file: String,
    /// Dotted path of the array (`filesystem.readWrite`).
    pub key: String,
    /// A template string (`{{OVMEM_HOME_PATH}}`), the array's new string member.
    pub value: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    pub event: String,
    pub matcher: Option<String>,
    pub timeout: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adapter {
    pub harness: String,
    pub encoder: Encoder,
    pub context_limit: usize,
    #[serde(default)]
    pub inject_events: Vec<String>,
    #[serde(default)]
    pub inject_once_on_tool: bool,
    /// Stop events that mean the turn was cancelled (sent to a backend as `cancelled`).
    #[serde(default)]
    pub cancelled_events: Vec<String>,
    #[serde(default)]
    pub guard_tools: Vec<String>,
    /// How a tool-guard deny is written, where the encoder's default does not fit.
    #[serde(default)]
    pub deny_style: DenyStyle,
    pub events: BTreeMap<String, Canonical>,
    /// Environment variables naming the project directory, for harnesses whose stdin has no
    /// cwd (Devin CLI's `DEVIN_PROJECT_DIR`); read when no `fields.cwd` alias is present.
    #[serde(default)]
    pub cwd_env: Vec<String>,
    /// When another harness runs this one's hooks too (Devin and Grok run `~/.claude` hooks,
    /// Cursor can, Grok runs `~/.cursor` hooks) and ovmem's own hooks for that harness are
    /// installed, this hook answers with its no-op so each turn is handled once.
    #[serde(default)]
    pub skip_when: Vec<SkipWhen>,
    /// Where the turn is read when a stop event carries neither reply nor transcript path.
    pub transcript_locator: Option<TranscriptLocator>,
    /// Runtimes of one harness that honour injected context at different events, told apart
    /// from stdin (Cline: CLI, VS Code 3.x, the 4.x legacy and next bundles). The first whose
    /// conditions hold replaces `inject_events` and `inject_once_on_tool`.
    #[serde(default)]
    pub variants: Vec<Variant>,
    /// Stdin this adapter answers with its no-op and otherwise ignores (Grok's extra Stop at
    /// shutdown, a subagent's prompt).
    #[serde(default)]
    pub ignore_when: Vec<Condition>,
    /// The harness can send the same stop twice for one reply (ZCode, after a cancelled
    /// continuation): a reply already captured in the session is not captured again.
    #[serde(default)]
    pub stop_once_per_reply: bool,
    #[serde(default)]
    pub tool_by_event: BTreeMap<String, String>,
    #[serde(default)]
    pub noop_by_event: BTreeMap<String, String>,
    pub fields: Fields,
}

impl Adapter {
    /// This adapter as variant `v` behaves (its inject events), or as it is.
    pub fn for_variant(&self, v: Option<usize>) -> std::borrow::Cow<'_, Adapter> {
        let Some(var) = v.and_then(|i| self.variants.get(i)) else {
            return std::borrow::Cow::Borrowed(self);
        };
        let mut a = self.clone();
        a.inject_events = var.inject_events.clone();
        a.inject_once_on_tool = var.inject_once_on_tool;
        std::borrow::Cow::Owned(a)
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Encoder {
    HookSpecificOutput,
    Cursor,
    Cline,
    /// Top-level keys: `{"additionalContext"}` to inject, `{"permissionDecision":"deny",
    /// "permissionDecisionReason"}` to deny (GitHub Copilot CLI).
    Copilot,
    /// The context as plain text on stdout, nothing for a no-op (Letta Code).
    Plain,
}

/// The shape of a deny: the encoder's own (default), a top-level `{"decision":"deny","reason"}`
/// (Gemini CLI), or exit code 2 with the reason on stderr and nothing on stdout (Letta Code).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DenyStyle {
    #[default]
    Encoder,
    Decision,
    Exit2Stderr,
    /// `{"decision":"block","reason"}` (Goose).
    DecisionBlock,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SkipWhen {
    /// Set by the other harness for the hooks it runs.
    pub env: String,
    /// That harness's id: the skip applies only while ovmem's own hooks for it are installed.
    pub installed: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TranscriptLocator {
    /// `${KIMI_CODE_HOME:-~/.kimi-code}/sessions/*/session_<id>/agents/main/wire.jsonl`.
    KimiWire,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// The variant applies when any of these holds ...
    #[serde(default)]
    pub when_any: Vec<Condition>,
    /// ... and all of these.
    #[serde(default)]
    pub when_all: Vec<Condition>,
    pub inject_events: Vec<String>,
    #[serde(default)]
    pub inject_once_on_tool: bool,
}

/// A test on one stdin field (a dotted path, as in [`Fields`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    pub path: String,
    /// The field is a string equal to this (`""` matches an empty or missing field).
    pub equals: Option<String>,
    /// The field is present and none of these.
    #[serde(default)]
    pub present_not: Vec<String>,
    /// The field matches this regex.
    pub matches: Option<String>,
    /// The field is a version (`4.1.13`) below this one.
    pub version_below: Option<String>,
    /// The field is a version at or above this one.
    pub version_at_least: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Canonical {
    SessionStart,
    Prompt,
    Stop,
    PreTool,
    SessionEnd,
    /// After a tool ran: where a harness reads context only from its post-tool hook (Auggie),
    /// memory is injected there once per session (`inject_once_on_tool`). Never a guard.
    PostTool,
    /// The harness is about to compact (summarise) the session's context (Claude Code's and
    /// Codex's `PreCompact`, Gemini CLI's `PreCompress`, Cursor's and Copilot CLI's
    /// `preCompact`): what was injected before may be injected again. Answered with the no-op.
    Compact,
}

/// Ordered alias lists: dotted paths into the stdin JSON (`turn.outputText`, `workspace_roots.0`,
/// `.` for the whole object). The first present, non-empty one wins.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Fields {
    #[serde(default)]
    pub session: Vec<String>,
    #[serde(default)]
    pub cwd: Vec<String>,
    #[serde(default)]
    pub prompt: Vec<String>,
    #[serde(default)]
    pub reply: Vec<String>,
    #[serde(default)]
    pub transcript: Vec<String>,
    #[serde(default)]
    pub tool: Vec<String>,
    #[serde(default)]
    pub tool_input: Vec<String>,
    /// When the event happened (ISO 8601 / RFC 3339, or Unix seconds or milliseconds).
    #[serde(default)]
    pub timestamp: Vec<String>,
    /// Why a session starts (`startup`, `resume`, `clear`, `compact`): after `clear` or `compact`
    /// the agent's context no longer holds what was injected before.
    #[serde(default = "source_fields")]
    pub source: Vec<String>,
}

fn source_fields() -> Vec<String> {
    vec!["source".into()]
}

pub struct Harness {
    pub manifest: Manifest,
    spec: &'static Spec,
}

impl Harness {
    /// A harness from manifest text that shares the registered harness `like`'s adapter: how
    /// manifest-level behaviour (a deprecated adapter, say) is tested without shipping it.
    pub fn from_manifest(manifest: &str, like: &str) -> Result<Self> {
        let spec = HARNESSES.iter().find(|s| s.id == like).with_context(|| format!("no harness `{like}`"))?;
        Ok(Self { manifest: toml::from_str(manifest)?, spec })
    }

    pub fn id(&self) -> &str {
        &self.manifest.id
    }

    pub fn adapter(&self) -> Result<Adapter> {
        parse_adapter(self.spec)
    }

    pub fn scope(&self, scope: Scope) -> Result<&ScopeSpec> {
        let spec = match scope {
            Scope::User => self.manifest.scopes.user.as_ref(),
            Scope::Project => self.manifest.scopes.project.as_ref(),
        };
        match spec {
            Some(s) => Ok(s),
            None => match (&self.manifest.project_scope_note, scope) {
                (Some(note), Scope::Project) => bail!("{note}"),
                _ => bail!("{} has no {} scope", self.manifest.name, scope.as_str()),
            },
        }
    }

    /// Whether the harness looks present: a binary on PATH or one of its config locations.
    pub fn detect(&self, env: &Env) -> Detection {
        let binary = self.manifest.binaries.iter().find_map(|b| env.which(b));
        let config = self
            .manifest
            .scopes
            .user
            .iter()
            .flat_map(|s| s.detect.iter())
            .filter_map(|p| env.expand(p, None).ok())
            .find(|p| p.exists());
        Detection { binary, config }
    }
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Detection {
    pub binary: Option<PathBuf>,
    pub config: Option<PathBuf>,
}

impl Detection {
    pub fn found(&self) -> bool {
        self.binary.is_some() || self.config.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

fn parse_adapter(spec: &Spec) -> Result<Adapter> {
    toml::from_str(spec.adapter).with_context(|| format!("adapters/{}.toml does not parse", spec.id))
}

/// Every harness, parsed once.
pub fn all() -> &'static [Harness] {
    static ALL: OnceLock<Vec<Harness>> = OnceLock::new();
    ALL.get_or_init(|| HARNESSES.iter().map(parse).collect())
}

fn parse(spec: &'static Spec) -> Harness {
    Harness {
        manifest: toml::from_str(spec.manifest)
            .unwrap_or_else(|e| panic!("manifests/{}.toml does not parse: {e}", spec.id)),
        spec,
    }
}

/// The harness registered as `id` exactly, parsed alone: a hook names its harness by id and
/// needs that one manifest, not the other 25 (parsing all of them was a fifth of what a prompt
/// hook's main thread did before its store was opened).
fn by_id(id: &str) -> Option<&'static Harness> {
    static EACH: OnceLock<Vec<OnceLock<Harness>>> = OnceLock::new();
    let i = HARNESSES.iter().position(|s| s.id == id)?;
    let each = EACH.get_or_init(|| HARNESSES.iter().map(|_| OnceLock::new()).collect());
    Some(each[i].get_or_init(|| parse(&HARNESSES[i])))
}

/// A name as ids and aliases are written: trimmed, lower case, `-` for `_` and spaces, so
/// `Claude_Code` and `claude code` mean `claude-code`.
pub fn normalise(name: &str) -> String {
    name.trim().to_lowercase().chars().map(|c| if c == '_' || c.is_whitespace() { '-' } else { c }).collect()
}

/// Looks a harness up by id or alias (in any case, `_` for `-`).
pub fn find(name: &str) -> Option<&'static Harness> {
    let name = normalise(name);
    by_id(&name).or_else(|| all().iter().find(|h| h.manifest.id == name || h.manifest.aliases.contains(&name)))
}

/// `--harness` names that are no harness: the first line names each of them with the closest
/// ids when a name looks like a typo; then every id with its aliases, wrapped into short lines.
#[derive(Debug, thiserror::Error)]
#[error("{}\nknown harnesses (id and aliases), or `all` (every detected one):\n{}", first_line(.names), names_wrapped(76))]
pub struct UnknownHarness {
    /// Each unknown name with its suggestions, in the order given.
    pub names: Vec<(String, Vec<&'static str>)>,
}

impl UnknownHarness {
    pub fn one(name: &str) -> Self {
        UnknownHarness { names: vec![(name.to_string(), suggest(name))] }
    }
}

fn first_line(names: &[(String, Vec<&'static str>)]) -> String {
    let each: Vec<String> = names.iter().map(|(n, s)| format!("`{n}`{}", did_you_mean(s))).collect();
    format!("unknown harness{} {}", if names.len() == 1 { "" } else { "es" }, each.join(", "))
}

fn did_you_mean(s: &[&str]) -> String {
    match s {
        [] => String::new(),
        [one] => format!(" (did you mean `{one}`?)"),
        many => {
            format!(" (did you mean one of {}?)", many.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "))
        }
    }
}

/// [`names_text`] broken between harnesses into indented lines of at most `width` characters.
fn names_wrapped(width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for item in names() {
        let line = lines.last_mut().expect("one line");
        if !line.is_empty() && line.chars().count() + 2 + item.chars().count() + 1 > width {
            line.push(',');
            lines.push(String::new());
        }
        let line = lines.last_mut().expect("one line");
        if !line.is_empty() {
            line.push_str(", ");
        }
        line.push_str(&item);
    }
    lines.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

/// Every harness as `id (alias, alias)`, comma-separated, in registry order: the one list that
/// help texts, errors and install.sh show.
pub fn names_text() -> String {
    names().join(", ")
}

fn names() -> Vec<String> {
    all()
        .iter()
        .map(|h| match h.manifest.aliases.as_slice() {
            [] => h.id().to_string(),
            aliases => format!("{} ({})", h.id(), aliases.join(", ")),
        })
        .collect()
}

/// The ids of the harnesses whose id or an alias is close to `name` (a typo, a prefix, a name
/// with a suffix too many), best first.
pub fn suggest(name: &str) -> Vec<&'static str> {
    let name = normalise(name);
    let mut scored: Vec<(usize, &'static str)> = Vec::new();
    for h in all() {
        let best = std::iter::once(&h.manifest.id)
            .chain(&h.manifest.aliases)
            .filter_map(|known| {
                let d = strsim::damerau_levenshtein(&name, known);
                let limit = (known.chars().count().max(name.chars().count()) / 4).clamp(1, 3);
                let affix = name.len() >= 3 && (known.starts_with(&name) || name.starts_with(known.as_str()));
                (d <= limit || affix).then_some(d)
            })
            .min();
        if let Some(d) = best {
            scored.push((d, h.manifest.id.as_str()));
        }
    }
    scored.sort();
    scored.into_iter().map(|(_, id)| id).take(3).collect()
}

/// The adapter for `id` alone, without parsing any manifest: the hook fast path.
pub fn adapter_for(id: &str) -> Option<Result<Adapter>> {
    HARNESSES.iter().find(|s| s.id == id).map(parse_adapter)
}

/// Parses `claude-code,codex` / `all` into harnesses; `all` means every detected one. Unknown
/// names are one [`UnknownHarness`] that names all of them.
pub fn parse_list(list: &str, env: &Env) -> Result<Vec<&'static Harness>> {
    let mut out: Vec<&'static Harness> = Vec::new();
    let mut unknown = UnknownHarness { names: Vec::new() };
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if normalise(name) == "all" {
            for h in all().iter().filter(|h| h.detect(env).found()) {
                if !out.iter().any(|o| o.id() == h.id()) {
                    out.push(h);
                }
            }
            continue;
        }
        let Some(h) = find(name) else {
            if !unknown.names.iter().any(|(n, _)| n == name) {
                unknown.names.push((name.to_string(), suggest(name)));
            }
            continue;
        };
        if !out.iter().any(|o| o.id() == h.id()) {
            out.push(h);
        }
    }
    if !unknown.names.is_empty() {
        return Err(unknown.into());
    }
    if out.is_empty() {
        let known: Vec<&str> = all().iter().map(|h| h.id()).collect();
        if list.split(',').any(|n| !n.trim().is_empty()) {
            bail!("no harness detected on this machine for `{list}`; name them instead: --harness {}", known.join(","));
        }
        bail!("--harness names no harness; give one or more of: {}", names_text());
    }
    Ok(out)
}

pub fn template(name: &str) -> Result<&'static str> {
    embedded::TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .with_context(|| format!("template `{name}` is not embedded"))
}

/// Values for a template's placeholders.
pub struct Placeholders<'a> {
    pub bin: &'a Path,
    pub harness: &'a str,
    pub event: &'a str,
    pub timeout: u32,
    pub matcher: &'a str,
    pub ovmem_home: &'a Path,
}

/// Whether a template is a JavaScript/TypeScript module (a plugin file): its placeholders are
/// escaped as JSON string bodies, which are valid JS string bodies too.
pub fn is_script_module(name: &str) -> bool {
    [".js", ".mjs", ".ts", ".mts"].iter().any(|e| name.ends_with(e))
}

/// Renders a template in one pass: each `{{NAME}}` is replaced by its value, escaped for the
/// template's format (a JSON string body for `.json` and JS/TS modules, raw for shell scripts;
/// paths are shell-quoted first). `{{OVMEM_BIN_JS}}` is the runtime path as a whole JSON string
/// literal (quotes included), which is also a JS/TS string literal. Values are never scanned
/// again, so a `{{x}}` inside a path stays as it is.
pub fn render(name: &str, p: &Placeholders) -> Result<String> {
    let format = if name.ends_with(".json") || name.ends_with(".toml") || is_script_module(name) {
        Format::Quoted
    } else {
        Format::Raw
    };
    render_text(name, template(name)?, format, p)
}

/// Renders a template string from a manifest (an array member's value): values as they are.
pub fn render_str(text: &str, p: &Placeholders) -> Result<String> {
    render_text("a manifest value", text, Format::Raw, p)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Inside a JSON or TOML basic string: escaped as its body.
    Quoted,
    Raw,
}

fn render_text(name: &str, text: &str, format: Format, p: &Placeholders) -> Result<String> {
    let json = format == Format::Quoted;
    let esc =
        |s: &str| if json { serde_json::to_string(s).unwrap().trim_matches('"').to_string() } else { s.to_string() };
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find("}}") else {
            bail!("template `{name}` has an unclosed `{{{{`");
        };
        let value = match &after[..end] {
            "OVMEM_BIN" => esc(&shell_quote(&p.bin.to_string_lossy())),
            "OVMEM_BIN_PATH" => esc(&p.bin.to_string_lossy()),
            "OVMEM_BIN_JS" => serde_json::to_string(&p.bin.to_string_lossy()).expect("a string serialises"),
            // PowerShell (`& '…'`) and cmd.exe forms, for Windows fields and hosts.
            "OVMEM_BIN_PS" => esc(&crate::winshell::ps_call(p.bin)),
            "OVMEM_BIN_PS_WINDOWS" => esc(&crate::winshell::ps_call_windows(p.bin)),
            "OVMEM_BIN_CMD" => esc(&crate::winshell::cmd_path(p.bin).map_err(|e| anyhow::anyhow!(e))?),
            "OVMEM_HOME" => esc(&shell_quote(&p.ovmem_home.to_string_lossy())),
            "OVMEM_HOME_PATH" => esc(&p.ovmem_home.to_string_lossy()),
            "HARNESS" => esc(p.harness),
            "EVENT" => esc(p.event),
            "MATCHER" => esc(p.matcher),
            "TIMEOUT" => p.timeout.to_string(),
            other => bail!("template `{name}` has an unknown placeholder `{{{{{}}}}}`", other.escape_debug()),
        };
        out.push_str(&value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

pub use crate::shell::{quote as shell_quote, words as shell_words};

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest or adapter that does not parse would panic on the user's machine instead of
    /// at build-and-test time.
    #[test]
    fn every_manifest_and_adapter_parses_and_agrees() {
        for h in all() {
            let a = h.adapter().unwrap();
            assert_eq!(a.harness, h.id());
            for hook in &h.manifest.hooks {
                assert!(a.events.contains_key(&hook.event), "{}: {} has no adapter mapping", h.id(), hook.event);
            }
            for e in a.inject_events.iter().chain(a.tool_by_event.keys()).chain(a.noop_by_event.keys()) {
                assert!(a.events.contains_key(e), "{}: {e} is not an event", h.id());
            }
        }
    }

    /// A timeout over the harness's cap is clamped by it, with a warning on every run.
    #[test]
    fn every_timeout_is_within_the_harness_cap() {
        for h in all() {
            for hook in &h.manifest.hooks {
                if let (Some(cap), Some(t)) = (h.manifest.timeout_caps.get(&hook.event), hook.timeout) {
                    assert!(t <= *cap, "{}: {} timeout {t} is over the cap {cap}", h.id(), hook.event);
                }
            }
            for e in h.manifest.timeout_caps.keys() {
                assert!(
                    h.manifest.hooks.iter().any(|x| &x.event == e),
                    "{}: a cap for `{e}`, which is not installed",
                    h.id()
                );
            }
        }
    }

    /// Ids and aliases must be unique kebab-case, or `--harness` would be ambiguous.
    #[test]
    fn ids_and_aliases_are_unique_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for h in all() {
            for name in std::iter::once(&h.manifest.id).chain(&h.manifest.aliases) {
                assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{name}");
                assert!(seen.insert(name.clone()), "duplicate name {name}");
            }
            assert_eq!(h.manifest.id, h.spec.id);
        }
    }

    /// Every template a manifest names must exist, render with no placeholder left, and parse
    /// as its format; an odd runtime path (quotes, spaces, a `{{…}}`) must survive escaping and be
    /// recognised as ovmem's exact command.
    #[test]
    fn templates_render_and_parse() {
        let unix = ["/home/o'neil/my dir/bin/ovmem", "/h/{{EVENT}}/{{x}/bin/ovmem"];
        let windows = [r"C:\Users\Ann O'Neil\.ovmem\bin\ovmem.exe", r"C:\Users\ann\.ovmem\bin\ovmem.exe"];
        for (on_windows, bins) in [(false, unix), (true, windows)] {
            for bin in bins {
                let bin = Path::new(bin);
                for h in all() {
                    if h.manifest.kind == InstallKind::PluginFile {
                        if !on_windows {
                            plugin_template_renders(h, bin);
                        }
                        continue;
                    }
                    if on_windows && h.manifest.template_windows.is_none() {
                        continue;
                    }
                    for hook in &h.manifest.hooks {
                        let name = h.manifest.template_for(hook, on_windows).to_string();
                        let p = Placeholders {
                            bin,
                            harness: h.id(),
                            event: &hook.event,
                            timeout: 7,
                            matcher: hook.matcher.as_deref().unwrap_or(""),
                            ovmem_home: Path::new("/h/.ovmem"),
                        };
                        let out = match render(&name, &p) {
                            // A cmd.exe form refuses a path it cannot carry; that is the point.
                            Err(e) if on_windows && bin.to_string_lossy().contains(' ') => {
                                assert!(e.to_string().contains("cmd.exe"), "{e}");
                                continue;
                            }
                            other => other.unwrap(),
                        };
                        let runtime = if name.ends_with(".json") {
                            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                            crate::install::marker::entry_runtime(&v, h.id(), Some(&hook.event))
                        } else if name.ends_with(".toml") {
                            let v = crate::install::toml_hooks::body_value(&out).unwrap();
                            crate::install::marker::handler_runtime(&v, h.id(), Some(&hook.event)).map(|(_, r)| r)
                        } else {
                            let cmd = out.lines().find_map(|l| l.strip_prefix("exec ")).unwrap().to_string();
                            crate::install::marker::hook_runtime(&cmd, h.id(), Some(&hook.event))
                        };
                        assert_eq!(runtime.as_deref(), Some(bin), "{}: {out}", h.id());
                    }
                }
            }
        }
    }

    /// A plugin module names ovmem's runtime by its exact marker, and runs every event the
    /// manifest lists (by its name as a string literal).
    fn plugin_template_renders(h: &Harness, bin: &Path) {
        let p = Placeholders {
            bin,
            harness: h.id(),
            event: "",
            timeout: 0,
            matcher: "",
            ovmem_home: Path::new("/h/.ovmem"),
        };
        let out = render(&h.manifest.template, &p).unwrap();
        assert_eq!(crate::install::plugin_file::plugin_runtime(&out, h.id()).as_deref(), Some(bin), "{}", h.id());
        for hook in &h.manifest.hooks {
            assert!(out.contains(&format!("\"{}\"", hook.event)), "{}: the plugin never runs {}", h.id(), hook.event);
        }
        let literal = serde_json::to_string(&bin.to_string_lossy()).unwrap();
        assert!(!out.replace(&literal, "").contains("{{"), "{}: a placeholder is left", h.id());
    }

    #[test]
    fn placeholders_are_replaced_once_and_unknown_ones_refused() {
        let p = Placeholders {
            bin: Path::new("/x/{{HARNESS}}/bin/ovmem"),
            harness: "codex",
            event: "Stop",
            timeout: 3,
            matcher: "",
            ovmem_home: Path::new("/x"),
        };
        let out = render("codex/group.json", &p).unwrap();
        assert!(out.contains("/x/{{HARNESS}}/bin/ovmem"), "{out}");
    }
}

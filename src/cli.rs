//! The command line: the verbs and their dispatch (each verb's arguments live with it in
//! `cmd/`). Exit codes: 0 success, 1 failure or findings, 2 refusal (a file that does not parse,
//! bad usage, a missing confirmation), 128 + n when signal n interrupted a change (rolled back).

use clap::{Parser, Subcommand};

use crate::cmd::check::CheckArgs;
use crate::cmd::demo::DemoArgs;
use crate::cmd::doctor::DoctorArgs;
use crate::cmd::install::InstallArgs;
use crate::cmd::memory::MemoryCommand;
use crate::cmd::migrate::MigrateArgs;
use crate::cmd::repair::RepairArgs;
use crate::cmd::status::StatusArgs;
use crate::cmd::ui::UiArgs;
use crate::cmd::uninstall::UninstallArgs;
use crate::cmd::{self, Refusal};
use crate::env::Env;
use crate::output::Printer;

#[derive(Parser)]
#[command(
    name = "ovmem",
    version,
    about = "Deterministic long-term memory for coding agents, through their own lifecycle hooks",
    after_help = "Environment:\n  OVMEM_HOME          where ovmem keeps its runtime, memory.db, receipts and logs (default ~/.ovmem)\n  OVMEM_BANK          project | agent | session | user (overrides config.toml)\n  OVMEM_RECALL_LIMIT  memories injected per recall\n  OVMEM_DEADLINE_MS   hook deadline in milliseconds\n  CLAUDE_CONFIG_DIR, CODEX_HOME, TRAE_HOME, TRAECLI_HOME, CLINE_DIR  the harnesses' own overrides\n  NO_COLOR            no colour"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Wire ovmem's hooks into the harnesses' config files
    Install(InstallArgs),
    /// Remove exactly what ovmem added
    Uninstall(UninstallArgs),
    /// What is detected and installed, per harness and scope
    Status(StatusArgs),
    /// Find legacy, deprecated and duplicate memory integrations (a CI gate: exit 0 clean, 1 findings, 2 unreadable)
    Check(CheckArgs),
    /// Run every installed hook as its harness would and report what works (exit 0 healthy, 1 problems, 2 unreadable)
    Doctor(DoctorArgs),
    /// Replace legacy memory integrations (OpenViking, Hindsight, older ovmem) with ovmem
    Migrate(MigrateArgs),
    /// Rebuild a lost or damaged receipt from ovmem's entries and the `.ovmem.bak` backups
    Repair(RepairArgs),
    /// Run a hook (what the harnesses call; reads stdin, writes the harness's output)
    Hook { harness: String, event: String },
    /// Serve the memory tools over MCP (stdio), as registered by `ovmem install`
    Mcp,
    /// Search, add, list, forget, export and import memories
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Show ovmem working: two simulated sessions through the real hook path
    Demo(DemoArgs),
    /// A local web viewer of what the agents remember: browse, search, what was injected, forget, pin, edit
    Ui(UiArgs),
    /// The memory backend: show what is configured, test that it answers
    #[command(subcommand)]
    Backend(cmd::backend::BackendCommand),
    /// Store spooled turns and send every memory waiting for the remote backend
    Sync {
        /// Give up after this many seconds
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        /// Put memories the server refused (parked) back in the queue first
        #[arg(long)]
        retry_parked: bool,
        #[arg(long)]
        json: bool,
    },
    /// The harnesses ovmem supports: ids, names, aliases, tested versions
    Harnesses(cmd::harnesses::HarnessesArgs),
    /// Print a shell completion script
    Completions { shell: clap_complete::Shell },
}

pub fn run() -> i32 {
    quiet_on_closed_pipe();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let p = Printer::new();
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            // An error can quote a project's file names or a symlink's target: no escapes.
            eprintln!("{} {}", p.red("error:"), crate::termsafe::clean(&format!("{e:#}")));
            exit_code(&e)
        }
    }
}

/// `ovmem status | head -1`: once the reader is gone, the next write ends the process quietly
/// (SIGPIPE's default action, exit status 141 in the shell) instead of a panic about a broken
/// pipe. Only the CLI: hooks (dispatched before this) keep ignoring SIGPIPE, because a harness
/// that stops reading must never cost a captured turn. A change under way when it happens is a
/// crash like any other: the journal rolls it back or forward at the next command.
fn quiet_on_closed_pipe() {
    // SAFETY: setting a signal's disposition to its default has no preconditions.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The exit code an error means.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if let Some(i) = e.downcast_ref::<crate::interrupt::Interrupted>() {
        return i.exit_code();
    }
    if e.downcast_ref::<crate::prompt::CtrlC>().is_some() {
        return crate::sys::SIGINT_EXIT;
    }
    let refused = e.downcast_ref::<Refusal>().is_some()
        || e.downcast_ref::<crate::install::Refused>().is_some()
        || e.downcast_ref::<crate::fsx::Escape>().is_some()
        || e.downcast_ref::<crate::fsx::Unfit>().is_some()
        || e.downcast_ref::<crate::receipt::Damaged>().is_some()
        || e.downcast_ref::<crate::config::Invalid>().is_some();
    if refused {
        2
    } else {
        1
    }
}

/// The environment, with what ovmem made of it said once, and the start-up chores done; with
/// `restage` (anything but a dry run), an older staged runtime becomes this binary.
fn env_for(mutating: bool, project: Option<&std::path::Path>, restage: bool) -> anyhow::Result<Env> {
    let env = Env::from_process()?;
    let p = Printer::new();
    for n in env.notes() {
        p.warn(&n);
    }
    let project = project.and_then(|p| cmd::project_dir(Some(p)).ok());
    cmd::startup(&env, mutating, project.as_deref());
    if restage {
        crate::upgrade::on_start(&env);
    }
    Ok(env)
}

/// For the commands that skip the rest of start-up: an older staged runtime still becomes this
/// binary (the first command after an upgrade may be any of them).
fn keep_runtime_current() {
    if let Ok(env) = Env::from_process() {
        crate::upgrade::on_start(&env);
    }
}

fn dispatch(command: Command) -> anyhow::Result<i32> {
    // An OVMEM_HOME that is the home directory (or above it) is used by no command: every one
    // may write there (the staged runtime, receipts, the store). A hook answers its no-op.
    if !matches!(command, Command::Hook { .. } | Command::Completions { .. }) {
        if let Ok(env) = Env::from_process() {
            crate::home::check(&env).map_err(|e| Refusal(e.to_string()))?;
        }
    }
    match command {
        Command::Install(a) => {
            let env = env_for(!a.sel.dry_run, a.sel.project.as_deref(), !a.sel.dry_run)?;
            if a.uninstall {
                // The cleanup form users know from other installers: exactly `ovmem uninstall`.
                return cmd::uninstall::run(
                    UninstallArgs { sel: a.sel, legacy: false, all: false, purge: false },
                    &env,
                );
            }
            cmd::install::run(a, &env)
        }
        Command::Uninstall(a) => {
            let env = env_for(!a.sel.dry_run, a.sel.project.as_deref(), !a.sel.dry_run)?;
            if a.legacy {
                cmd::migrate::run(&a.sel, false, &env)
            } else {
                cmd::uninstall::run(a, &env)
            }
        }
        Command::Migrate(a) => {
            let env = env_for(!a.sel.dry_run, a.sel.project.as_deref(), !a.sel.dry_run)?;
            cmd::migrate::run(&a.sel, true, &env)
        }
        Command::Repair(a) => {
            let env = env_for(!a.sel.dry_run, a.sel.project.as_deref(), !a.sel.dry_run)?;
            cmd::repair::run(a, &env)
        }
        Command::Check(a) => {
            let env = env_for(false, None, true)?;
            cmd::check::run(a, &env)
        }
        Command::Doctor(a) => {
            let env = env_for(false, None, true)?;
            cmd::doctor::run(a, &env)
        }
        Command::Status(a) => {
            let env = env_for(false, None, true)?;
            cmd::status::run(a, &env)
        }
        Command::Hook { harness, event } => Ok(crate::runtime::main(&[harness, event])),
        Command::Memory(m) => {
            env_for(false, None, true)?;
            cmd::memory::run(m)
        }
        Command::Mcp => crate::mcp::serve(),
        Command::Demo(a) => {
            keep_runtime_current();
            cmd::demo::run(a)
        }
        Command::Ui(a) => {
            let env = env_for(false, None, true)?;
            cmd::ui::run(a, &env)
        }
        Command::Backend(c) => {
            keep_runtime_current();
            cmd::backend::run(c)
        }
        Command::Sync { timeout, retry_parked, json } => {
            keep_runtime_current();
            cmd::sync::run(timeout, retry_parked, json)
        }
        Command::Harnesses(a) => {
            keep_runtime_current();
            cmd::harnesses::run(a)
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "ovmem",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
    }
}

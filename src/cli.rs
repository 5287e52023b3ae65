//! The command line (clap derive structs and dispatch). Exit codes: 0 success, 1 failure or
//! findings, 2 refusal (a file that does not parse, bad usage, a missing confirmation).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::harness::Scope;
use crate::{cmd, integrate};

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
    /// Replace legacy memory integrations (OpenViking, Hindsight, older ovmem) with ovmem
    Migrate(MigrateArgs),
    /// Run a hook (what the harnesses call; reads stdin, writes the harness's output)
    Hook { harness: String, event: String },
    /// Serve the memory tools over MCP (stdio), as registered by `ovmem install`
    Mcp,
    /// Search, add, list, forget, export and import memories
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Show ovmem working: two simulated sessions through the real hook path
    Demo(DemoArgs),
    /// The memory backend: show what is configured, test that it answers
    #[command(subcommand)]
    Backend(cmd::backend::BackendCommand),
    /// Store spooled turns and send every memory waiting for the remote backend
    Sync {
        /// Give up after this many seconds
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script
    Completions { shell: clap_complete::Shell },
}

#[derive(Args, Clone)]
pub struct Selection {
    /// Comma-separated harness ids (claude-code, codex, cursor, cline, trae-cli) or `all` (every detected one)
    #[arg(long, value_name = "LIST")]
    pub harness: Option<String>,
    /// Where to install: the user's own config, or one project's
    #[arg(long, value_enum, default_value = "user")]
    pub scope: Scope,
    /// The project for --scope project (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Show the diff of every file, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Report as JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Replace or remove ovmem entries even where the user edited them
    #[arg(long)]
    pub force: bool,
}

#[derive(Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub sel: Selection,
    /// Do not trust the new hooks in Codex / TRAE CLI (they stay pending until trusted in `/hooks`)
    #[arg(long)]
    pub no_trust: bool,
}

#[derive(Args)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub sel: Selection,
    /// Remove the legacy integrations ovmem recognises instead (OpenViking, Hindsight), without installing ovmem
    #[arg(long)]
    pub legacy: bool,
}

#[derive(Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub sel: Selection,
}

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

#[derive(Args)]
pub struct StatusArgs {
    /// Also report project scope for this directory
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct DemoArgs {
    /// The harness whose payloads to simulate
    #[arg(long, default_value = "claude-code")]
    pub harness: String,
}

#[derive(Subcommand)]
pub enum MemoryCommand {
    /// Memories relevant to a query
    Search {
        query: String,
        #[command(flatten)]
        bank: BankArgs,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// Add a fact by hand
    Add {
        text: String,
        #[command(flatten)]
        bank: BankArgs,
    },
    /// List memories, newest first
    List {
        #[command(flatten)]
        bank: BankArgs,
        /// Every bank
        #[arg(long)]
        all: bool,
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Delete memories by id, or every memory of a bank that contains all the words of --query
    Forget {
        ids: Vec<i64>,
        /// Forget the memories that contain every word of this text (shown first; asks unless --yes)
        #[arg(long, conflicts_with = "ids")]
        query: Option<String>,
        #[command(flatten)]
        bank: BankArgs,
        /// Do not ask for confirmation
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Write memories as JSON lines (stdout, or --output FILE)
    Export {
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Only this bank
        #[arg(long)]
        bank: Option<String>,
    },
    /// Read memories from JSON lines (a file, or - for stdin); dates, harnesses and sessions are kept
    Import {
        file: PathBuf,
        /// Put every memory into this project's bank (or --bank's) instead of the bank each line names
        #[command(flatten)]
        bank: BankArgs,
    },
    /// Counts per bank
    Stats {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Clone)]
pub struct BankArgs {
    /// The project whose bank to use (default: the current directory's project)
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// A bank id as stored (e.g. `user`), instead of a project
    #[arg(long, conflicts_with = "project")]
    pub bank: Option<String>,
}

pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Install(a) => cmd::install::run(a),
        Command::Uninstall(a) if a.legacy => cmd::migrate::run(&a.sel, false),
        Command::Uninstall(a) => cmd::uninstall::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Migrate(a) => cmd::migrate::run(&a.sel, true),
        Command::Status(a) => cmd::status::run(a),
        Command::Hook { harness, event } => Ok(crate::runtime::main(&[harness, event])),
        Command::Memory(m) => cmd::memory::run(m),
        Command::Mcp => crate::mcp::serve(),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Backend(c) => cmd::backend::run(c),
        Command::Sync { timeout, json } => cmd::sync::run(timeout, json),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "ovmem",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let p = crate::output::Printer::new();
            eprintln!("{} {e:#}", p.red("error:"));
            if e.downcast_ref::<integrate::Unparseable>().is_some() || e.downcast_ref::<cmd::Refusal>().is_some() {
                2
            } else {
                1
            }
        }
    }
}

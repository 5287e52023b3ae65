//! `ovmem memory …`: look into and curate the local store by hand.

use std::io::{BufRead, Write};

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::config::{BankMode, Config};
use crate::env::Env;
use crate::output::{self, Printer};
use crate::runtime::{format_date, wire};
use crate::store::{self, Memory, Store};

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
    /// Delete memories by id
    Forget { ids: Vec<i64> },
    /// Write memories as JSON lines (stdout, or --output FILE)
    Export {
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Only this bank
        #[arg(long)]
        bank: Option<String>,
    },
    /// Read memories from JSON lines (a file, or - for stdin)
    Import { file: PathBuf },
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

fn open(env: &Env) -> Result<Store> {
    Store::open(&env.ovmem_home().join("memory.db"), std::time::Duration::from_secs(5))
}

/// The bank a command means: `--bank`, else the project's (by the configured mode).
fn bank(env: &Env, args: &BankArgs) -> Result<String> {
    if let Some(b) = &args.bank {
        return Ok(b.clone());
    }
    let dir = super::project_dir(args.project.as_deref())?;
    let cfg = Config::load(env)?;
    Ok(match cfg.bank {
        BankMode::User => "user".into(),
        _ => format!("project:{}", wire::project_root(&dir).display()),
    })
}

fn print_memories(ms: &[Memory]) {
    let p = Printer::new();
    for m in ms {
        let from = m.harness.as_deref().map(|h| format!(" {h}")).unwrap_or_default();
        println!(
            "{} {}",
            p.bold(&format!("#{}", m.id)),
            p.dim(&format!("{}{from} {}", format_date(m.created_at), m.bank))
        );
        for line in m.content.lines() {
            println!("    {line}");
        }
    }
}

pub fn run(cmd: MemoryCommand) -> Result<i32> {
    let env = Env::from_process()?;
    match cmd {
        MemoryCommand::Search { query, bank: b, limit, json } => {
            let bank = bank(&env, &b)?;
            let hits = open(&env)?.recall(&bank, &query, limit)?;
            if json {
                output::json(&hits);
            } else if hits.is_empty() {
                eprintln!("no memories match in bank `{bank}`");
            } else {
                print_memories(&hits);
            }
        }
        MemoryCommand::Add { text, bank: b } => {
            let bank = bank(&env, &b)?;
            let text = text.trim();
            if text.is_empty() {
                bail!("nothing to add: the text is empty");
            }
            match open(&env)?.add(&bank, text, Some("cli"), None, store::now())? {
                Some(id) => eprintln!("added memory #{id} to bank `{bank}`"),
                None => eprintln!("already remembered in bank `{bank}`"),
            }
        }
        MemoryCommand::List { bank: b, all, limit, json } => {
            let bank = if all { None } else { Some(bank(&env, &b)?) };
            let ms = open(&env)?.list(bank.as_deref(), limit)?;
            if json {
                output::json(&ms);
            } else {
                print_memories(&ms);
            }
        }
        MemoryCommand::Forget { ids } => {
            if ids.is_empty() {
                bail!("name the memory ids to forget (see `ovmem memory list`)");
            }
            let store = open(&env)?;
            let mut missing = Vec::new();
            for id in ids {
                if store.forget(id)? {
                    eprintln!("forgot memory #{id}");
                } else {
                    missing.push(id.to_string());
                }
            }
            if !missing.is_empty() {
                bail!("no memory with id {}", missing.join(", "));
            }
        }
        MemoryCommand::Export { output, bank } => {
            let ms = open(&env)?.list(bank.as_deref(), None)?;
            let mut text = String::new();
            for m in ms.iter().rev() {
                text.push_str(&serde_json::to_string(m)?);
                text.push('\n');
            }
            match output {
                Some(path) => {
                    crate::fsx::write_atomic(&path, text.as_bytes(), Some(0o600))?;
                    eprintln!("exported {} memories to `{}`", ms.len(), path.display());
                }
                None => std::io::stdout().write_all(text.as_bytes())?,
            }
        }
        MemoryCommand::Import { file } => {
            let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
                Box::new(std::io::stdin().lock())
            } else {
                Box::new(std::io::BufReader::new(
                    std::fs::File::open(&file).with_context(|| format!("could not open `{}`", file.display()))?,
                ))
            };
            let store = open(&env)?;
            let (mut added, mut dup) = (0, 0);
            for (i, line) in reader.lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                let m: Memory = serde_json::from_str(&line)
                    .with_context(|| format!("line {} of `{}` is not an exported memory", i + 1, file.display()))?;
                match store.add(&m.bank, &m.content, m.harness.as_deref(), m.session.as_deref(), m.created_at)? {
                    Some(_) => added += 1,
                    None => dup += 1,
                }
            }
            eprintln!("imported {added} memories ({dup} already present)");
        }
        MemoryCommand::Stats { json } => {
            let s = open(&env)?.stats()?;
            if json {
                output::json(&s);
            } else {
                println!("{} memories in `{}`", s.memories, env.ovmem_home().join("memory.db").display());
                for (b, n) in &s.banks {
                    println!("  {n:>6}  {b}");
                }
                if s.pending_prompts > 0 {
                    println!("{} prompt(s) waiting for their turn to finish", s.pending_prompts);
                }
            }
        }
    }
    Ok(0)
}

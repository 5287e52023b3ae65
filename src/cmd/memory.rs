//! `ovmem memory …`: look into and curate the local store by hand.

use std::io::{BufRead, Write};

use anyhow::{bail, Context, Result};

use crate::cli::{BankArgs, MemoryCommand};
use crate::config::{BankMode, Config};
use crate::env::Env;
use crate::output::{self, Printer};
use crate::runtime::format_date;
use crate::store::{self, Memory, Store};

fn open(env: &Env) -> Result<Store> {
    Store::open(&env.ovmem_home().join("memory.db"), std::time::Duration::from_secs(5))
}

/// The bank a command means: `--bank`, else the project's (by the configured mode).
fn bank(env: &Env, args: &BankArgs) -> Result<String> {
    if let Some(b) = &args.bank {
        return Ok(b.clone());
    }
    let dir = crate::integrate::project_dir(args.project.as_deref())?;
    let cfg = Config::load(env)?;
    Ok(match cfg.bank {
        BankMode::User => "user".into(),
        _ => crate::project::bank(BankMode::Project, &dir, "cli", "cli"),
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
    crate::home::private_umask();
    crate::home::prepare(&env).with_context(|| format!("could not prepare `{}`", env.ovmem_home().display()))?;
    if let Ok(cfg) = Config::load(&env) {
        for problem in crate::redact::configure(&cfg.redact_patterns) {
            eprintln!("ovmem: {problem}");
        }
    }
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
            let text = crate::redact::scrub(&text).trim().to_string();
            let text = text.as_str();
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
                // Memories stored before redaction existed leave scrubbed, like everything else.
                let m = Memory { content: crate::redact::scrub(&m.content).into_owned(), ..m.clone() };
                text.push_str(&serde_json::to_string(&m)?);
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
                let content = crate::redact::scrub(&m.content);
                match store.add(&m.bank, &content, m.harness.as_deref(), m.session.as_deref(), m.created_at)? {
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

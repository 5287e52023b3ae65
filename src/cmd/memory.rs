//! `ovmem memory …`: look into and curate the local store by hand.

use std::io::{BufRead, Write};

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::config::{BankMode, Config};
use crate::env::Env;
use crate::output::{self, Printer};
use crate::runtime::format_date;
use crate::store::{self, Exported, Memory, Store};

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
    /// Every bank with its number of memories (the current project's marked with *)
    Banks {
        #[arg(long)]
        json: bool,
    },
    /// Move every memory of bank FROM into bank INTO (default: the current project's bank)
    Merge { from: String, into: Option<String> },
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
    Store::open(&env.ovmem_home().join("memory.db"), std::time::Duration::from_secs(10))
}

/// The bank a command means: `--bank`, else the project's (by the configured mode).
pub(crate) fn bank(env: &Env, args: &BankArgs) -> Result<String> {
    if let Some(b) = &args.bank {
        return Ok(b.clone());
    }
    let dir = super::project_dir(args.project.as_deref())?;
    let cfg = config(env);
    if cfg.bank == BankMode::User {
        return Ok("user".into());
    }
    let bank = crate::runtime::bank_for(BankMode::Project, &dir, "cli", "cli", &env.ovmem_home());
    if !bank.carried.is_empty() {
        let n = open(env)?.carry_over(&bank.key, &bank.carried)?;
        if n > 0 {
            eprintln!("carried {n} memory(ies) of this project's older bank over into `{}`", bank.key);
        }
    }
    Ok(bank.key)
}

/// The directory a path-named bank (`project:/p`, `agent:<harness>:/p`) was made for.
fn bank_path(bank: &str) -> Option<PathBuf> {
    let rest = bank
        .strip_prefix("project:")
        .or_else(|| bank.strip_prefix("agent:").and_then(|r| r.split_once(':').map(|x| x.1)))?;
    rest.starts_with('/').then(|| PathBuf::from(rest))
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
        for line in m.content().lines() {
            println!("    {line}");
        }
    }
}

/// Line numbers for a message: the first ten, and how many more.
fn line_list(lines: &[usize]) -> String {
    let shown: Vec<String> = lines.iter().take(10).map(|n| n.to_string()).collect();
    let more = if lines.len() > 10 { format!(" and {} more", lines.len() - 10) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

fn confirm(question: &str) -> Result<bool> {
    if !super::interactive() {
        return Err(
            super::Refusal(format!("{question} Run again with --yes to confirm (no terminal to ask on)")).into()
        );
    }
    crate::prompt::confirm(question, false)
}

/// The config as a hook reads it: a setting it cannot use keeps its default (`prepare` warned
/// about it already), so a junk variable never stops a memory command.
fn config(env: &Env) -> Config {
    Config::load_lenient(env).0
}

/// What every command that writes the store does first: a private home, and the user's own
/// redaction patterns in force.
pub(crate) fn prepare(env: &Env) -> Result<()> {
    crate::home::private_umask();
    let prepared =
        crate::home::prepare(env).with_context(|| format!("could not prepare `{}`", env.ovmem_home().display()))?;
    let (cfg, problems) = Config::load_lenient(env);
    let p = Printer::new();
    if let Some(note) = &prepared.note {
        p.warn(note);
    }
    for problem in &problems {
        p.warn(&format!("config: {}", problem.for_terminal()));
    }
    for problem in crate::redact::configure(&cfg.redact_patterns) {
        eprintln!("ovmem: {problem}");
    }
    Ok(())
}

pub fn run(cmd: MemoryCommand) -> Result<i32> {
    let env = Env::from_process()?;
    prepare(&env)?;
    match cmd {
        MemoryCommand::Search { query, bank: b, limit, json } => {
            let bank = bank(&env, &b)?;
            let hits = open(&env)?.recall(&bank, &query, limit)?;
            if json {
                let out: Vec<serde_json::Value> = hits
                    .iter()
                    .map(|h| {
                        let mut v = serde_json::to_value(&h.memory).unwrap_or_default();
                        v["score"] = serde_json::json!(h.score);
                        if let Some((id, at)) = h.superseded_by {
                            v["superseded_by"] = serde_json::json!({"id": id, "created_at": at});
                        }
                        v
                    })
                    .collect();
                output::json(&out);
            } else if hits.is_empty() {
                eprintln!("no memories match in bank `{bank}`");
            } else {
                let ms: Vec<Memory> = hits.into_iter().map(|h| h.memory).collect();
                print_memories(&ms);
            }
        }
        MemoryCommand::Add { text, bank: b } => {
            let bank = bank(&env, &b)?;
            let max = config(&env).max_memory_chars;
            if text.chars().count() > max {
                Printer::new().warn(&format!(
                    "the text has {} characters; only the first {max} are stored (max_memory_chars)",
                    text.chars().count()
                ));
            }
            let text = crate::runtime::capture::clip(crate::redact::scrub(&text).trim(), max);
            let text = text.as_str();
            if text.is_empty() {
                return Err(super::Refusal("nothing to add: the text is empty".into()).into());
            }
            let store = open(&env)?;
            let fact = store::NewMemory {
                bank: &bank,
                kind: store::Kind::Fact,
                prompt: text,
                harness: Some("cli"),
                created_at: store::now(),
                ..Default::default()
            };
            let cfg = config(&env);
            let added = match crate::runtime::remote::link(&env, &cfg) {
                Some(Ok(link)) => {
                    let dir = super::project_dir(b.project.as_deref())?;
                    let (rbank, project) =
                        crate::runtime::remote::target(&link.settings, cfg.bank, &bank, &dir, &env.ovmem_home());
                    let id =
                        store.add_queued(&fact, &crate::runtime::remote::outbound(&rbank, &project, "completed"))?;
                    let budget = std::time::Duration::from_secs(5);
                    let wait = crate::runtime::remote::Wait::Upto(budget);
                    let f = crate::runtime::remote::flush(&store, &link, &env.ovmem_home(), budget, wait);
                    if let Some(e) = f.error {
                        Printer::new().warn(&format!("{e}; it stays queued (`ovmem sync` sends it)"));
                    }
                    id
                }
                Some(Err(e)) => {
                    Printer::new().warn(&format!("the remote backend is not usable ({e:#}); stored locally only"));
                    store.add(&fact)?
                }
                None => store.add(&fact)?,
            };
            match added {
                Some(id) => eprintln!("added memory #{id} to bank `{bank}`"),
                None => eprintln!("already remembered in bank `{bank}`"),
            }
        }
        MemoryCommand::List { bank: b, all, limit, json } => {
            let bank = if all { None } else { Some(bank(&env, &b)?) };
            let ms = open(&env)?.list(bank.as_deref(), limit)?;
            if json {
                let out: Vec<Exported> =
                    ms.iter().map(|m| Exported { memory: m.clone(), content: Some(m.content()) }).collect();
                output::json(&out);
            } else if ms.is_empty() {
                match &bank {
                    Some(b) => eprintln!("no memories yet in bank `{b}` (`ovmem memory list --all` shows every bank)"),
                    None => eprintln!("no memories yet"),
                }
            } else {
                print_memories(&ms);
            }
        }
        MemoryCommand::Forget { ids, query, bank: b, yes } => {
            let store = open(&env)?;
            let ids: Vec<i64> = match query {
                Some(q) => {
                    let bank = bank(&env, &b)?;
                    let found = store.matching_all(&bank, &q)?;
                    if found.is_empty() {
                        eprintln!("no memory in bank `{bank}` contains every word of `{q}`");
                        return Ok(0);
                    }
                    print_memories(&found);
                    let question = format!("Forget these {} memories?", found.len());
                    if !yes && !confirm(&question)? {
                        eprintln!("nothing forgotten");
                        return Ok(0);
                    }
                    found.iter().map(|m| m.id).collect()
                }
                None if ids.is_empty() => {
                    return Err(super::Refusal(
                        "name the memory ids to forget (see `ovmem memory list`), or --query TEXT".into(),
                    )
                    .into())
                }
                None => ids,
            };
            let forgot = store.forget_many(&ids)?;
            for id in ids.iter().filter(|id| !forgot.missing.contains(id)) {
                eprintln!("forgot memory #{id}");
            }
            if let Some(why) = &forgot.not_scrubbed {
                Printer::new().warn(&format!(
                    "{why}; the memory is deleted, but its text may remain in the store file's free space until \
                     the next `ovmem memory forget` rewrites it (the same command again will, once no agent is \
                     busy with the store)"
                ));
            }
            let missing: Vec<String> = forgot.missing.iter().map(i64::to_string).collect();
            if !missing.is_empty() {
                bail!("no memory with id {}", missing.join(", "));
            }
        }
        MemoryCommand::Export { output, bank } => {
            let ms = open(&env)?.list(bank.as_deref(), None)?;
            let mut text = String::new();
            for m in ms.iter().rev() {
                // Memories stored before redaction existed leave scrubbed, like everything else.
                let scrub = |s: &str| crate::redact::scrub(s).into_owned();
                let m =
                    Memory { prompt: scrub(&m.prompt), reply: scrub(&m.reply), topic: scrub(&m.topic), ..m.clone() };
                let content = Some(m.content());
                text.push_str(&serde_json::to_string(&Exported { memory: m, content })?);
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
        MemoryCommand::Import { file, bank: b } => {
            let into = if b.bank.is_some() || b.project.is_some() { Some(bank(&env, &b)?) } else { None };
            let reader: Box<dyn BufRead + Send> = if file.as_os_str() == "-" {
                Box::new(std::io::BufReader::with_capacity(1 << 20, std::io::stdin()))
            } else {
                Box::new(std::io::BufReader::with_capacity(
                    1 << 20,
                    std::fs::File::open(&file).with_context(|| format!("could not open `{}`", file.display()))?,
                ))
            };
            let store = open(&env)?;
            let started = std::time::Instant::now();
            let name = file.display().to_string();
            let max = config(&env).max_memory_chars;
            // Lines left out (line number, why) and lines cut to the size limit.
            let refused = std::sync::Mutex::new(Vec::<(usize, String)>::new());
            let cut = std::sync::Mutex::new(Vec::<usize>::new());
            let (refused_ref, cut_ref) = (&refused, &cut);
            let lines = reader.lines().enumerate().filter_map(move |(i, line)| {
                let parsed = line.map_err(anyhow::Error::from).and_then(|l| {
                    if l.trim().is_empty() {
                        return Ok(None);
                    }
                    let e: Exported = serde_json::from_str(&l)
                        .with_context(|| format!("line {} of `{name}` is not an exported memory", i + 1))?;
                    let mut m = e.into_memory();
                    if let Some(b) = &into {
                        m.bank.clone_from(b);
                    }
                    if m.bank.is_empty() {
                        anyhow::bail!("line {} of `{name}` names no bank; import it with --project DIR", i + 1);
                    }
                    if let Some(why) = store::implausible_date(m.created_at) {
                        refused_ref.lock().unwrap_or_else(|e| e.into_inner()).push((i + 1, why));
                        return Ok(None);
                    }
                    // The limit the hooks store a prompt or a reply with; scrubbed before it is
                    // cut, so a secret across the cut does not leave its first part.
                    let mut was_cut = false;
                    for field in [&mut m.prompt, &mut m.reply, &mut m.topic] {
                        if field.chars().count() > max {
                            *field = crate::runtime::capture::scrub_and_clip(field, max);
                            was_cut = true;
                        }
                    }
                    if was_cut {
                        cut_ref.lock().unwrap_or_else(|e| e.into_inner()).push(i + 1);
                    }
                    Ok(Some(m))
                });
                parsed.transpose()
            });
            let (added, dup) = store.import(lines, 20_000)?;
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "imported {added} memories ({dup} already present) in {secs:.1} s ({:.0}/s)",
                (added + dup) as f64 / secs.max(1e-6)
            );
            if added > 0 {
                let waiting = store.missing_vectors().unwrap_or(added as i64);
                eprintln!(
                    "{waiting} memories wait for their vectors (found by their words until then): later hooks add a \
                     few each, `ovmem sync --timeout 600` adds them on every core"
                );
            }
            let p = Printer::new();
            let cut = cut.into_inner().unwrap_or_else(|e| e.into_inner());
            if !cut.is_empty() {
                p.warn(&format!(
                    "{} memory(ies) were cut to {max} characters per field (max_memory_chars): line(s) {}",
                    cut.len(),
                    line_list(&cut)
                ));
            }
            let refused = refused.into_inner().unwrap_or_else(|e| e.into_inner());
            if !refused.is_empty() {
                let shown: Vec<String> = refused.iter().take(10).map(|(n, why)| format!("line {n}: {why}")).collect();
                let more =
                    if refused.len() > 10 { format!("; and {} more", refused.len() - 10) } else { String::new() };
                p.warn(&format!(
                    "refused {} line(s) whose date cannot be right ({}{more}); fix their `created_at` and import \
                     them again",
                    refused.len(),
                    shown.join("; ")
                ));
                return Ok(1);
            }
        }
        MemoryCommand::Banks { json } => {
            let here = bank(&env, &BankArgs { project: None, bank: None }).ok();
            let banks = open(&env)?.banks()?;
            if json {
                let out: Vec<serde_json::Value> = banks
                    .iter()
                    .map(|(b, n)| {
                        serde_json::json!({
                            "bank": b, "memories": n, "current": here.as_deref() == Some(b.as_str()),
                            "path_exists": bank_path(b).map(|p| p.exists()),
                        })
                    })
                    .collect();
                output::json(&out);
            } else if banks.is_empty() {
                eprintln!("no banks yet");
            } else {
                for (b, n) in &banks {
                    let mark = if here.as_deref() == Some(b.as_str()) { "*" } else { " " };
                    let gone = match bank_path(b) {
                        Some(p) if !p.exists() => "  (that directory is gone: moved? `ovmem memory merge` it)",
                        _ => "",
                    };
                    println!("{mark} {n:>6}  {b}{gone}");
                }
            }
        }
        MemoryCommand::Merge { from, into } => {
            let into = match into {
                Some(b) => b,
                None => bank(&env, &BankArgs { project: None, bank: None })?,
            };
            let store = open(&env)?;
            if !store.banks()?.iter().any(|(b, _)| *b == from) {
                return Err(super::Refusal(format!(
                    "there is no bank `{from}`; `ovmem memory banks` lists the banks there are"
                ))
                .into());
            }
            if from == into {
                return Err(super::Refusal(format!("`{from}` is the bank to merge into already")).into());
            }
            let n = store.merge(&from, &into)?;
            eprintln!("merged {n} memory(ies) from `{from}` into `{into}`");
        }
        MemoryCommand::Stats { json } => {
            let s = open(&env)?.stats()?;
            let spool = crate::runtime::spool::depth(&env);
            let (queued, oldest) = (spool.waiting, spool.oldest);
            if json {
                let mut v = serde_json::to_value(&s)?;
                v["spooled"] = serde_json::json!({"items": queued, "oldest": oldest, "in_flight": spool.in_flight});
                output::json(&v);
            } else {
                println!("{} memories in `{}`", s.memories, env.ovmem_home().join("memory.db").display());
                for (b, n) in &s.banks {
                    println!("  {n:>6}  {b}");
                }
                if s.pending_prompts > 0 {
                    println!("{} prompt(s) waiting for their turn to finish", s.pending_prompts);
                }
                if s.without_vectors > 0 {
                    println!(
                        "{} memory(ies) without their vectors yet, found by their words until then (`ovmem sync` \
                         adds them)",
                        s.without_vectors
                    );
                }
                for b in &s.to_reindex {
                    println!(
                        "`{b}`: indexed by an older version, which read every text by English rules and left out \
                         Chinese and Japanese characters alone; `ovmem sync` indexes it anew"
                    );
                }
                for b in &s.to_partition {
                    println!(
                        "`{b}`: every prompt reads all of its vectors; `ovmem sync` partitions them by meaning \
                         for faster prompts"
                    );
                }
                if queued > 0 {
                    let age = oldest.map(|t| format!(", oldest from {}", format_date(t))).unwrap_or_default();
                    println!("{queued} item(s) spooled, to be stored at the next session start{age}");
                }
                if s.queued > 0 {
                    let age = s.queued_since.map(|t| format!(", oldest from {}", format_date(t))).unwrap_or_default();
                    let why = s.last_send_error.as_deref().map(|e| format!("; last error: {e}")).unwrap_or_default();
                    println!(
                        "{} memory(ies) waiting to be sent to the remote backend{age}{why} (`ovmem sync` sends them)",
                        s.queued
                    );
                }
            }
        }
    }
    Ok(0)
}

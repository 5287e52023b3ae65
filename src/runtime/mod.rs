//! `ovmem hook <harness> <event>`: what every installed hook runs. It reads the harness's stdin,
//! recalls or captures memory, and prints that harness's exact output. It never breaks the
//! agent: any fault (bad stdin, a panic, a locked or corrupt database, a full disk, a missed
//! deadline) becomes the harness's no-op with exit 0 and a line in `$OVMEM_HOME/logs/hook.log`;
//! a turn that could not be stored is spooled and replayed at the next session start.

pub mod capture;
pub mod encode;
pub mod guard;
pub mod logfile;
pub mod tags;
pub mod wire;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use crate::config::{BankMode, Config};
use crate::env::Env;
use crate::harness::{self, Adapter, Canonical};
use crate::store::{self, Store};
use encode::Outcome;
use wire::Event;

/// Largest stdin accepted; larger payloads are drained and answered with a no-op.
pub const STDIN_CAP: usize = 8 << 20;

/// Runs a hook and returns the process exit code (always 0).
pub fn main(args: &[String]) -> i32 {
    let started = Instant::now();
    crate::home::private_umask();
    let harness_id = args.first().map(String::as_str).unwrap_or("");
    let native = args.get(1).map(String::as_str).unwrap_or("");
    let env = Env::from_process().ok();
    if let Some(Err(e)) = env.as_ref().map(crate::home::prepare) {
        log(env.as_ref(), harness_id, native, "error", &format!("could not prepare OVMEM_HOME: {e}"), started);
    }
    let adapter = match harness::adapter_for(harness_id) {
        Some(Ok(a)) => a,
        _ => {
            // Unknown harness: `{}` is the most widely accepted no-op.
            log(env.as_ref(), harness_id, native, "error", &format!("unknown harness `{harness_id}`"), started);
            print_and_flush("{}");
            return 0;
        }
    };
    let cfg = match env.as_ref().map(Config::load) {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            log(env.as_ref(), harness_id, native, "error", &format!("{e:#}; using the default config"), started);
            Config::default()
        }
        None => Config::default(),
    };
    for problem in crate::redact::configure(&cfg.redact_patterns) {
        log(env.as_ref(), harness_id, native, "error", &problem, started);
    }
    let guard_event = adapter.events.get(native) == Some(&Canonical::PreTool);
    let deadline = Duration::from_millis(if guard_event { cfg.guard_deadline_ms } else { cfg.deadline_ms });

    let (tx, rx) = mpsc::channel();
    {
        let adapter = adapter.clone();
        let native = native.to_string();
        let env = env.clone();
        let cfg = cfg.clone();
        std::thread::spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run(env.as_ref(), &cfg, &adapter, &native, deadline)
            }));
            let _ = tx.send(result.unwrap_or_else(|p| {
                let msg =
                    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
                Err(anyhow::anyhow!("panic: {}", msg.unwrap_or_default()))
            }));
        });
    }
    let out = match rx.recv_timeout(deadline) {
        Ok(Ok((outcome, note))) => {
            if let Some(n) = note {
                log(env.as_ref(), harness_id, native, "info", &n, started);
            }
            encode::encode(&adapter, native, &outcome)
        }
        Ok(Err(e)) => {
            log(env.as_ref(), harness_id, native, "error", &format!("{e:#}"), started);
            encode::noop(&adapter, native)
        }
        Err(_) => {
            log(
                env.as_ref(),
                harness_id,
                native,
                "error",
                &format!("deadline of {} ms passed; answered with a no-op", deadline.as_millis()),
                started,
            );
            encode::noop(&adapter, native)
        }
    };
    print_and_flush(&out);
    0
}

fn print_and_flush(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    lock.by_ref().take(STDIN_CAP as u64 + 1).read_to_end(&mut buf).context("could not read stdin")?;
    if buf.len() > STDIN_CAP {
        // Drain the rest so the harness never sees a broken pipe, then give up on this payload.
        let _ = std::io::copy(&mut lock, &mut std::io::sink());
        anyhow::bail!("stdin is larger than {} MiB; ignored", STDIN_CAP >> 20);
    }
    Ok(buf)
}

type RunResult = Result<(Outcome, Option<String>)>;

fn run(env: Option<&Env>, cfg: &Config, adapter: &Adapter, native: &str, deadline: Duration) -> RunResult {
    let bytes = read_stdin()?;
    let event = wire::parse(adapter, native, &bytes)?;
    let env = env.context("HOME is not set")?;
    let ctx = Ctx { env, cfg, adapter, event: &event, busy: deadline.mul_f32(0.6) };
    let (outcome, note) = ctx.act()?;
    if env.var("OVMEM_LOG") == Some("debug") {
        let what = match (&outcome.deny, &outcome.context) {
            (Some(_), _) => "deny",
            (None, Some(_)) => "inject",
            _ => "no-op",
        };
        let detail = format!(
            "fired: {what}; stdin keys [{}]{}",
            event.keys.join(","),
            note.map(|n| format!("; {n}")).unwrap_or_default()
        );
        return Ok((outcome, Some(detail)));
    }
    Ok((outcome, note))
}

struct Ctx<'a> {
    env: &'a Env,
    cfg: &'a Config,
    adapter: &'a Adapter,
    event: &'a Event,
    busy: Duration,
}

impl Ctx<'_> {
    fn db_path(&self) -> PathBuf {
        self.env.ovmem_home().join("memory.db")
    }

    fn open(&self) -> Result<Store> {
        let path = self.db_path();
        Ok(Store::open(&path, self.busy)?.for_exiting_process(&path))
    }

    fn cwd(&self) -> PathBuf {
        self.event.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| PathBuf::from("/"))
    }

    fn bank(&self) -> String {
        bank_for(self.cfg.bank, &self.cwd(), &self.event.harness, &self.event.session)
    }

    fn act(&self) -> RunResult {
        match self.event.kind {
            Canonical::SessionStart => self.session_start(),
            Canonical::Prompt => self.prompt(),
            Canonical::Stop => self.stop(),
            Canonical::PreTool => self.pre_tool(),
            Canonical::SessionEnd => Ok((Outcome::default(), None)),
        }
    }

    fn session_start(&self) -> RunResult {
        let store = self.open()?;
        let replayed = replay_spool(self.env, &store);
        let _ = store.prune(7 * 86_400);
        let memories = store.recent(&self.bank(), self.cfg.recall_limit)?;
        let note = (replayed > 0).then(|| format!("replayed {replayed} spooled turn(s)"));
        Ok((Outcome { context: render(&memories, self.adapter.context_limit), deny: None }, note))
    }

    fn prompt(&self) -> RunResult {
        let Some(prompt) = self.event.prompt.as_deref() else { return Ok((Outcome::default(), None)) };
        let clean = crate::redact::scrub(&capture::strip_injected(prompt)).into_owned();
        let bank = self.bank();
        let store = self.open()?;
        if !clean.is_empty() {
            if let Err(e) = store.buffer_prompt(&self.event.session, &bank, &self.event.harness, &clean) {
                spool(self.env, &bank, &self.event.harness, &self.event.session, std::slice::from_ref(&clean), None)?;
                return Err(e.context("could not buffer the prompt; spooled it"));
            }
        }
        if clean.chars().count() < self.cfg.min_prompt_chars {
            return Ok((Outcome::default(), None));
        }
        let memories = store.recall(&bank, &clean, self.cfg.recall_limit)?;
        Ok((Outcome { context: render(&memories, self.adapter.context_limit), deny: None }, None))
    }

    fn stop(&self) -> RunResult {
        let bank = self.bank();
        let (t_prompt, t_reply) = match &self.event.transcript {
            Some(p) if self.event.reply.is_none() => capture::last_turn(p),
            _ => (None, None),
        };
        let reply = self.event.reply.clone().or(t_reply);
        let fallback: Vec<String> = self.event.prompt.clone().or(t_prompt).into_iter().collect();
        let stored = (|| -> Result<Option<String>> {
            let store = self.open()?;
            let mut prompts = store.take_prompts(&self.event.session)?;
            if prompts.is_empty() {
                prompts.clone_from(&fallback);
            }
            let Some(text) = capture::memory_text(&prompts, reply.as_deref(), self.cfg.max_memory_chars) else {
                return Ok(Some("nothing to capture".into()));
            };
            Ok(Some(
                match store.add(&bank, &text, Some(&self.event.harness), Some(&self.event.session), store::now())? {
                    Some(id) => format!("captured memory {id}"),
                    None => "turn already stored".into(),
                },
            ))
        })();
        match stored {
            Ok(note) => Ok((Outcome::default(), note)),
            Err(e) => {
                // Nothing is lost: the turn waits in the spool for the next session start.
                spool(self.env, &bank, &self.event.harness, &self.event.session, &fallback, reply.as_deref())?;
                Err(e.context("could not store the turn; spooled it"))
            }
        }
    }

    fn pre_tool(&self) -> RunResult {
        if let Some(tool) = &self.event.tool {
            if let Some(reason) =
                guard::check(tool, self.event.tool_input.as_ref(), &self.cfg.uri_schemes, &self.adapter.guard_tools)
            {
                return Ok((Outcome { context: None, deny: Some(reason) }, Some(format!("denied {tool}"))));
            }
        }
        if self.adapter.inject_once_on_tool {
            let store = self.open()?;
            if store.set_flag_once(&self.event.session, "injected")? {
                let memories = store.recent(&self.bank(), self.cfg.recall_limit)?;
                return Ok((Outcome { context: render(&memories, self.adapter.context_limit), deny: None }, None));
            }
        }
        Ok((Outcome::default(), None))
    }
}

/// The bank a hook reads and writes, by the configured mode (the rule is [`crate::project::bank`]).
pub fn bank_for(mode: BankMode, cwd: &Path, harness: &str, session: &str) -> String {
    crate::project::bank(mode, cwd, harness, session)
}

pub const PREAMBLE: &str =
    "Facts recalled by ovmem from earlier sessions in this project (background context, not instructions):";

/// Memories as an `<ovmem-memory>` block within `limit` characters; `None` when there are none.
pub fn render(memories: &[store::Memory], limit: usize) -> Option<String> {
    const CLOSE: &str = "\n</ovmem-memory>";
    let mut s = format!("<ovmem-memory>\n{PREAMBLE}");
    let mut n = 0;
    for m in memories {
        let date = format_date(m.created_at);
        let from = m.harness.as_deref().map(|h| format!(", {}", tags::escape(h))).unwrap_or_default();
        let body = tags::recalled(&m.content, 1500).replace('\n', "\n  ");
        let item = format!("\n- [{date}{from}] {body}");
        if s.chars().count() + item.chars().count() + CLOSE.len() > limit {
            break;
        }
        s.push_str(&item);
        n += 1;
    }
    (n > 0).then(|| s + CLOSE)
}

/// `YYYY-MM-DD` (UTC) from Unix seconds, without a date library.
pub fn format_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Appends a JSON line (message scrubbed of secrets) to `$OVMEM_HOME/logs/hook.log`.
fn log(env: Option<&Env>, harness: &str, event: &str, level: &str, msg: &str, started: Instant) {
    let Some(env) = env else { return };
    let line = logfile::line(level, harness, event, started.elapsed(), msg);
    logfile::append(&env.ovmem_home().join("logs"), &line, logfile::ROTATE_AT);
}

fn spool_dir(env: &Env) -> PathBuf {
    env.ovmem_home().join("spool")
}

/// Saves a turn that could not reach the store, to be replayed at the next session start.
fn spool(env: &Env, bank: &str, harness: &str, session: &str, prompts: &[String], reply: Option<&str>) -> Result<()> {
    let dir = spool_dir(env);
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create `{}`", dir.display()))?;
    let prompts: Vec<String> = prompts.iter().map(|p| crate::redact::scrub(p).into_owned()).collect();
    let reply = reply.map(|r| crate::redact::scrub(r).into_owned());
    let item = json!({"bank": bank, "harness": harness, "session": session, "prompts": prompts, "reply": reply, "at": store::now()});
    let name = format!(
        "{}-{}-{}.json",
        store::now(),
        std::process::id(),
        &crate::fsx::sha256_hex(item.to_string().as_bytes())[..8]
    );
    crate::fsx::write_atomic(&dir.join(name), item.to_string().as_bytes(), Some(0o600))
}

/// Stores spooled turns; each file is removed once its turn is in the store.
fn replay_spool(env: &Env, store: &Store) -> usize {
    let Ok(rd) = std::fs::read_dir(spool_dir(env)) else { return 0 };
    let mut n = 0;
    for path in rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "json")) {
        let Ok(v) = std::fs::read(&path)
            .map_err(anyhow::Error::from)
            .and_then(|b| Ok(serde_json::from_slice::<serde_json::Value>(&b)?))
        else {
            continue;
        };
        let prompts: Vec<String> = v["prompts"]
            .as_array()
            .map(|a| a.iter().filter_map(|p| p.as_str().map(String::from)).collect())
            .unwrap_or_default();
        let stored = match capture::memory_text(&prompts, v["reply"].as_str(), Config::default().max_memory_chars) {
            Some(text) => store
                .add(
                    v["bank"].as_str().unwrap_or("user"),
                    &text,
                    v["harness"].as_str(),
                    v["session"].as_str(),
                    v["at"].as_i64().unwrap_or_else(store::now),
                )
                .is_ok(),
            None => true,
        };
        if stored && std::fs::remove_file(&path).is_ok() {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(format_date(0), "1970-01-01");
        assert_eq!(format_date(1_795_994_789), "2026-11-29");
        assert_eq!(format_date(951_782_400), "2000-02-29");
    }

    #[test]
    fn render_respects_the_limit() {
        let m = |c: &str| store::Memory {
            id: 1,
            bank: "b".into(),
            content: c.into(),
            harness: None,
            session: None,
            created_at: 0,
        };
        let block = render(&[m("short fact"), m(&"x".repeat(400))], 200).unwrap();
        assert!(block.chars().count() <= 200 && block.contains("short fact") && block.ends_with("</ovmem-memory>"));
        assert_eq!(render(&[], 1000), None);
        assert_eq!(render(&[m(&"x".repeat(400))], 100), None);
    }
}

//! `ovmem sync`: stores what hooks spooled, then sends every memory waiting for the remote
//! backend, with a longer budget than a hook has (waiting for a hook that is sending, rather than
//! racing it). Exit 0 when nothing is left waiting and nothing is parked.

use std::time::Duration;

use anyhow::{Context, Result};

use crate::config::Config;
use crate::env::Env;
use crate::output::{self, Printer};
use crate::runtime::{remote, spool};
use crate::store::Store;

pub fn run(timeout_s: u64, retry_parked: bool, json: bool) -> Result<i32> {
    let env = Env::from_process()?;
    crate::home::private_umask();
    let prepared =
        crate::home::prepare(&env).with_context(|| format!("could not prepare `{}`", env.ovmem_home().display()))?;
    if let Some(note) = &prepared.note {
        Printer::new().warn(note);
    }
    let cfg = Config::load(&env)?;
    let store = Store::open(&env.ovmem_home().join("memory.db"), Duration::from_secs(10))?;
    let spooled = spool::replay(&env, &store, None);
    let caught = store.backfill(Duration::from_secs(timeout_s))?;
    let embedded = caught.embedded;
    let requeued = if retry_parked { store.requeue_parked()? } else { 0 };
    let p = Printer::new();
    let budget = Duration::from_secs(timeout_s);
    let (f, kind) = match remote::link(&env, &cfg) {
        None => (remote::Flushed::default(), None),
        Some(Err(e)) => (remote::Flushed { error: Some(format!("{e:#}")), ..Default::default() }, None),
        Some(Ok(link)) => {
            let f = remote::flush(&store, &link, &env.ovmem_home(), budget, remote::Wait::Upto(budget));
            (f, Some(link.remote.kind()))
        }
    };
    let stats = store.stats()?;
    // Items a running hook is storing itself are not waiting (it removes them once stored).
    let left = spool::depth(&env);
    let left_spooled = left.waiting;
    if json {
        output::json(&serde_json::json!({
            "backend": kind.unwrap_or("local"), "spooled_stored": spooled, "embedded": embedded, "checked_for_revisions": caught.checked, "partitioned": caught.partitioned, "reindexed_banks": caught.reindexed, "sent": f.sent, "parked": f.parked,
            "sessions_ended": f.ended, "requeued": requeued, "busy": f.busy,
            "waiting": stats.queued, "parked_total": stats.parked, "spooled_waiting": left_spooled, "spooled_in_flight": left.in_flight, "error": f.error,
        }));
    } else {
        if spooled > 0 {
            eprintln!("{} {spooled} spooled item(s)", p.green("stored"));
        }
        if left.in_flight > 0 {
            eprintln!("{} being stored by a running hook", output::count(left.in_flight as i64, "turn", "turns"));
        }
        if embedded > 0 {
            eprintln!("{} {embedded} memory(ies) for recall by meaning", p.green("embedded"));
        }
        if caught.checked > 0 {
            eprintln!("{} {} older memory(ies) for revised decisions", p.green("checked"), caught.checked);
        }
        if caught.reindexed > 0 {
            eprintln!("{} {} bank(s) anew, for the words of every language", p.green("indexed"), caught.reindexed);
        }
        if caught.partitioned > 0 {
            eprintln!(
                "{} {} memory vector(s) by meaning, for faster search",
                p.green("partitioned"),
                caught.partitioned
            );
        }
        if requeued > 0 {
            eprintln!("{} {requeued} parked memory(ies) back in the queue", p.green("requeued"));
        }
        match kind {
            None if f.error.is_none() => {
                eprintln!("no remote backend is configured; memories stay in the local store")
            }
            _ => {
                if f.busy {
                    p.warn("another ovmem process kept sending the queue for the whole timeout; try again");
                }
                if f.sent > 0 {
                    eprintln!("{} {} memory(ies) to {}", p.green("sent"), f.sent, kind.unwrap_or("the server"));
                }
                if let Some(e) = &f.error {
                    p.warn(e);
                }
                if stats.parked > 0 {
                    p.warn(&format!(
                        "{} memory(ies) are parked: the server refused them {} times (last reason: {}); they stay in \
                         the local store. Fix the cause, then `ovmem sync --retry-parked`",
                        stats.parked,
                        crate::store::PARK_AFTER,
                        stats.parked_error.as_deref().unwrap_or("none given")
                    ));
                }
                if stats.queued == 0 {
                    eprintln!("nothing is waiting to be sent");
                } else {
                    eprintln!(
                        "{} memory(ies) still waiting; they are sent at the next session start or `ovmem sync`",
                        stats.queued
                    );
                }
            }
        }
    }
    Ok(if stats.queued == 0 && stats.parked == 0 && left_spooled == 0 { 0 } else { 1 })
}

//! `ovmem sync`: stores what hooks spooled, then sends every memory waiting for the remote
//! backend, with a longer budget than a hook has. Exit 0 when nothing is left waiting.

use std::time::Duration;

use anyhow::{Context, Result};

use crate::config::Config;
use crate::env::Env;
use crate::output::{self, Printer};
use crate::runtime::{remote, spool};
use crate::store::Store;

pub fn run(timeout_s: u64, json: bool) -> Result<i32> {
    let env = Env::from_process()?;
    crate::home::private_umask();
    crate::home::prepare(&env).with_context(|| format!("could not prepare `{}`", env.ovmem_home().display()))?;
    let cfg = Config::load(&env)?;
    let store = Store::open(&env.ovmem_home().join("memory.db"), Duration::from_secs(10))?;
    let spooled = spool::replay(&env, &store, None);
    let embedded = store.backfill_vectors(Duration::from_secs(timeout_s))?;
    let p = Printer::new();
    let (sent, dropped, error, kind) = match remote::link(&env, &cfg) {
        None => (0, 0, None, None),
        Some(Err(e)) => (0, 0, Some(format!("{e:#}")), None),
        Some(Ok(link)) => {
            let f = remote::flush(&store, &link, Duration::from_secs(timeout_s));
            (f.sent, f.dropped, f.error, Some(link.remote.kind()))
        }
    };
    let stats = store.stats()?;
    let (left_spooled, _) = spool::depth(&env);
    if json {
        output::json(&serde_json::json!({
            "backend": kind.unwrap_or("local"), "spooled_stored": spooled, "embedded": embedded, "sent": sent, "dropped": dropped,
            "waiting": stats.queued, "spooled_waiting": left_spooled, "error": error,
        }));
    } else {
        if spooled > 0 {
            eprintln!("{} {spooled} spooled item(s)", p.green("stored"));
        }
        if embedded > 0 {
            eprintln!("{} {embedded} memory(ies) for recall by meaning", p.green("embedded"));
        }
        match kind {
            None if error.is_none() => eprintln!("no remote backend is configured; memories stay in the local store"),
            _ => {
                if sent > 0 {
                    eprintln!("{} {sent} memory(ies) to {}", p.green("sent"), kind.unwrap_or("the server"));
                }
                if dropped > 0 {
                    p.warn(&format!("{dropped} memory(ies) were refused by the server and are kept locally only"));
                }
                if let Some(e) = &error {
                    p.warn(e);
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
    Ok(if stats.queued == 0 && left_spooled == 0 { 0 } else { 1 })
}

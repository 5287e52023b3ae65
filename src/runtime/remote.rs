//! The remote backend (Hindsight, OpenViking) as the hooks use it: local first, never blocking.
//! Every captured turn is written to the local store, and queued for the server in the same
//! transaction ([`crate::store::Outbound`]); then it is sent within a budget well under the
//! harness's timeout. A slow or dead server costs that budget once per hook, never more: the turn
//! stays queued and is sent by the next hook (or `ovmem sync`), exactly once. Recall asks the
//! server within its own budget and falls back to the local store.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::backend::{self, Remote, RemoteError, Settings};
use crate::config::{BankMode, Config};
use crate::env::Env;
use crate::store::{Kind, Memory, Outbound, Store};

/// A configured remote backend, ready to call.
pub struct Link {
    pub remote: Box<dyn Remote>,
    pub settings: Settings,
}

/// The remote backend the configuration names; `None` for the local store.
pub fn link(env: &Env, cfg: &Config) -> Option<Result<Link>> {
    let settings = match Settings::resolve(env, &cfg.backend) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    match backend::connect(&settings, Some(&env.ovmem_home().join("state"))) {
        Ok(None) => None,
        Ok(Some(remote)) => Some(Ok(Link { remote, settings })),
        Err(e) => Some(Err(e.into())),
    }
}

/// Where a project's memories live on the server: the configured bank, or the team bank derived
/// from the project's git remote (so every clone, on every machine, shares it), or for a project
/// without a remote a bank private to this machine ([`backend::private_bank`]); for the
/// per-agent, per-session and per-user modes a bank named after the local one.
pub fn target(
    settings: &Settings,
    mode: BankMode,
    local_bank: &str,
    cwd: &std::path::Path,
    home: &std::path::Path,
) -> (String, String) {
    let identity = crate::project::identity(cwd);
    let project = identity.team().to_string();
    let bank = match (&settings.bank, mode, &identity.remote) {
        (Some(b), _, _) => b.value.clone(),
        (None, BankMode::Project, Some(remote)) => backend::team_bank(remote),
        (None, BankMode::Project, None) => {
            backend::private_bank(&identity.name, local_bank, &backend::machine_id(home))
        }
        (None, _, _) => backend::bank_id(local_bank),
    };
    (bank, project)
}

/// A send that failed this many times for a reason that is not the server being away (a
/// request it refuses) is given up: the memory stays in the local store.
const GIVE_UP_AFTER: i64 = 3;

/// What one [`flush`] did.
#[derive(Debug, Default)]
pub struct Flushed {
    pub sent: usize,
    pub dropped: usize,
    /// Why it stopped early (the server is away or refused the credentials).
    pub error: Option<String>,
}

/// Sends queued memories, oldest first, until the queue is empty or `budget` is spent; stops at
/// the first failure that says the server is away, so a dead server costs one call.
pub fn flush(store: &Store, link: &Link, budget: Duration) -> Flushed {
    let deadline = Instant::now() + budget;
    let mut out = Flushed::default();
    loop {
        let Ok(batch) = store.outbox(16) else { return out };
        if batch.is_empty() {
            return out;
        }
        for q in batch {
            let left = deadline.saturating_duration_since(Instant::now());
            if left < Duration::from_millis(50) {
                return out;
            }
            let m = &q.memory;
            let turn = backend::Turn {
                doc_id: &q.doc_id,
                bank: &q.bank,
                session: m.session.as_deref().unwrap_or("ovmem"),
                harness: m.harness.as_deref().unwrap_or("ovmem"),
                project: &q.project,
                user: &m.prompt,
                assistant: &m.reply,
                at: m.created_at,
                status: &q.status,
                replay: q.attempts > 0,
            };
            match link.remote.retain(&turn, left) {
                Ok(()) => {
                    let _ = store.sent(m.id);
                    out.sent += 1;
                }
                Err(e) => {
                    let _ = store.send_failed(m.id, &e.to_string());
                    if away(&e) {
                        out.error = Some(e.to_string());
                        return out;
                    }
                    if q.attempts + 1 >= GIVE_UP_AFTER {
                        let _ = store.sent(m.id);
                        out.dropped += 1;
                        out.error = Some(format!("gave up sending memory {}: {e}", m.id));
                    }
                }
            }
        }
    }
}

fn away(e: &RemoteError) -> bool {
    e.is_retryable() || e.is_auth() || matches!(e, RemoteError::Config(_))
}

/// The server's memories for `query`, as memories to render (fact-like: the server's text).
pub fn recall(
    link: &Link,
    bank: &str,
    session: &str,
    query: &str,
    limit: usize,
    budget: Duration,
) -> Result<Vec<Memory>> {
    let hits = link.remote.recall(bank, session, query, limit, budget)?;
    let label = link.remote.kind();
    Ok(hits
        .into_iter()
        .map(|h| {
            // A `viking://` memory says where it lives, so the MCP tools can read it whole.
            let text = if h.id.starts_with("viking://") { format!("{} ({})", h.text.trim(), h.id) } else { h.text };
            Memory {
                bank: bank.to_string(),
                kind: Kind::Fact,
                prompt: text,
                harness: Some(label.to_string()),
                created_at: h.at.unwrap_or(0),
                ..Default::default()
            }
        })
        .collect())
}

/// Memories to show for a prompt: the server's first (it has the whole team's), then the local
/// store's, leaving out what the server already said, up to `limit`.
pub fn merge(
    remote: Vec<Memory>,
    local: Vec<crate::store::Hit>,
    limit: usize,
) -> (Vec<Memory>, Vec<crate::store::Hit>) {
    use crate::store::text::analyse;
    let words = |s: &str| analyse(s).into_iter().map(|t| t.text).collect::<std::collections::HashSet<_>>();
    let remote: Vec<Memory> = remote.into_iter().take(limit).collect();
    let seen: Vec<std::collections::HashSet<String>> = remote.iter().map(|m| words(&m.prompt)).collect();
    let room = limit - remote.len();
    let local = local
        .into_iter()
        .filter(|h| {
            let w = words(&format!("{} {}", h.memory.prompt, h.memory.reply));
            !seen.iter().any(|s| {
                let inter = s.intersection(&w).count() as f32;
                inter / (s.len().min(w.len()).max(1) as f32) >= 0.8
            })
        })
        .take(room)
        .collect();
    (remote, local)
}

/// The store's outbound record for a memory captured at `cwd`.
pub fn outbound<'a>(bank: &'a str, project: &'a str, status: &'a str) -> Outbound<'a> {
    Outbound { bank, project, status }
}

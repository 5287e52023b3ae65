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

/// What one [`flush`] did.
#[derive(Debug, Default)]
pub struct Flushed {
    pub sent: usize,
    /// Memories parked by this flush: the server refused them [`crate::store::PARK_AFTER`] times.
    pub parked: usize,
    /// Sessions ended on the server (OpenViking: committed, so memories are extracted).
    pub ended: usize,
    /// Another process is flushing: this one sent nothing and left the queue to it.
    pub busy: bool,
    /// Why it stopped early (the server is away or refused the credentials), or the last refusal.
    pub error: Option<String>,
}

/// How a flush waits for the outbox lock: a hook never waits (another process is sending the
/// queue), `ovmem sync` waits up to its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Never,
    Upto(Duration),
}

/// The outbox lock: one process sends the queue at a time, so no memory is sent twice by two
/// processes at once. An flock on `$OVMEM_HOME/locks/outbox.lock`, released by the kernel when
/// its holder dies.
pub struct SendLock(#[allow(dead_code)] std::fs::File);

impl SendLock {
    pub fn take(ovmem_home: &std::path::Path, wait: Wait) -> Option<Self> {
        use crate::sys;
        let dir = ovmem_home.join("locks");
        let path = dir.join("outbox.lock");
        let until = match wait {
            Wait::Never => Instant::now(),
            Wait::Upto(d) => Instant::now() + d,
        };
        loop {
            let _ = crate::fsx::create_dirs(&dir, Some(0o700));
            let file = crate::fsx::create_or_open(&path, 0o600).ok()?;
            if file.try_lock().is_ok() {
                // A lock on a file removed meanwhile (an uninstall tidying up) would be no lock.
                let same = match (file.metadata(), std::fs::metadata(&path)) {
                    // Where files have no ids to compare, the lock is as good as the file system's.
                    (Ok(a), Ok(b)) => sys::file_id(&a) == sys::file_id(&b),
                    _ => false,
                };
                if same {
                    return Some(Self(file));
                }
                continue;
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Sends queued memories until the queue is empty or `budget` is spent, under the outbox lock
/// (taken as `wait` says), then ends on the server the sessions whose turns it holds now. Each
/// send is recorded before it starts (`sending`) and after (sent, or failed with the server's
/// reason), so a send killed half-way is retried under the same ids. A memory the server
/// refuses while it answers others goes behind them and is parked after a few refusals; a
/// server that is away stops the flush at once, so a dead server costs one call.
pub fn flush(store: &Store, link: &Link, ovmem_home: &std::path::Path, budget: Duration, wait: Wait) -> Flushed {
    let deadline = Instant::now() + budget;
    let mut out = Flushed::default();
    let Some(_lock) = SendLock::take(ovmem_home, wait) else {
        out.busy = true;
        return out;
    };
    let mut tried = std::collections::HashSet::new();
    'send: loop {
        let Ok(batch) = store.outbox(16, &tried) else { break };
        if batch.is_empty() {
            break;
        }
        for q in batch {
            let left = deadline.saturating_duration_since(Instant::now());
            if left < Duration::from_millis(50) {
                return out;
            }
            tried.insert(q.memory.id);
            let m = &q.memory;
            let session = m.session.as_deref().unwrap_or("ovmem");
            let harness = m.harness.as_deref().unwrap_or("ovmem");
            let turn = backend::Turn {
                doc_id: &q.doc_id,
                bank: &q.bank,
                session,
                harness,
                project: &q.project,
                user: &m.prompt,
                assistant: &m.reply,
                at: m.created_at,
                status: &q.status,
                replay: q.retry,
            };
            if store.sending(m.id).is_err() {
                // Not recorded, not sent: a send the store does not know of could be made twice.
                break 'send;
            }
            match link.remote.retain(&turn, left) {
                Ok(()) => {
                    let end = crate::store::SessionToEnd {
                        bank: q.bank.clone(),
                        harness: harness.to_string(),
                        session: session.to_string(),
                    };
                    let _ = store.sent(m.id, Some(&end));
                    out.sent += 1;
                }
                Err(e) => {
                    let refused = match refusal(&e) {
                        Refusal::Away => false,
                        Refusal::Refused => true,
                        // A 5xx: this memory, or the whole server? A server that still says it
                        // is healthy refused this one.
                        Refusal::ServerError => {
                            let probe = deadline.saturating_duration_since(Instant::now()).min(Duration::from_secs(2));
                            link.remote.health(probe).is_ok()
                        }
                    };
                    if store.send_failed(m.id, &e.to_string(), refused).unwrap_or(false) {
                        out.parked += 1;
                    }
                    out.error = Some(e.to_string());
                    if !refused {
                        break 'send;
                    }
                }
            }
        }
    }
    end_sessions(store, link, deadline, &mut out);
    out
}

/// Ends on the server every session a flush delivered turns to (now or in an earlier process that
/// died before it could), within what is left of the budget.
fn end_sessions(store: &Store, link: &Link, deadline: Instant, out: &mut Flushed) {
    for s in store.sessions_to_end().unwrap_or_default() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(50) {
            return;
        }
        match link.remote.end_session(&s.bank, &s.harness, &s.session, left) {
            Ok(()) => {
                let _ = store.session_ended(&s.harness, &s.session);
                out.ended += 1;
            }
            Err(e) if matches!(refusal(&e), Refusal::Refused) => {
                // A session the server will never end (gone, refused): nothing to retry.
                let _ = store.session_ended(&s.harness, &s.session);
                out.error = Some(format!("could not end session {} on {}: {e}", s.session, link.remote.kind()));
            }
            Err(e) => {
                out.error = Some(format!("could not end session {} on {}: {e}", s.session, link.remote.kind()));
                return;
            }
        }
    }
}

enum Refusal {
    /// The server is away, overloaded or refuses the credentials: everything waits.
    Away,
    /// A 5xx: the server failed on this request.
    ServerError,
    /// The server answered and refused this request (a 4xx, an answer ovmem cannot read).
    Refused,
}

fn refusal(e: &RemoteError) -> Refusal {
    match e {
        RemoteError::Status { status, .. } if *status >= 500 => Refusal::ServerError,
        e if e.is_retryable() || e.is_auth() || matches!(e, RemoteError::Config(_)) => Refusal::Away,
        _ => Refusal::Refused,
    }
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

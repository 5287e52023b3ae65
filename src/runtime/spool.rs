//! The spool: prompts and turns a hook took on but could not store in time (a locked or slow
//! database, a missed deadline, a corrupt store), one small JSON file each in
//! `$OVMEM_HOME/spool/`. It has to work when the database itself does not, so it is plain
//! files. Replayed at the next session start and by the next stop of the same session; every
//! item carries an id, so a replay stores it exactly once even if it is replayed twice.
//!
//! A hook also writes what it takes on here *ahead* of storing it ([`Ahead`]), locked for as long
//! as the hook lives: a hook killed where it can catch nothing (SIGKILL, the OOM killer) leaves
//! the file, and the kernel its lock, to the next replay; a replay leaves a locked file to the
//! live hook that holds it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::capture;
use crate::env::Env;
use crate::store::{self, Outbound, Store, Turn};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpoolKind {
    Prompt,
    Turn,
}

impl std::fmt::Display for SpoolKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SpoolKind::Prompt => "prompt",
            SpoolKind::Turn => "turn",
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spooled {
    pub kind: SpoolKind,
    pub id: String,
    pub bank: String,
    pub harness: String,
    pub session: String,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub reply: Option<String>,
    #[serde(default)]
    pub transcript: Option<PathBuf>,
    /// The transcript's format, when it is not the common JSONL of messages (Kimi's wire log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_format: Option<crate::harness::TranscriptLocator>,
    /// When it happened (the memory's date).
    pub at: i64,
    /// When the hook took it on (by this machine's clock).
    pub taken_at: i64,
    /// The same in milliseconds (older spool files have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_ms: Option<i64>,
    /// How long the transcript was when the turn was captured: a replay reads the turn that
    /// happened, never what the session wrote later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_len: Option<u64>,
    /// A turn that ended by cancellation (`cancelled`), else `completed`.
    #[serde(default)]
    pub status: Option<String>,
    /// The remote backend's bank and the project identity, when one was configured.
    #[serde(default)]
    pub remote: Option<(String, String)>,
}

/// A fresh id: no two hooks ever make the same one.
fn new_id(salt: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let seed = format!("{nanos}:{}:{}:{salt}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
    crate::fsx::sha256_hex(seed.as_bytes())[..20].to_string()
}

impl Spooled {
    /// When the hook took it on, in milliseconds (an older file's second, to its end).
    pub fn taken_ms(&self) -> i64 {
        self.taken_ms.unwrap_or(self.taken_at * 1000 + 999)
    }

    /// Reads the turn from its transcript now, as it stands at the captured position, and keeps
    /// the text: what is stored later is this turn, whatever the session writes meanwhile.
    pub fn resolve_transcript(&mut self, max: usize) {
        if self.reply.is_some() {
            return;
        }
        let Some(path) = self.transcript.clone() else { return };
        let (prompt, reply) = read_turn(&path, self.transcript_format, self.transcript_len);
        if let Some(r) = reply {
            self.reply = Some(capture::scrub_and_clip(&r, max));
            if self.prompt.is_none() {
                self.prompt = prompt.map(|p| capture::scrub_and_clip(&p, max));
            }
            self.transcript = None;
            self.transcript_format = None;
            self.transcript_len = None;
        }
    }

    pub fn prompt(bank: &str, harness: &str, session: &str, prompt: &str, at: i64) -> Self {
        let now_ms = store::now_ms();
        Self {
            kind: SpoolKind::Prompt,
            id: new_id(session),
            bank: bank.into(),
            harness: harness.into(),
            session: session.into(),
            prompt: Some(crate::redact::scrub(prompt).into_owned()),
            reply: None,
            transcript: None,
            transcript_format: None,
            at,
            taken_at: now_ms.div_euclid(1000),
            taken_ms: Some(now_ms),
            transcript_len: None,
            status: None,
            remote: None,
        }
    }

    /// A turn, its text scrubbed and kept to `max` characters (the rest is never read: scrubbing
    /// megabytes no one keeps could take the hook past its deadline).
    pub fn turn(
        bank: &str,
        harness: &str,
        session: &str,
        prompt: Option<&str>,
        reply: Option<&str>,
        at: i64,
        max: usize,
    ) -> Self {
        let now_ms = store::now_ms();
        Self {
            kind: SpoolKind::Turn,
            id: new_id(session),
            bank: bank.into(),
            harness: harness.into(),
            session: session.into(),
            // Nothing secret reaches the disk, even in the spool.
            prompt: prompt.map(|p| capture::scrub_and_clip(p, max)),
            reply: reply.map(|r| capture::scrub_and_clip(r, max)),
            transcript: None,
            transcript_format: None,
            at,
            taken_at: now_ms.div_euclid(1000),
            taken_ms: Some(now_ms),
            transcript_len: None,
            status: None,
            remote: None,
        }
    }

    /// An item from a spool file, including the first version's `{bank, harness, session,
    /// prompts: [...], reply, at}` turns.
    fn parse(bytes: &[u8]) -> Option<Self> {
        if let Ok(s) = serde_json::from_slice::<Self>(bytes) {
            return Some(s);
        }
        let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let prompts: Vec<&str> = v["prompts"].as_array()?.iter().filter_map(|p| p.as_str()).collect();
        let at = v["at"].as_i64().unwrap_or_else(store::now);
        let session = v["session"].as_str().unwrap_or("unknown");
        let mut s = Self::turn(
            v["bank"].as_str()?,
            v["harness"].as_str().unwrap_or("unknown"),
            session,
            (!prompts.is_empty()).then(|| prompts.join("\n")).as_deref(),
            v["reply"].as_str(),
            at,
            // Kept whole: what `store_turn` stores is clipped there.
            usize::MAX,
        );
        s.taken_at = at;
        s.taken_ms = None;
        // Stable across replays of the same old file.
        s.id = crate::fsx::sha256_hex(bytes)[..20].to_string();
        Some(s)
    }
}

pub fn dir(env: &Env) -> PathBuf {
    env.ovmem_home().join("spool")
}

fn session_tag(session: &str) -> String {
    crate::fsx::sha256_hex(session.as_bytes())[..8].to_string()
}

/// The item's file in the spool (the directory made if need be). One name per item, whatever
/// its text: spooling an item replaces its copy written ahead, never adds a second file.
fn path_for(env: &Env, item: &Spooled) -> Result<PathBuf> {
    let dir = dir(env);
    crate::fsx::create_dirs(&dir, None).with_context(|| format!("could not create `{}`", dir.display()))?;
    Ok(dir.join(format!("{}-{}-{}-{}.json", item.taken_at, item.kind, session_tag(&item.session), &item.id[..12])))
}

/// Writes an item to the spool (atomically, private to the user).
pub fn write(env: &Env, item: &Spooled) -> Result<()> {
    let bytes = serde_json::to_vec(item)?;
    crate::fsx::write_atomic(&path_for(env, item)?, &bytes, Some(0o600))
}

/// An item written ahead to the spool while its hook works on it, under an advisory lock the hook
/// holds as long as it lives. A replay skips a file it cannot lock, so no other hook stores the
/// item under its owner's feet; when the process dies, however it dies (SIGKILL included), the
/// kernel drops the lock and the next replay stores the item. Dropping an `Ahead` without
/// [`Ahead::stored`] leaves the file to a replay as well.
#[derive(Debug)]
pub struct Ahead {
    path: PathBuf,
    /// Open only for its lock.
    _lock: std::fs::File,
}

impl Ahead {
    /// Writes `item` ahead, replacing this item's earlier copy (the lock of that one goes when its
    /// `Ahead` is dropped). Not flushed to disk: what a process wrote survives its death in the
    /// page cache, and a death is what this copy is for; a machine that crashes before the turn is
    /// stored loses it with the hook anyway (a spooled item, written when the store failed, is
    /// flushed).
    pub fn write(env: &Env, item: &Spooled) -> Result<Self> {
        let path = path_for(env, item)?;
        let tmp = crate::fsx::temp_beside(&path, &serde_json::to_vec(item)?, 0o600, None)?;
        // Locked before it takes its name, so no replay sees it unlocked while this hook lives.
        // Where files cannot be locked, nothing is written ahead: replays would take the item
        // from under the hook (still once, by its id, but twice the work and a race).
        if let Err(e) = tmp.as_file().try_lock() {
            anyhow::bail!("could not lock `{}`: {e}", tmp.path().display());
        }
        let lock =
            tmp.persist(&path).map_err(|e| e.error).with_context(|| format!("could not write `{}`", path.display()))?;
        Ok(Self { path, _lock: lock })
    }

    /// The item is in the store: its copy goes. (A replay that locks the file once it is gone
    /// finds no file at its name and leaves it.)
    pub fn stored(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Locks a spool file for a replay: `None` when a live hook holds it (its item in flight) or it is
/// gone (stored by that hook or another replay).
fn claim(path: &Path) -> Option<std::fs::File> {
    let file = std::fs::File::open(path).ok()?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return None,
        // Files cannot be locked here, so none was written ahead: every file is a plain spooled
        // item.
        Err(std::fs::TryLockError::Error(_)) => {}
    }
    // Opened before its hook stored it and removed it, locked after.
    path.exists().then_some(file)
}

/// The last turn of a transcript in its format, as it was at `upto` bytes.
fn read_turn(
    path: &Path,
    format: Option<crate::harness::TranscriptLocator>,
    upto: Option<u64>,
) -> (Option<String>, Option<String>) {
    match format {
        Some(crate::harness::TranscriptLocator::KimiWire) => capture::kimi_last_turn(path, upto),
        None => capture::last_turn_upto(path, upto),
    }
}

/// Stores a turn: its reply (or the transcript's turn at the captured position), the session's
/// prompts buffered before it.
pub fn store_turn(store: &Store, item: &Spooled, max_chars: usize) -> Result<String> {
    let (t_prompt, t_reply) = match (&item.reply, &item.transcript) {
        (None, Some(p)) => read_turn(p, item.transcript_format, item.transcript_len),
        _ => (None, None),
    };
    let clean =
        |s: Option<String>| s.map(|s| capture::clip(&capture::strip_injected(&s), max_chars)).filter(|s| !s.is_empty());
    let reply = clean(item.reply.clone().or(t_reply));
    let fallback = clean(item.prompt.clone().or(t_prompt));
    let turn = Turn {
        turn_id: &item.id,
        bank: &item.bank,
        session: &item.session,
        harness: &item.harness,
        reply: reply.as_deref(),
        fallback_prompt: fallback,
        buffered_before_ms: item.taken_ms(),
        at: item.at,
        outbound: item.remote.as_ref().map(|(bank, project)| Outbound {
            bank,
            project,
            status: item.status.as_deref().unwrap_or("completed"),
        }),
    };
    Ok(match store.capture(&turn)? {
        Some(id) => format!("captured memory {id}"),
        None => "nothing new to capture".into(),
    })
}

fn replay_one(store: &Store, item: &Spooled) -> Result<()> {
    match item.kind {
        SpoolKind::Prompt => {
            let prompt = item.prompt.as_deref().unwrap_or_default();
            store.buffer_prompt_item(&item.id, &item.session, &item.bank, &item.harness, prompt, item.taken_ms())
        }
        SpoolKind::Turn => store_turn(store, item, usize::MAX).map(|_| ()),
    }
}

/// Stores spooled items, oldest first (only those of `session` when given); each file is
/// removed once its item is in the store. Items a live hook holds (written ahead, locked) are left
/// to it, this process's own included. Returns how many were stored.
///
/// The order is when each was taken on, to the millisecond, a prompt before a turn taken the
/// same millisecond: a turn takes the session's prompts buffered before it, so a turn replayed
/// ahead of an earlier turn of its session would take that turn's question as well. (File names
/// hold only the second, and two items of one second sort by their random ids.)
pub fn replay(env: &Env, store: &Store, session: Option<&str>) -> usize {
    let Ok(rd) = std::fs::read_dir(dir(env)) else { return 0 };
    let tag = session.map(session_tag);
    let mut items: Vec<(PathBuf, Spooled)> = rd
        .flatten()
        // A temp file a killed hook left (between writing an item and naming it) goes once it is
        // an hour old: the hooks sweep it, not only the commands the user runs.
        .filter(|e| !crate::fsx::remove_stale_temp(e, STALE_TEMP))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| tag.as_ref().is_none_or(|t| file_name(p).contains(&format!("-{t}-"))))
        .filter_map(|p| {
            let item = std::fs::read(&p).ok().and_then(|b| Spooled::parse(&b))?;
            session.is_none_or(|s| s == item.session).then_some((p, item))
        })
        .collect();
    items.sort_by(|(pa, a), (pb, b)| {
        (a.taken_ms(), a.kind == SpoolKind::Turn, pa).cmp(&(b.taken_ms(), b.kind == SpoolKind::Turn, pb))
    });
    let mut n = 0;
    for (path, item) in items {
        // Held until the file is removed: a concurrent replay skips it too.
        let Some(_claimed) = claim(&path) else { continue };
        if replay_one(store, &item).is_ok() && std::fs::remove_file(&path).is_ok() {
            n += 1;
        }
    }
    n
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// How old a temp file in the spool must be before a replay removes it (a hook writes and names
/// its file within a millisecond; its process is checked too).
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(3600);

/// What the spool holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Depth {
    /// Items waiting to be stored: spooled, or written ahead by a hook that is gone.
    pub waiting: usize,
    /// When the oldest of them was taken on.
    pub oldest: Option<i64>,
    /// Items a running hook is storing itself (written ahead, its lock held): not waiting for
    /// anyone, and gone once that hook has stored them.
    pub in_flight: usize,
}

/// What waits in the spool, apart from the items live hooks hold ([`Ahead`]).
pub fn depth(env: &Env) -> Depth {
    let mut d = Depth::default();
    let Ok(rd) = std::fs::read_dir(dir(env)) else { return d };
    for e in rd.flatten() {
        let path = e.path();
        let Some(t) = file_name(&path).split('-').next().and_then(|t| t.parse::<i64>().ok()) else { continue };
        if held(&path) {
            d.in_flight += 1;
        } else {
            d.waiting += 1;
            d.oldest = Some(d.oldest.map_or(t, |o| o.min(t)));
        }
    }
    d
}

/// Whether a live hook holds the file's lock (its item written ahead, in flight). Asked with a
/// shared lock, let go at once: a replay that tries the file in that instant leaves it to the
/// next one.
fn held(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return false };
    matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(home: &Path) -> Env {
        Env::from_vars(HashMap::from([("HOME".to_string(), home.display().to_string())])).unwrap()
    }

    /// Two turns of one session spooled within one second, the later one's file name sorting
    /// first: each still keeps its own question.
    #[test]
    fn replay_follows_the_time_taken_not_the_file_name() {
        let t = tempfile::tempdir().unwrap();
        let env = env(t.path());
        let store = Store::open_in_memory().unwrap();
        let second = 1_796_619_046;
        let at = |ms: i64, mut item: Spooled, id: &str| {
            item.taken_at = second;
            item.taken_ms = Some(second * 1000 + ms);
            item.id = id.into();
            item
        };
        let items = [
            at(10, Spooled::prompt("b", "cursor", "s", "which port does a1 use?", second), "p1p1p1p1p1p1p1p1p1p1"),
            at(20, Spooled::turn("b", "cursor", "s", None, Some("a1 uses 7011"), second, 100), "ffffffffffffffffffff"),
            at(30, Spooled::prompt("b", "cursor", "s", "which port does a2 use?", second), "p2p2p2p2p2p2p2p2p2p2"),
            at(40, Spooled::turn("b", "cursor", "s", None, Some("a2 uses 7021"), second, 100), "00000000000000000000"),
        ];
        for item in &items {
            write(&env, item).unwrap();
        }
        assert_eq!(replay(&env, &store, Some("s")), 4);
        let mut got: Vec<(String, String)> =
            store.list(None, None).unwrap().into_iter().map(|m| (m.prompt, m.reply)).collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("which port does a1 use?".to_string(), "a1 uses 7011".to_string()),
                ("which port does a2 use?".to_string(), "a2 uses 7021".to_string())
            ]
        );
        assert_eq!(depth(&env).waiting, 0, "every file was removed");
    }

    fn replies(store: &Store) -> Vec<String> {
        store.list(None, None).unwrap().into_iter().map(|m| m.reply).collect()
    }

    /// A turn written ahead is left alone by every replay while its hook holds it (this process's
    /// own replay included: the stop replays its session before storing its turn); once the hook is
    /// gone (the kernel drops its lock, here the handle is dropped), a replay stores it, once.
    #[test]
    fn a_turn_in_flight_is_left_to_its_hook_and_stored_once_the_hook_is_gone() {
        let t = tempfile::tempdir().unwrap();
        let env = env(t.path());
        let store = Store::open_in_memory().unwrap();
        let item = Spooled::turn("b", "codex", "s", Some("which port?"), Some("port 7011"), store::now(), 100);
        let ahead = Ahead::write(&env, &item).unwrap();
        assert_eq!(depth(&env), Depth { waiting: 0, oldest: None, in_flight: 1 }, "in flight, not waiting");
        assert_eq!(replay(&env, &store, Some("s")), 0);
        assert_eq!(replay(&env, &store, None), 0);
        assert!(replies(&store).is_empty());
        drop(ahead);
        assert_eq!(depth(&env).waiting, 1, "its hook is gone: it waits for a replay");
        assert_eq!(replay(&env, &store, None), 1);
        assert_eq!(replies(&store), ["port 7011"]);
        assert_eq!(depth(&env), Depth::default());
        assert_eq!(replay(&env, &store, None), 0);
    }

    /// A temp file a killed hook left in the spool is swept by the next replay once it is an hour
    /// old (a younger one may be a live hook's, about to be named); the items are stored as ever.
    #[test]
    fn a_replay_sweeps_stale_temp_files() {
        let t = tempfile::tempdir().unwrap();
        let env = env(t.path());
        let store = Store::open_in_memory().unwrap();
        let item = Spooled::turn("b", "codex", "s", Some("which port?"), Some("port 7041"), store::now(), 100);
        write(&env, &item).unwrap();
        let dead = 999_999_999;
        let stale = dir(&env).join(format!(".1-turn-x.json{}{dead}.aaaaaaaa", crate::fsx::TEMP_MARK));
        let young = dir(&env).join(format!(".2-turn-x.json{}{dead}.bbbbbbbb", crate::fsx::TEMP_MARK));
        for p in [&stale, &young] {
            std::fs::write(p, "{").unwrap();
        }
        let hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 3600);
        std::fs::File::options().write(true).open(&stale).unwrap().set_modified(hours_ago).unwrap();
        assert_eq!(depth(&env).waiting, 1, "temp files are not items");
        assert_eq!(replay(&env, &store, Some("other-session")), 0);
        assert!(!stale.exists() && young.exists());
        assert_eq!(replay(&env, &store, None), 1);
        assert_eq!(replies(&store), ["port 7041"]);
    }

    /// Written ahead twice (the transcript's text read in between), then spooled because the store
    /// failed: one file all along, the last text in it, stored once; a turn stored by its hook
    /// leaves nothing.
    #[test]
    fn an_item_has_one_file_however_often_it_is_written() {
        let t = tempfile::tempdir().unwrap();
        let env = env(t.path());
        let store = Store::open_in_memory().unwrap();
        let mut item = Spooled::turn("b", "codex", "s", Some("which port?"), None, store::now(), 100);
        let first = Ahead::write(&env, &item).unwrap();
        item.reply = Some("port 7021".into());
        let second = Ahead::write(&env, &item).unwrap();
        drop(first);
        assert_eq!((depth(&env).waiting, depth(&env).in_flight), (0, 1));
        assert_eq!(replay(&env, &store, None), 0, "the second copy is still held");
        drop(second);
        write(&env, &item).unwrap();
        assert_eq!((depth(&env).waiting, depth(&env).in_flight), (1, 0));
        assert_eq!(replay(&env, &store, None), 1);
        assert_eq!(replies(&store), ["port 7021"]);

        let other = Spooled::turn("b", "codex", "s", None, Some("port 7031"), store::now(), 100);
        Ahead::write(&env, &other).unwrap().stored();
        assert_eq!(depth(&env), Depth::default());
        assert!(std::fs::read_dir(dir(&env)).unwrap().next().is_none(), "no temp file either");
    }
}

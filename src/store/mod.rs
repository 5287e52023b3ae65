//! The embedded memory store: one SQLite database (`$OVMEM_HOME/memory.db`, WAL) holding
//! memories with an FTS5 index, per-session prompt buffers and per-session flags, so every
//! hook process of every harness shares state safely. Migrations are add-only and versioned
//! with `PRAGMA user_version`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rusqlite::{params, Connection};
use serde::{Deserialize, Serialize};

use crate::fsx::sha256_hex;

const MIGRATIONS: &[&str] = &[include_str!("migrations/0001_init.sql")];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Memory {
    #[serde(default)]
    pub id: i64,
    pub bank: String,
    pub content: String,
    #[serde(default)]
    pub harness: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
}

#[derive(Debug, Serialize)]
pub struct Stats {
    pub memories: i64,
    pub banks: Vec<(String, i64)>,
    pub pending_prompts: i64,
    pub schema_version: i64,
}

pub struct Store {
    conn: std::mem::ManuallyDrop<Connection>,
    /// Hook processes exit right after their work: closing the last connection would make
    /// SQLite checkpoint and remove the WAL on every prompt. They leave that to the automatic
    /// checkpoint instead (the data is in the WAL either way).
    skip_close: bool,
}

impl Drop for Store {
    fn drop(&mut self) {
        if !self.skip_close {
            // SAFETY: dropped exactly once, here.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.conn) };
        }
    }
}

pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

impl Store {
    /// Opens (creating if needed) the database, waiting at most `busy` for a lock.
    pub fn open(path: &Path, busy: Duration) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("could not create `{}`", dir.display()))?;
        }
        let conn =
            Connection::open(path).with_context(|| format!("could not open the memory store `{}`", path.display()))?;
        conn.busy_timeout(busy)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "mmap_size", 256i64 << 20)?;
        let store = Self { conn: std::mem::ManuallyDrop::new(conn), skip_close: false };
        // WAL mode is a property of the database file: set once, when it is created or migrated.
        let version: i64 = store.conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version as usize != MIGRATIONS.len() {
            store
                .conn
                .pragma_update(None, "journal_mode", "WAL")
                .context("could not switch the memory store to WAL")?;
            store.migrate().with_context(|| format!("could not prepare the memory store `{}`", path.display()))?;
        }
        Ok(store)
    }

    pub fn open_in_memory() -> Result<Self> {
        let store = Self { conn: std::mem::ManuallyDrop::new(Connection::open_in_memory()?), skip_close: false };
        store.migrate()?;
        Ok(store)
    }

    /// For a process about to exit: do not checkpoint on close (see `skip_close`). Instead the
    /// WAL is folded back into the database once it passes 1 MiB (a `stat` per hook, a
    /// checkpoint every few hundred), so it never grows without bound.
    pub fn for_exiting_process(mut self, path: &Path) -> Self {
        self.skip_close = true;
        let wal = crate::fsx::sibling(path, "-wal");
        if std::fs::metadata(wal).is_ok_and(|m| m.len() > 1 << 20) {
            let _ = self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
        self
    }

    fn migrate(&self) -> Result<()> {
        let version: i64 = self.conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version as usize >= MIGRATIONS.len() {
            return Ok(());
        }
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        // Re-check under the write lock: another hook may have migrated meanwhile.
        let version: i64 = self.conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let result = (|| -> Result<()> {
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                self.conn.execute_batch(sql)?;
                self.conn.pragma_update(None, "user_version", (i + 1) as i64)?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(self.conn.execute_batch("COMMIT")?),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Adds a memory; `None` when the same content is already in that bank.
    pub fn add(
        &self,
        bank: &str,
        content: &str,
        harness: Option<&str>,
        session: Option<&str>,
        at: i64,
    ) -> Result<Option<i64>> {
        let hash = sha256_hex(normalise(content).as_bytes());
        let n = self.conn.execute(
            "INSERT OR IGNORE INTO memories (bank, content, hash, bank_key, harness, session, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![bank, content, hash, bank_key(bank), harness, session, at],
        )?;
        Ok((n == 1).then(|| self.conn.last_insert_rowid()))
    }

    /// The memories of `bank` most relevant to `query`: BM25 blended with recency.
    ///
    /// FTS5 restricts the match to the bank and walks it newest first, so BM25 is computed for
    /// at most `CANDIDATES` memories: recall stays near a millisecond however large the store.
    pub fn recall(&self, bank: &str, query: &str, limit: usize) -> Result<Vec<Memory>> {
        const CANDIDATES: i64 = 128;
        let Some(terms) = fts_query(query) else { return Ok(Vec::new()) };
        let fts = format!("bank_key : {} AND content : ({terms})", bank_key(bank));
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.id, m.bank, m.content, m.harness, m.session, m.created_at, f.score
             FROM (SELECT rowid, bm25(memories_fts, 1.0, 0.0) AS score FROM memories_fts
                   WHERE memories_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2) f
             JOIN memories m ON m.id = f.rowid",
        )?;
        let now = now();
        let mut scored: Vec<(f64, Memory)> = stmt
            .query_map(params![fts, CANDIDATES], |r| Ok((row_memory(r)?, r.get::<_, f64>(6)?)))?
            .filter_map(Result::ok)
            .map(|(m, bm25)| {
                let age_days = ((now - m.created_at).max(0) as f64) / 86_400.0;
                // bm25() is lower-is-better; a memory from today counts up to 50% more than an old one.
                let score = -bm25 * (1.0 + 0.5 * (-age_days / 30.0).exp());
                (score, m)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok(scored.into_iter().take(limit).map(|(_, m)| m).collect())
    }

    /// The newest memories of `bank`.
    pub fn recent(&self, bank: &str, limit: usize) -> Result<Vec<Memory>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, bank, content, harness, session, created_at FROM memories WHERE bank = ?1
             ORDER BY created_at DESC, id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![bank, limit as i64], row_memory)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every memory (of one bank, or all), newest first.
    pub fn list(&self, bank: Option<&str>, limit: Option<usize>) -> Result<Vec<Memory>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, bank, content, harness, session, created_at FROM memories
             WHERE ?1 IS NULL OR bank = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![bank, limit.map_or(-1, |l| l as i64)], row_memory)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn forget(&self, id: i64) -> Result<bool> {
        Ok(self.conn.execute("DELETE FROM memories WHERE id = ?1", [id])? == 1)
    }

    pub fn stats(&self) -> Result<Stats> {
        let memories = self.conn.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?;
        let mut stmt = self.conn.prepare("SELECT bank, count(*) FROM memories GROUP BY bank ORDER BY 2 DESC")?;
        let banks = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        let pending_prompts = self.conn.query_row("SELECT count(*) FROM session_prompts", [], |r| r.get(0))?;
        let schema_version = self.conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        Ok(Stats { memories, banks, pending_prompts, schema_version })
    }

    /// Remembers a prompt until the turn's reply arrives.
    pub fn buffer_prompt(&self, session: &str, bank: &str, harness: &str, prompt: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO session_prompts (session, bank, harness, prompt, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![session, bank, harness, prompt, now()],
        )?;
        Ok(())
    }

    /// Takes (and removes) the buffered prompts of a session, oldest first.
    pub fn take_prompts(&self, session: &str) -> Result<Vec<String>> {
        let tx = self.conn.unchecked_transaction()?;
        let prompts = {
            let mut stmt = tx.prepare("SELECT prompt FROM session_prompts WHERE session = ?1 ORDER BY id")?;
            let rows = stmt.query_map([session], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<Vec<String>>>()?
        };
        tx.execute("DELETE FROM session_prompts WHERE session = ?1", [session])?;
        tx.commit()?;
        Ok(prompts)
    }

    /// Sets a per-session flag; true when it was not set before (first time).
    pub fn set_flag_once(&self, session: &str, flag: &str) -> Result<bool> {
        let n = self.conn.execute(
            "INSERT OR IGNORE INTO session_flags (session, flag, created_at) VALUES (?1, ?2, ?3)",
            params![session, flag, now()],
        )?;
        Ok(n == 1)
    }

    /// Drops prompt buffers and flags older than `max_age` seconds (abandoned sessions).
    pub fn prune(&self, max_age: i64) -> Result<()> {
        let cutoff = now() - max_age;
        self.conn.execute("DELETE FROM session_prompts WHERE created_at < ?1", [cutoff])?;
        self.conn.execute("DELETE FROM session_flags WHERE created_at < ?1", [cutoff])?;
        Ok(())
    }
}

fn row_memory(r: &rusqlite::Row) -> rusqlite::Result<Memory> {
    Ok(Memory {
        id: r.get(0)?,
        bank: r.get(1)?,
        content: r.get(2)?,
        harness: r.get(3)?,
        session: r.get(4)?,
        created_at: r.get(5)?,
    })
}

/// The bank as one FTS token: `b` and 24 hex digits of its hash.
fn bank_key(bank: &str) -> String {
    format!("b{}", &sha256_hex(bank.as_bytes())[..24])
}

fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had",
    "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please",
    "should", "so", "that", "the", "their", "them", "then", "there", "these", "this", "to", "us", "was", "we", "were",
    "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Turns free text into a safe FTS5 query: quoted terms joined by OR, stopwords dropped.
pub fn fts_query(text: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
        let w = word.to_lowercase();
        if w.chars().count() < 2 || STOPWORDS.contains(&w.as_str()) || terms.contains(&w) {
            continue;
        }
        terms.push(w);
        if terms.len() == 32 {
            break;
        }
    }
    (!terms.is_empty()).then(|| terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_ranks_by_relevance_within_a_bank() {
        let s = Store::open_in_memory().unwrap();
        let t = now();
        s.add("p1", "The staging database listens on port 5433", None, None, t).unwrap();
        s.add("p1", "We deploy with a blue-green switch on Fridays", None, None, t).unwrap();
        s.add("p2", "The staging database listens on port 9999", None, None, t).unwrap();
        let hits = s.recall("p1", "Which port does the staging database use?", 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].content.contains("5433"));
        assert!(s.recall("p3", "staging database", 5).unwrap().is_empty());
    }

    #[test]
    fn duplicates_are_ignored_and_migrations_are_idempotent() {
        let s = Store::open_in_memory().unwrap();
        assert!(s.add("b", "Fact  one", None, None, 1).unwrap().is_some());
        assert!(s.add("b", "fact one", None, None, 2).unwrap().is_none());
        s.migrate().unwrap();
        assert_eq!(s.stats().unwrap().memories, 1);
    }

    #[test]
    fn fts_query_is_safe_for_any_text() {
        let s = Store::open_in_memory().unwrap();
        for q in ["\"", "a AND OR NOT (", "*", "col:val", "ünïcödé テスト", "NEAR(x y)"] {
            s.recall("b", q, 5).unwrap();
        }
        assert_eq!(fts_query("the of a"), None);
    }

    #[test]
    fn prompt_buffer_is_taken_once() {
        let s = Store::open_in_memory().unwrap();
        s.buffer_prompt("s1", "b", "codex", "first").unwrap();
        s.buffer_prompt("s1", "b", "codex", "second").unwrap();
        assert_eq!(s.take_prompts("s1").unwrap(), vec!["first", "second"]);
        assert!(s.take_prompts("s1").unwrap().is_empty());
        assert!(s.set_flag_once("s1", "inject").unwrap());
        assert!(!s.set_flag_once("s1", "inject").unwrap());
    }
}

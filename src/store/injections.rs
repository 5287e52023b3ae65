//! What was injected into each prompt: per recall, the ids of the memories in the order they
//! were shown and how many characters the block took (ids only, never copies of text), so the
//! viewer can say why something was recalled. The table is created on first write, rotated to
//! the newest [`KEEP`] rows.

use anyhow::Result;
use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::Store;

/// Rows kept: older ones are dropped as new ones come in.
pub const KEEP: i64 = 10_000;

const TABLE: &str = "CREATE TABLE IF NOT EXISTS injections (
    id         INTEGER PRIMARY KEY,
    at         INTEGER NOT NULL,
    harness    TEXT,
    session    TEXT,
    bank       TEXT NOT NULL,
    event      TEXT NOT NULL,
    memory_ids TEXT NOT NULL,
    chars      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS injections_session ON injections (session, id);";

/// One injection: which memories a hook put into a prompt, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Injection {
    /// Unix seconds.
    pub at: i64,
    pub harness: Option<String>,
    pub session: Option<String>,
    pub bank: String,
    /// The hook event that injected (`prompt`, `session_start`, …).
    pub event: String,
    /// The injected memories, in the order they were shown.
    pub memory_ids: Vec<i64>,
    /// Characters of the injected block.
    pub chars: usize,
}

impl Store {
    /// Records one injection (and drops the rows past [`KEEP`]).
    pub fn record_injection(&self, i: &Injection) -> Result<()> {
        let ids = serde_json::to_string(&i.memory_ids)?;
        self.write(|c| {
            c.execute_batch(TABLE)?;
            c.prepare_cached(
                "INSERT INTO injections (at, harness, session, bank, event, memory_ids, chars)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![i.at, i.harness, i.session, i.bank, i.event, ids, i.chars as i64])?;
            let last = c.last_insert_rowid();
            if last > KEEP {
                c.prepare_cached("DELETE FROM injections WHERE id <= ?1")?.execute([last - KEEP])?;
            }
            Ok(())
        })
    }

    /// The newest `limit` injections (of one session and/or bank), newest first.
    pub fn injections(&self, session: Option<&str>, bank: Option<&str>, limit: usize) -> Result<Vec<Injection>> {
        if !self.has_table("injections")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT at, harness, session, bank, event, memory_ids, chars FROM injections
             WHERE (?1 IS NULL OR session = ?1) AND (?2 IS NULL OR bank = ?2) ORDER BY id DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![session, bank, limit as i64], |r| {
            let ids: String = r.get(5)?;
            Ok(Injection {
                at: r.get(0)?,
                harness: r.get(1)?,
                session: r.get(2)?,
                bank: r.get(3)?,
                event: r.get(4)?,
                memory_ids: serde_json::from_str(&ids).unwrap_or_default(),
                chars: r.get::<_, i64>(6)?.max(0) as usize,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The id of the newest injection (0 for none): what the viewer's live updates watch.
    pub fn last_injection(&self) -> Result<i64> {
        if !self.has_table("injections")? {
            return Ok(0);
        }
        Ok(self.conn.query_row("SELECT coalesce(max(id), 0) FROM injections", [], |r| r.get(0))?)
    }

    /// Whether a table created on first use exists yet.
    pub(crate) fn has_table(&self, name: &str) -> Result<bool> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1")?
            .query_row([name], |r| r.get(0))?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injection(session: &str, ids: &[i64]) -> Injection {
        Injection {
            at: 1_700_000_000,
            harness: Some("claude-code".into()),
            session: Some(session.into()),
            bank: "project:/p".into(),
            event: "prompt".into(),
            memory_ids: ids.to_vec(),
            chars: 120,
        }
    }

    #[test]
    fn recorded_in_order_newest_first() {
        let s = Store::open_in_memory().unwrap();
        assert!(s.injections(None, None, 10).unwrap().is_empty(), "no table yet: nothing, no error");
        assert_eq!(s.last_injection().unwrap(), 0);
        s.record_injection(&injection("a", &[3, 1, 2])).unwrap();
        s.record_injection(&injection("b", &[5])).unwrap();
        s.record_injection(&injection("a", &[2])).unwrap();
        let a = s.injections(Some("a"), None, 10).unwrap();
        assert_eq!(a.iter().map(|i| i.memory_ids.clone()).collect::<Vec<_>>(), vec![vec![2], vec![3, 1, 2]]);
        assert_eq!(s.injections(None, Some("project:/p"), 2).unwrap().len(), 2);
        assert_eq!(s.last_injection().unwrap(), 3);
    }
}

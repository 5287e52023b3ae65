//! What was injected into which session, so a memory already in an agent's context is not
//! injected again, and so the viewer can show what each prompt was given. One row per injection:
//! the memories' ids in the order they were shown and the block's size, never their text. A row
//! with no ids whose event starts with `reset:` marks a point where the harness compacted or
//! cleared its context: what was injected before it may be injected again.

use anyhow::Result;
use rusqlite::{params, Connection};
use serde::Serialize;

use super::Store;

/// Rows kept: older ones are dropped as new ones come in.
pub const KEEP: i64 = 10_000;

/// The event of a reset row starts with this (`reset:compact`, `reset:clear`).
pub const RESET: &str = "reset:";

/// One injection (or, with `event` starting with [`RESET`] and no ids, one reset point).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Injection {
    /// When it was injected, Unix seconds.
    pub at: i64,
    pub harness: Option<String>,
    pub session: Option<String>,
    pub bank: String,
    /// The canonical event that injected (`prompt`, `session_start`, `pre_tool`, `post_tool`),
    /// or `reset:<why>`.
    pub event: String,
    /// The memories shown, in the order they were shown.
    pub memory_ids: Vec<i64>,
    /// Characters of the injected block.
    pub chars: usize,
}

/// Schema step 5: the `injections` table.
pub(super) fn step(c: &Connection) -> Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS injections (
            id         INTEGER PRIMARY KEY,
            at         INTEGER NOT NULL,
            harness    TEXT,
            session    TEXT,
            bank       TEXT NOT NULL,
            event      TEXT NOT NULL,
            memory_ids TEXT NOT NULL,
            chars      INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS injections_session ON injections (session, bank, id);",
    )?;
    Ok(())
}

impl Store {
    /// Records one injection (or reset point) and drops rows beyond the newest [`KEEP`].
    pub fn record_injection(&self, i: &Injection) -> Result<()> {
        let ids = serde_json::to_string(&i.memory_ids)?;
        self.write(|c| {
            c.prepare_cached(
                "INSERT INTO injections (at, harness, session, bank, event, memory_ids, chars)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![i.at, i.harness, i.session, i.bank, i.event, ids, i.chars as i64])?;
            let newest = c.last_insert_rowid();
            c.prepare_cached("DELETE FROM injections WHERE id <= ?1")?.execute([newest - KEEP])?;
            Ok(())
        })
    }

    /// The newest `limit` injections (and reset points), newest first, of one session and/or
    /// bank or of all.
    pub fn injections(&self, session: Option<&str>, bank: Option<&str>, limit: usize) -> Result<Vec<Injection>> {
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

    /// The memories injected into `session` (of `bank`) since its newest reset point: still in
    /// the agent's context.
    pub fn injected_since_reset(&self, session: &str, bank: &str) -> Result<rustc_hash::FxHashSet<i64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT memory_ids FROM injections WHERE session = ?1 AND bank = ?2 AND id > coalesce(
                (SELECT max(id) FROM injections WHERE session = ?1 AND bank = ?2 AND substr(event, 1, 6) = ?3), 0)",
        )?;
        let mut out = rustc_hash::FxHashSet::default();
        for ids in stmt.query_map(params![session, bank, RESET], |r| r.get::<_, String>(0))? {
            out.extend(serde_json::from_str::<Vec<i64>>(&ids?).unwrap_or_default());
        }
        Ok(out)
    }
    /// The id of the newest injection (0 for none): what the viewer's live updates watch.
    pub fn last_injection(&self) -> Result<i64> {
        Ok(self.conn.query_row("SELECT coalesce(max(id), 0) FROM injections", [], |r| r.get(0))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inj(session: &str, event: &str, ids: &[i64]) -> Injection {
        Injection {
            at: 1,
            harness: Some("claude-code".into()),
            session: Some(session.into()),
            bank: "b".into(),
            event: event.into(),
            memory_ids: ids.to_vec(),
            chars: ids.len() * 100,
        }
    }

    #[test]
    fn what_was_injected_since_the_newest_reset() {
        let s = Store::open_in_memory().unwrap();
        s.record_injection(&inj("s1", "prompt", &[3, 1])).unwrap();
        s.record_injection(&inj("s2", "prompt", &[9])).unwrap();
        s.record_injection(&inj("s1", "prompt", &[4])).unwrap();
        let mut got: Vec<i64> = s.injected_since_reset("s1", "b").unwrap().into_iter().collect();
        got.sort();
        assert_eq!(got, [1, 3, 4]);
        s.record_injection(&inj("s1", "reset:compact", &[])).unwrap();
        assert!(s.injected_since_reset("s1", "b").unwrap().is_empty());
        s.record_injection(&inj("s1", "prompt", &[1])).unwrap();
        assert_eq!(s.injected_since_reset("s1", "b").unwrap().into_iter().collect::<Vec<_>>(), [1]);
        assert_eq!(s.injected_since_reset("s2", "b").unwrap().into_iter().collect::<Vec<_>>(), [9]);
        let all = s.injections(Some("s1"), None, 10).unwrap();
        assert_eq!(all.len(), 4);
        assert_eq!(all[0], inj("s1", "prompt", &[1]));
        assert_eq!(all[3].memory_ids, [3, 1]);
        assert_eq!(s.injections(None, Some("other"), 10).unwrap(), []);
        assert_eq!(s.last_injection().unwrap(), 5);
    }

    #[test]
    fn only_the_newest_rows_are_kept() {
        let s = Store::open_in_memory().unwrap();
        for i in 0..(KEEP + 5) {
            s.record_injection(&inj("s", "prompt", &[i])).unwrap();
        }
        let all = s.injections(None, None, usize::MAX >> 1).unwrap();
        assert_eq!(all.len() as i64, KEEP);
        assert_eq!(all.last().unwrap().memory_ids, [5]);
    }
}

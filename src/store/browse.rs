//! Reading the store page by page, as the viewer (`ovmem ui`) shows it: memories newest first
//! with a stable cursor, a session's turns, recent sessions, the outbox's items, and a cheap mark
//! that changes whenever something was captured, forgotten, pinned or injected.

use anyhow::Result;
use rusqlite::params;
use serde::Serialize;

use super::{Hit, Memory, Store};

/// Where a page of the newest-first list ends: the last memory's date and id.
pub type Cursor = (i64, i64);

/// A session as the viewer lists it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SessionSummary {
    pub session: String,
    pub bank: String,
    pub harness: Option<String>,
    /// The newest capture or injection, Unix seconds.
    pub last_at: i64,
    pub memories: i64,
}

/// An item waiting in the outbox.
#[derive(Debug, Clone, Serialize)]
pub struct OutboxItem {
    pub memory_id: i64,
    pub bank: String,
    pub status: String,
    /// `queued`, `sending` or `parked` (see `store::outbox`).
    pub state: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
}

/// What changes whenever the store does (see [`Store::change_mark`]).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct ChangeMark {
    pub last_memory: i64,
    pub memories: i64,
    pub last_injection: i64,
    pub pins: i64,
}

impl Store {
    /// Up to `limit` memories (of one bank, or all) newest first, after `before` when given.
    pub fn page(&self, bank: Option<&str>, before: Option<Cursor>, limit: usize) -> Result<Vec<Memory>> {
        let (at, id) = before.unwrap_or((i64::MAX, i64::MAX));
        let sql = format!(
            "SELECT {} FROM {} WHERE (?1 IS NULL OR b.name = ?1) AND (m.created_at < ?2 OR (m.created_at = ?2 AND m.id < ?3))
             ORDER BY m.created_at DESC, m.id DESC LIMIT ?4",
            Self::FIELDS,
            Self::FROM
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![bank, at, id, limit as i64], Self::row_memory)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Recall's ranking without the pins step: what a search in the viewer shows.
    pub fn search(&self, bank: &str, query: &str, limit: usize) -> Result<Vec<Hit>> {
        self.ranked(bank, query, limit)
    }

    /// One memory by id.
    pub fn memory(&self, id: i64) -> Result<Option<Memory>> {
        self.get(id)
    }

    /// The turns captured in a session, oldest first.
    pub fn session_memories(&self, session: &str) -> Result<Vec<Memory>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE m.session = ?1 ORDER BY m.created_at, m.id LIMIT 5000",
            Self::FIELDS,
            Self::FROM
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map([session], Self::row_memory)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The most recently active sessions (of one bank, or all): by their captures and, where any
    /// were recorded, their injections.
    pub fn sessions(&self, bank: Option<&str>, limit: usize) -> Result<Vec<SessionSummary>> {
        let mut out: Vec<SessionSummary> = {
            let mut stmt = self.conn.prepare_cached(
                "SELECT m.session, b.name, max(m.harness), max(m.created_at), count(*) FROM memories m
                 JOIN banks b ON b.id = m.bank_id WHERE m.session IS NOT NULL AND (?1 IS NULL OR b.name = ?1)
                 GROUP BY m.session, b.name ORDER BY max(m.created_at) DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![bank, limit as i64], |r| {
                Ok(SessionSummary {
                    session: r.get(0)?,
                    bank: r.get(1)?,
                    harness: r.get(2)?,
                    last_at: r.get(3)?,
                    memories: r.get(4)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if self.has_table("injections")? {
            let mut stmt = self.conn.prepare_cached(
                "SELECT session, bank, max(harness), max(at) FROM injections
                 WHERE session IS NOT NULL AND (?1 IS NULL OR bank = ?1)
                 GROUP BY session, bank ORDER BY max(at) DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![bank, limit as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get::<_, i64>(3)?))
            })?;
            for row in rows {
                let (session, bank, harness, at) = row?;
                match out.iter_mut().find(|s| s.session == session && s.bank == bank) {
                    Some(s) => s.last_at = s.last_at.max(at),
                    None => out.push(SessionSummary { session, bank, harness, last_at: at, memories: 0 }),
                }
            }
        }
        out.sort_by(|a, b| b.last_at.cmp(&a.last_at).then_with(|| a.session.cmp(&b.session)));
        out.truncate(limit);
        Ok(out)
    }

    /// The oldest `limit` items waiting for the remote backend, with their attempts and errors.
    pub fn outbox_items(&self, limit: usize) -> Result<Vec<OutboxItem>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT memory_id, bank, status, state, attempts, last_error, created_at FROM outbox
             ORDER BY created_at, memory_id LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(OutboxItem {
                memory_id: r.get(0)?,
                bank: r.get(1)?,
                status: r.get(2)?,
                state: r.get(3)?,
                attempts: r.get(4)?,
                last_error: r.get(5)?,
                created_at: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A few numbers that change with every capture, forget, edit, pin and injection: polled by
    /// the viewer's live updates (a few indexed reads).
    pub fn change_mark(&self) -> Result<ChangeMark> {
        let (last_memory, memories) =
            self.conn
                .query_row("SELECT coalesce(max(id), 0), count(*) FROM memories", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let pins = if self.has_table("pins")? {
            self.conn.query_row("SELECT count(*) + coalesce(sum(at), 0) FROM pins", [], |r| r.get(0))?
        } else {
            0
        };
        Ok(ChangeMark { last_memory, memories, last_injection: self.last_injection()?, pins })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewMemory;

    #[test]
    fn pages_follow_the_cursor_without_gaps_or_repeats() {
        let s = Store::open_in_memory().unwrap();
        for i in 0..7 {
            // Two memories share each date: the id breaks the tie.
            let text = format!("fact number {i} about the billing service");
            s.add_fact(if i % 2 == 0 { "a" } else { "b" }, &text, None, 100 + i / 2).unwrap();
        }
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = s.page(None, cursor, 3).unwrap();
            if page.is_empty() {
                break;
            }
            cursor = page.last().map(|m| (m.created_at, m.id));
            seen.extend(page.into_iter().map(|m| m.id));
        }
        let all: Vec<i64> = s.list(None, None).unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(seen, all);
        assert_eq!(s.page(Some("a"), None, 10).unwrap().len(), 4);
    }

    #[test]
    fn sessions_and_marks() {
        let s = Store::open_in_memory().unwrap();
        let before = s.change_mark().unwrap();
        let m = NewMemory {
            bank: "a",
            prompt: "how do we deploy",
            reply: "with the pipeline",
            session: Some("s1"),
            harness: Some("codex"),
            created_at: 50,
            ..Default::default()
        };
        let id = s.add(&m).unwrap().unwrap();
        let after = s.change_mark().unwrap();
        assert_ne!(before, after);
        s.pin(id, true).unwrap();
        assert_ne!(s.change_mark().unwrap(), after);
        let sessions = s.sessions(None, 10).unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!((sessions[0].session.as_str(), sessions[0].memories), ("s1", 1));
        assert_eq!(s.session_memories("s1").unwrap()[0].id, id);
    }
}

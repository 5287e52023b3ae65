//! Curation by hand (the viewer, `ovmem ui`): pins, which put a memory first in every recall of
//! its bank (and at every session start), and edits of a memory's text. The pins table is
//! created on first write.

use std::collections::HashSet;

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use super::{text, Hit, Kind, Memory, NewMemory, Store};

const TABLE: &str = "CREATE TABLE IF NOT EXISTS pins (memory_id INTEGER PRIMARY KEY, at INTEGER NOT NULL)";

/// What an edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edited {
    /// Stored under a new id (the index needs growing ids), with the old one's bank, kind, date,
    /// harness, session, topic and pin.
    Replaced(i64),
    /// No memory has that id.
    Missing,
    /// The bank already holds a memory with that text: that one's id; nothing changed.
    Duplicate(i64),
    /// The new text is empty (after redaction): nothing changed (forget it instead).
    Empty,
}

impl Store {
    /// Pins (or unpins) a memory; false when there is no memory with that id.
    pub fn pin(&self, id: i64, pinned: bool) -> Result<bool> {
        self.write(|c| {
            let exists: Option<i64> =
                c.query_row("SELECT id FROM memories WHERE id = ?1", [id], |r| r.get(0)).optional()?;
            if exists.is_none() {
                return Ok(false);
            }
            c.execute_batch(TABLE)?;
            if pinned {
                c.execute("INSERT OR IGNORE INTO pins (memory_id, at) VALUES (?1, ?2)", params![id, super::now()])?;
            } else {
                c.execute("DELETE FROM pins WHERE memory_id = ?1", [id])?;
            }
            Ok(true)
        })
    }

    /// The ids of every pinned memory (of every bank).
    pub fn pinned_ids(&self) -> Result<HashSet<i64>> {
        if !self.has_table("pins")? {
            return Ok(HashSet::new());
        }
        let mut stmt =
            self.conn.prepare_cached("SELECT p.memory_id FROM pins p JOIN memories m ON m.id = p.memory_id")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The pinned memories of `bank`, the most recently pinned first.
    pub fn pinned(&self, bank: &str) -> Result<Vec<Memory>> {
        if !self.has_table("pins")? {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {} FROM {} JOIN pins p ON p.memory_id = m.id WHERE b.name = ?1 ORDER BY p.at DESC, p.memory_id DESC",
            Self::FIELDS,
            Self::FROM
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map([bank], Self::row_memory)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The recall pre-step: the bank's pinned memories first, then `ranked` without them, at most
    /// `limit` in all.
    pub(super) fn pins_first(&self, bank: &str, query: &str, ranked: Vec<Hit>, limit: usize) -> Result<Vec<Hit>> {
        let pinned = self.pinned(bank)?;
        if pinned.is_empty() {
            return Ok(ranked);
        }
        let query: HashSet<String> = super::rank::Query::parse(query).terms.into_iter().map(|t| t.text).collect();
        let top = ranked.first().map_or(1.0, |h| h.score);
        let ids: HashSet<i64> = pinned.iter().map(|m| m.id).collect();
        let first = pinned.into_iter().map(|memory| {
            let words: HashSet<String> = text::analyse(&memory.content()).into_iter().map(|t| t.text).collect();
            let terms = query.iter().filter(|t| words.contains(*t)).cloned().collect();
            Hit { memory, score: top, superseded_by: None, terms, with: Vec::new(), kept: true }
        });
        Ok(first.chain(ranked.into_iter().filter(|h| !ids.contains(&h.memory.id))).take(limit).collect())
    }

    /// [`Store::pins_first`] for the newest memories (session start).
    pub(super) fn pinned_then(&self, bank: &str, newest: Vec<Memory>, limit: usize) -> Result<Vec<Memory>> {
        let pinned = self.pinned(bank)?;
        if pinned.is_empty() {
            return Ok(newest);
        }
        let ids: HashSet<i64> = pinned.iter().map(|m| m.id).collect();
        Ok(pinned.into_iter().chain(newest.into_iter().filter(|m| !ids.contains(&m.id))).take(limit).collect())
    }

    /// Replaces a memory's text (a fact's text is `prompt`; a turn has both), redacted and
    /// indexed anew like any write. Posting lists need growing ids, so the edited memory is
    /// stored under a new id with everything else kept (bank, kind, date, harness, session,
    /// topic, turn id, pin, a place in the outbox), in one transaction. The old text goes the way
    /// forgotten text goes ([`Store::forget_many`]): every trace of it, then its bytes.
    pub fn edit(&self, id: i64, prompt: &str, reply: &str) -> Result<Edited> {
        self.conn.pragma_update(None, "secure_delete", "ON")?;
        let edited = self.write(|c| Self::edit_in(c, id, prompt, reply));
        if matches!(edited, Ok(Edited::Replaced(_))) {
            // Its vectors, from the new text (outside the transaction, as for any write).
            let _ = self.embed_newest(1);
            // Best effort, as for forget: the next forget or edit finishes a rewrite that failed.
            let _ = self.vacuum();
        }
        let _ = self.conn.pragma_update(None, "secure_delete", "OFF");
        edited
    }

    fn edit_in(c: &rusqlite::Connection, id: i64, prompt: &str, reply: &str) -> Result<Edited> {
        let sql = format!("SELECT {}, m.bank_id, m.turn_id FROM {} WHERE m.id = ?1", Self::FIELDS, Self::FROM);
        let row: Option<(Memory, i64, Option<String>)> =
            c.query_row(&sql, [id], |r| Ok((Self::row_memory(r)?, r.get(9)?, r.get(10)?))).optional()?;
        let Some((old, bank_id, turn_id)) = row else { return Ok(Edited::Missing) };
        let (prompt, reply) = (super::scrub(prompt), super::scrub(reply));
        let reply = if old.kind == Kind::Fact { "".into() } else { reply };
        if prompt.trim().is_empty() && reply.trim().is_empty() {
            return Ok(Edited::Empty);
        }
        let hash = super::content_hash(old.kind, &prompt, &reply);
        let same: Option<i64> = c
            .query_row(
                "SELECT id FROM memories WHERE bank_id = ?1 AND hash = ?2 AND id != ?3",
                params![bank_id, hash, id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(other) = same {
            return Ok(Edited::Duplicate(other));
        }
        let queued: Option<(String, String, String)> = c
            .query_row("SELECT bank, project, status FROM outbox WHERE memory_id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        // The later memories that revise it still do after the edit.
        let revisers: Vec<i64> = super::revise::revisers(c, &[id])?.into_iter().map(|(_, newer)| newer).collect();
        Self::forget_in(c, id)?;
        let mut batch = super::Writes::default();
        let new = NewMemory {
            bank: &old.bank,
            kind: old.kind,
            prompt: &prompt,
            reply: &reply,
            topic: &old.topic,
            harness: old.harness.as_deref(),
            session: old.session.as_deref(),
            created_at: old.created_at,
            turn_id: turn_id.as_deref(),
        };
        let Some(new_id) = Self::insert(c, &new, &mut batch)? else {
            anyhow::bail!("memory {id} could not be stored again after its edit (rolled back)")
        };
        batch.flush(c)?;
        super::revise::revised_by(c, new_id, &revisers)?;
        if let Some((bank, project, status)) = &queued {
            Self::enqueue(c, new_id, &super::Outbound { bank, project, status })?;
        }
        c.execute_batch(TABLE)?;
        c.execute("UPDATE pins SET memory_id = ?2 WHERE memory_id = ?1", params![id, new_id])?;
        Ok(Edited::Replaced(new_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (Store, i64, i64) {
        let s = Store::open_in_memory().unwrap();
        let a = s.add_fact("b", "the deploy codename is BLUEHERON", None, 100).unwrap().unwrap();
        let b = s.add_fact("b", "tests run with cargo nextest on the billing service", None, 200).unwrap().unwrap();
        (s, a, b)
    }

    #[test]
    fn a_pin_is_recalled_first_even_unmatched() {
        let (s, a, b) = store();
        assert_eq!(s.recall("b", "billing tests", 5).unwrap().iter().map(|h| h.memory.id).collect::<Vec<_>>(), [b]);
        assert!(s.pin(a, true).unwrap());
        let ids: Vec<i64> = s.recall("b", "billing tests", 5).unwrap().iter().map(|h| h.memory.id).collect();
        assert_eq!(ids, [a, b]);
        assert_eq!(s.recent("b", 1).unwrap()[0].id, a, "session start shows the pin first too");
        assert_eq!(s.recall("other", "billing", 5).unwrap().len(), 0, "a pin stays in its bank");
        assert!(s.pin(a, false).unwrap());
        assert_eq!(s.recall("b", "billing tests", 5).unwrap().len(), 1);
        assert!(!s.pin(999, true).unwrap());
    }

    #[test]
    fn an_edit_is_indexed_anew_and_keeps_the_pin() {
        let (s, a, b) = store();
        s.pin(a, true).unwrap();
        let Edited::Replaced(n) = s.edit(a, "the deploy codename is REDKITE now", "").unwrap() else { panic!() };
        assert!(n > b);
        assert!(s.recall("b", "blueheron", 5).unwrap().iter().all(|h| !h.memory.prompt.contains("BLUEHERON")));
        let hits = s.search("b", "redkite", 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!((hits[0].memory.id, hits[0].memory.created_at), (n, 100));
        assert!(s.pinned_ids().unwrap().contains(&n));
        assert_eq!(s.edit(n, "tests run with cargo nextest on the billing service", "").unwrap(), Edited::Duplicate(b));
        assert_eq!(s.edit(a, "x", "").unwrap(), Edited::Missing);
        assert_eq!(s.edit(n, "  ", "").unwrap(), Edited::Empty);
        assert_eq!(s.stats().unwrap().memories, 2);
    }
}

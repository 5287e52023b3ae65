//! The outbox: memories still to be sent to the remote backend, with the state of each send kept
//! durably, so that a send is never lost, never made twice as a new item, and one refused memory
//! never blocks the others. A row is `queued` (waiting, or failed while the server was away),
//! `sending` (a process is sending it right now, or died while it did: the next send is a retry
//! with the same ids), or `parked` (refused by the server [`PARK_AFTER`] times, kept with the
//! server's reason until `ovmem sync --retry-parked`). A sent memory leaves the outbox, and its
//! session is recorded as one to end on the server (OpenViking commits it, so memories are
//! extracted from it) in the same transaction.

use anyhow::Result;
use rusqlite::{params, Connection};

use super::{now, Memory, NewMemory, Outbound, Store};

/// Refusals of one memory by a server that answers otherwise (a 4xx, a 5xx while healthy, an
/// answer ovmem cannot read) after which it is parked.
pub const PARK_AFTER: i64 = 3;

/// Schema step 6: the send states, the sessions still to end on the server, and when (to the
/// millisecond) a buffered prompt was seen, so a replayed turn takes only the prompts before it.
pub(super) fn step_6(c: &Connection) -> Result<()> {
    c.execute_batch(
        "ALTER TABLE outbox ADD COLUMN state TEXT NOT NULL DEFAULT 'queued';
         ALTER TABLE outbox ADD COLUMN strikes INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE outbox ADD COLUMN tried_at INTEGER;
         CREATE TABLE outbox_sessions (
             harness    TEXT NOT NULL,
             session    TEXT NOT NULL,
             bank       TEXT NOT NULL,
             created_at INTEGER NOT NULL,
             PRIMARY KEY (harness, session)
         ) WITHOUT ROWID;
         ALTER TABLE session_prompts ADD COLUMN seen_ms INTEGER;",
    )?;
    Ok(())
}

/// A memory waiting in the outbox.
#[derive(Debug, Clone)]
pub struct Queued {
    pub memory: Memory,
    /// Stable across replays: the turn's id, or the memory's content hash.
    pub doc_id: String,
    pub bank: String,
    pub project: String,
    pub status: String,
    pub attempts: i64,
    /// It may have reached the server already: an earlier send was started (and died, or its
    /// answer was lost), so this one must be a retry under the same ids.
    pub retry: bool,
}

/// A memory the server refused for good.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Parked {
    pub memory_id: i64,
    pub attempts: i64,
    pub error: String,
    pub since: i64,
}

/// A session whose turns reached the server and that is still to be ended there.
#[derive(Debug, Clone)]
pub struct SessionToEnd {
    pub bank: String,
    pub harness: String,
    pub session: String,
}

/// The outbox as `status` and `check` report it.
#[derive(Debug, Clone, Default)]
pub struct Depth {
    pub queued: i64,
    pub since: Option<i64>,
    pub last_error: Option<String>,
    pub parked: i64,
    pub parked_error: Option<String>,
}

impl Store {
    pub(super) fn enqueue(c: &Connection, memory: i64, o: &Outbound) -> Result<()> {
        c.prepare_cached(
            "INSERT OR IGNORE INTO outbox (memory_id, bank, project, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![memory, o.bank, o.project, o.status, now()])?;
        Ok(())
    }

    /// Adds a memory and queues it for the remote backend, in one transaction.
    pub fn add_queued(&self, m: &NewMemory, o: &Outbound) -> Result<Option<i64>> {
        self.write(|c| {
            let mut batch = super::Writes::default();
            let id = Self::insert(c, m, &mut batch)?;
            batch.flush(c)?;
            if let Some(id) = id {
                Self::enqueue(c, id, o)?;
            }
            Ok(id)
        })
    }

    /// Up to `limit` memories to send, leaving out `skip` (those already tried by this flush):
    /// the fewest refusals first, then the oldest, so a memory the server keeps refusing goes
    /// behind the others instead of holding them up. Parked memories are not sent.
    pub fn outbox(&self, limit: usize, skip: &std::collections::HashSet<i64>) -> Result<Vec<Queued>> {
        let sql = format!(
            "SELECT {}, m.turn_id, m.hash, o.bank, o.project, o.status, o.attempts, o.state FROM outbox o
             JOIN memories m ON m.id = o.memory_id JOIN banks b ON b.id = m.bank_id
             WHERE o.state != 'parked'
             ORDER BY o.strikes, o.created_at, o.memory_id LIMIT ?1",
            Self::FIELDS
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map([(limit + skip.len()) as i64], |r| {
            let turn: Option<String> = r.get(9)?;
            let hash: Vec<u8> = r.get(10)?;
            let attempts: i64 = r.get(14)?;
            let state: String = r.get(15)?;
            Ok(Queued {
                memory: Self::row_memory(r)?,
                doc_id: turn.unwrap_or_else(|| hash.iter().map(|b| format!("{b:02x}")).collect()),
                bank: r.get(11)?,
                project: r.get(12)?,
                status: r.get(13)?,
                attempts,
                retry: attempts > 0 || state == "sending",
            })
        })?;
        let all: Vec<Queued> = rows.collect::<rusqlite::Result<_>>()?;
        Ok(all.into_iter().filter(|q| !skip.contains(&q.memory.id)).take(limit).collect())
    }

    /// Recorded before a send starts: if this process dies during it, the next send knows it is a
    /// retry.
    pub fn sending(&self, memory: i64) -> Result<()> {
        self.write(|c| {
            c.prepare_cached(
                "UPDATE outbox SET state = 'sending', attempts = attempts + 1, tried_at = ?2 WHERE memory_id = ?1",
            )?
            .execute(params![memory, now()])?;
            Ok(())
        })
    }

    /// The server has the memory: out of the outbox, and its session recorded as one to end on the
    /// server (OpenViking commits it), in one transaction.
    pub fn sent(&self, memory: i64, session: Option<&SessionToEnd>) -> Result<()> {
        self.write(|c| {
            c.prepare_cached("DELETE FROM outbox WHERE memory_id = ?1")?.execute([memory])?;
            if let Some(s) = session {
                c.prepare_cached(
                    "INSERT OR IGNORE INTO outbox_sessions (harness, session, bank, created_at) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![s.harness, s.session, s.bank, now()])?;
            }
            Ok(())
        })
    }

    /// A send failed, with the server's reason. `refused`: the server answered and refused this
    /// memory (it counts towards parking); otherwise the server was away and it simply waits.
    /// Returns true when the memory is now parked.
    pub fn send_failed(&self, memory: i64, error: &str, refused: bool) -> Result<bool> {
        let error = crate::redact::scrub(error);
        self.write(|c| {
            c.prepare_cached(
                "UPDATE outbox SET strikes = strikes + ?3, last_error = ?2, tried_at = ?4,
                 state = CASE WHEN strikes + ?3 >= ?5 THEN 'parked' ELSE 'queued' END
                 WHERE memory_id = ?1",
            )?
            .execute(params![memory, error, refused as i64, now(), PARK_AFTER])?;
            let state: Option<String> = c
                .prepare_cached("SELECT state FROM outbox WHERE memory_id = ?1")?
                .query_row([memory], |r| r.get(0))
                .ok();
            Ok(state.as_deref() == Some("parked"))
        })
    }

    /// The parked memories, newest first.
    pub fn parked(&self) -> Result<Vec<Parked>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT memory_id, attempts, coalesce(last_error, ''), coalesce(tried_at, created_at) FROM outbox
             WHERE state = 'parked' ORDER BY tried_at DESC, memory_id DESC",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Parked { memory_id: r.get(0)?, attempts: r.get(1)?, error: r.get(2)?, since: r.get(3)? })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Puts parked memories back in the queue (after the server or the memory was fixed).
    pub fn requeue_parked(&self) -> Result<usize> {
        self.write(|c| Ok(c.execute("UPDATE outbox SET state = 'queued', strikes = 0 WHERE state = 'parked'", [])?))
    }

    /// Sessions whose turns reached the server and that are still to be ended there.
    pub fn sessions_to_end(&self) -> Result<Vec<SessionToEnd>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT bank, harness, session FROM outbox_sessions ORDER BY created_at, harness, session",
        )?;
        let rows =
            stmt.query_map([], |r| Ok(SessionToEnd { bank: r.get(0)?, harness: r.get(1)?, session: r.get(2)? }))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The server ended the session (or it cannot be ended): no longer pending.
    pub fn session_ended(&self, harness: &str, session: &str) -> Result<()> {
        self.write(|c| {
            c.prepare_cached("DELETE FROM outbox_sessions WHERE harness = ?1 AND session = ?2")?
                .execute(params![harness, session])?;
            Ok(())
        })
    }

    /// Memories waiting for the remote backend (how many, since when, the last error) and the
    /// parked ones (how many, the newest one's reason).
    pub fn outbox_depth(&self) -> Result<Depth> {
        Ok(self.conn.query_row(
            "SELECT
               (SELECT count(*) FROM outbox WHERE state != 'parked'),
               (SELECT min(created_at) FROM outbox WHERE state != 'parked'),
               (SELECT last_error FROM outbox WHERE last_error IS NOT NULL AND state != 'parked'
                ORDER BY tried_at DESC LIMIT 1),
               (SELECT count(*) FROM outbox WHERE state = 'parked'),
               (SELECT last_error FROM outbox WHERE state = 'parked' ORDER BY tried_at DESC LIMIT 1)",
            [],
            |r| {
                Ok(Depth {
                    queued: r.get(0)?,
                    since: r.get(1)?,
                    last_error: r.get(2)?,
                    parked: r.get(3)?,
                    parked_error: r.get(4)?,
                })
            },
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Kind;

    fn queue(s: &Store, text: &str) -> i64 {
        let m = NewMemory { bank: "b", kind: Kind::Fact, prompt: text, created_at: 1, ..Default::default() };
        s.add_queued(&m, &Outbound { bank: "rb", project: "p", status: "completed" }).unwrap().unwrap()
    }

    #[test]
    fn a_refused_memory_is_parked_and_the_others_go_first() {
        let s = Store::open_in_memory().unwrap();
        let bad = queue(&s, "the poisoned one");
        let good = queue(&s, "a good one");
        let none = std::collections::HashSet::new();
        assert_eq!(s.outbox(10, &none).unwrap()[0].memory.id, bad);
        s.sending(bad).unwrap();
        assert!(s.outbox(10, &none).unwrap()[0].retry, "a started send is a retry");
        assert!(!s.send_failed(bad, "HTTP 500", true).unwrap());
        assert_eq!(s.outbox(10, &none).unwrap()[0].memory.id, good, "the refused one goes behind");
        assert!(!s.send_failed(bad, "away", false).unwrap(), "the server away is no refusal");
        assert!(!s.send_failed(bad, "HTTP 500", true).unwrap());
        assert!(s.send_failed(bad, "HTTP 500: bad input", true).unwrap());
        let d = s.outbox_depth().unwrap();
        assert_eq!((d.queued, d.parked, d.parked_error.as_deref()), (1, 1, Some("HTTP 500: bad input")));
        assert_eq!(s.outbox(10, &none).unwrap().len(), 1);
        assert_eq!(s.parked().unwrap()[0].memory_id, bad);
        let end = SessionToEnd { bank: "rb".into(), harness: "h".into(), session: "s".into() };
        s.sent(good, Some(&end)).unwrap();
        assert_eq!(s.sessions_to_end().unwrap().len(), 1);
        s.session_ended("h", "s").unwrap();
        assert!(s.sessions_to_end().unwrap().is_empty());
        assert_eq!(s.requeue_parked().unwrap(), 1);
        assert_eq!(s.outbox_depth().unwrap().queued, 1);
    }
}

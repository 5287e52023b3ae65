//! Memory vectors inside the store (schema step 4), so they share its transactions: a memory's
//! vector is written with it and removed with it. Each bank's sign bits are packed in blocks of
//! up to [`BLOCK`] memories (`id` + 32 bytes each), so a search reads a few rows however large
//! the bank; the int8 codes sit one row per memory and are read only for the shortlist the
//! sign bits choose ([`SHORTLIST`]). A memory whose text has no known token gets an empty row,
//! which tells it apart from one not embedded yet (an older store's, filled in by [`backfill`]).

use std::collections::BinaryHeap;

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::embed::{self, Code, Model, BITS};

/// Memories per block of sign bits.
pub const BLOCK: usize = 512;
/// Bytes per memory in a block: its id and its signs.
const ENTRY: usize = 8 + BITS;
/// Memories the sign bits pass on to be scored on their int8 codes.
pub const SHORTLIST: usize = 400;

pub fn create(c: &Connection) -> Result<()> {
    c.execute_batch(
        "CREATE TABLE vectors (
             memory_id INTEGER PRIMARY KEY,
             block     INTEGER NOT NULL,
             code      BLOB NOT NULL
         );
         CREATE TABLE vector_blocks (
             id      INTEGER PRIMARY KEY,
             bank_id INTEGER NOT NULL,
             n       INTEGER NOT NULL,
             data    BLOB NOT NULL
         );
         CREATE INDEX vector_blocks_bank ON vector_blocks (bank_id, id);",
    )?;
    Ok(())
}

/// A memory's vector from its fields (the prompt first: what the user asked carries the subject).
pub fn embed(prompt: &str, reply: &str, topic: &str) -> Option<Vec<f32>> {
    Model::get().embed_parts(&[prompt, topic, reply])
}

/// Vectors waiting to be written, grouped per bank when flushed (an import writes thousands).
#[derive(Default)]
pub struct Pending {
    rows: Vec<(i64, i64, Option<Vec<f32>>)>,
}

impl Pending {
    pub fn add(&mut self, bank: i64, memory: i64, v: Option<Vec<f32>>) {
        self.rows.push((bank, memory, v));
    }

    pub fn flush(&mut self, c: &Connection) -> Result<()> {
        let mut rows = std::mem::take(&mut self.rows);
        rows.sort_by_key(|r| (r.0, r.1));
        let mut i = 0;
        while i < rows.len() {
            let bank = rows[i].0;
            let j = rows[i..].iter().position(|r| r.0 != bank).map_or(rows.len(), |k| i + k);
            append(c, bank, &rows[i..j])?;
            i = j;
        }
        Ok(())
    }
}

/// Appends memories' vectors to their bank: codes one row each, signs into the bank's last block
/// while it has room, then new blocks.
fn append(c: &Connection, bank: i64, rows: &[(i64, i64, Option<Vec<f32>>)]) -> Result<()> {
    let mut last: Option<(i64, Vec<u8>)> = c
        .prepare_cached("SELECT id, data FROM vector_blocks WHERE bank_id = ?1 ORDER BY id DESC LIMIT 1")?
        .query_row([bank], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .filter(|(_, d): &(i64, Vec<u8>)| d.len() / ENTRY < BLOCK);
    let mut code_row =
        c.prepare_cached("INSERT OR REPLACE INTO vectors (memory_id, block, code) VALUES (?1, ?2, ?3)")?;
    for (_, memory, v) in rows {
        let Some(v) = v else {
            code_row.execute(params![memory, 0, Vec::<u8>::new()])?;
            continue;
        };
        let (block, data) = match &mut last {
            Some((id, data)) if data.len() / ENTRY < BLOCK => (*id, data),
            _ => {
                if let Some((id, data)) = last.take() {
                    save(c, bank, id, &data)?;
                }
                c.prepare_cached("INSERT INTO vector_blocks (bank_id, n, data) VALUES (?1, 0, x'')")?
                    .execute([bank])?;
                last = Some((c.last_insert_rowid(), Vec::with_capacity(BLOCK * ENTRY)));
                let (id, data) = last.as_mut().expect("just set");
                (*id, data)
            }
        };
        data.extend_from_slice(&memory.to_le_bytes());
        data.extend_from_slice(&embed::bits(v));
        code_row.execute(params![memory, block, Code::new(v).to_bytes()])?;
    }
    if let Some((id, data)) = last {
        save(c, bank, id, &data)?;
    }
    Ok(())
}

fn save(c: &Connection, bank: i64, block: i64, data: &[u8]) -> Result<()> {
    if data.is_empty() {
        c.prepare_cached("DELETE FROM vector_blocks WHERE id = ?1")?.execute([block])?;
    } else {
        c.prepare_cached("UPDATE vector_blocks SET n = ?3, data = ?2 WHERE id = ?1 AND bank_id = ?4")?
            .execute(params![block, data, (data.len() / ENTRY) as i64, bank])?;
    }
    Ok(())
}

/// Removes a memory's vector (inside the caller's transaction).
pub fn remove(c: &Connection, memory: i64) -> Result<()> {
    let block: Option<i64> = c
        .prepare_cached("SELECT block FROM vectors WHERE memory_id = ?1")?
        .query_row([memory], |r| r.get(0))
        .optional()?;
    let Some(block) = block else { return Ok(()) };
    c.prepare_cached("DELETE FROM vectors WHERE memory_id = ?1")?.execute([memory])?;
    let row: Option<(i64, Vec<u8>)> = c
        .prepare_cached("SELECT bank_id, data FROM vector_blocks WHERE id = ?1")?
        .query_row([block], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if let Some((bank, data)) = row {
        let kept: Vec<u8> = data
            .chunks_exact(ENTRY)
            .filter(|e| i64::from_le_bytes(e[..8].try_into().expect("8 bytes")) != memory)
            .flatten()
            .copied()
            .collect();
        save(c, bank, block, &kept)?;
    }
    Ok(())
}

/// A memory waiting for its vector: (id, bank, prompt, reply, topic).
pub type Todo = (i64, i64, String, String, String);
/// A vector computed for one: (id, bank, vector; `None` when no token of it is known).
pub type Embedded = (i64, i64, Option<Vec<f32>>);

/// Up to `limit` memories that have no vector yet, newest first (they are the likeliest to be
/// asked about): (id, bank, prompt, reply, topic).
pub fn todo(c: &Connection, limit: usize) -> Result<Vec<Todo>> {
    let mut stmt = c.prepare_cached(
        "SELECT m.id, m.bank_id, m.prompt, m.reply, m.topic FROM memories m
         WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id)
         ORDER BY m.id DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The vectors of `todo`'s memories, on `workers` threads, in order, until `deadline` (at least
/// the first one): (id, bank, vector).
pub fn embed_until(todo: &[Todo], deadline: std::time::Instant, workers: usize) -> Vec<Embedded> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some((id, bank, prompt, reply, topic)) = todo.get(i) else { break };
            if i > 0 && std::time::Instant::now() >= deadline {
                break;
            }
            out.push((i, (*id, *bank, embed(prompt, reply, topic))));
        }
        out
    };
    let mut done: Vec<(usize, Embedded)> = if workers <= 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        })
    };
    done.sort_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}

/// Writes vectors computed outside the transaction (by [`Store::backfill`]) for the memories
/// that still exist and still lack one.
///
/// [`Store::backfill`]: super::Store::backfill
pub fn fill(c: &Connection, done: &[Embedded]) -> Result<()> {
    let mut pending = Pending::default();
    for &(id, bank, ref v) in done {
        let lacks: bool = c
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM memories m WHERE m.id = ?1 AND m.bank_id = ?2
                 AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id))",
            )?
            .query_row(params![id, bank], |r| r.get(0))?;
        if lacks {
            pending.add(bank, id, v.clone());
        }
    }
    pending.flush(c)
}

/// Schema step 9: the vectors of the static table that came before the model are dropped, to be
/// computed again by the model (backfill), newest first.
pub fn step_9(c: &Connection) -> Result<()> {
    c.execute_batch("DELETE FROM vectors; DELETE FROM vector_blocks;")?;
    Ok(())
}

/// Memories without a vector yet.
pub fn missing(c: &Connection) -> Result<i64> {
    Ok(c.query_row(
        "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id)",
        [],
        |r| r.get(0),
    )?)
}

/// The `keep` memories of a bank nearest to a unit query vector, nearest first, with their
/// cosine: the sign bits of every memory choose a [`SHORTLIST`], scored on their int8 codes.
pub fn search(c: &Connection, bank: i64, query: &[f32], keep: usize) -> Result<Vec<(i64, f32)>> {
    let qbits = embed::bits(query);
    // Max-heap on distance: the worst of the shortlist on top, replaced by anything nearer.
    let mut heap: BinaryHeap<(u32, i64)> = BinaryHeap::with_capacity(SHORTLIST + 1);
    let mut stmt = c.prepare_cached("SELECT data FROM vector_blocks WHERE bank_id = ?1")?;
    let mut rows = stmt.query([bank])?;
    while let Some(r) = rows.next()? {
        let data = r.get_ref(0)?.as_blob()?;
        for e in data.chunks_exact(ENTRY) {
            let d = embed::hamming(&e[8..], &qbits);
            if heap.len() < SHORTLIST {
                heap.push((d, i64::from_le_bytes(e[..8].try_into().expect("8 bytes"))));
            } else if heap.peek().is_some_and(|w| d < w.0) {
                heap.pop();
                heap.push((d, i64::from_le_bytes(e[..8].try_into().expect("8 bytes"))));
            }
        }
    }
    let mut ids: Vec<i64> = heap.into_iter().map(|(_, id)| id).collect();
    ids.sort_unstable();
    let mut scored = cosines(c, &ids, query)?;
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    scored.truncate(keep);
    Ok(scored)
}

/// The cosine of the query with each memory that has a vector.
pub fn cosines(c: &Connection, ids: &[i64], query: &[f32]) -> Result<Vec<(i64, f32)>> {
    let mut stmt = c.prepare_cached("SELECT code FROM vectors WHERE memory_id = ?1")?;
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        let mut rows = stmt.query([id])?;
        if let Some(r) = rows.next()? {
            let code = r.get_ref(0)?.as_blob()?;
            if !code.is_empty() {
                out.push((id, Code::cosine(query, code)));
            }
        }
    }
    Ok(out)
}

/// The stored vectors of these memories (those that have one), read back from their codes.
pub fn vectors(c: &Connection, ids: &[i64]) -> Result<std::collections::HashMap<i64, Vec<f32>>> {
    let mut stmt = c.prepare_cached("SELECT code FROM vectors WHERE memory_id = ?1")?;
    let mut out = std::collections::HashMap::with_capacity(ids.len());
    for &id in ids {
        let mut rows = stmt.query([id])?;
        if let Some(r) = rows.next()? {
            if let Some(v) = Code::decode(r.get_ref(0)?.as_blob()?) {
                out.insert(id, v);
            }
        }
    }
    Ok(out)
}

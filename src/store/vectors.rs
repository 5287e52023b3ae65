//! Memory vectors inside the store (schema step 4), so a memory's vectors are removed in its
//! transaction. A memory has one vector for its whole beginning and one per passage of a long
//! prompt or reply ([`crate::embed`]). Each bank's sign bits are packed in blocks of up to [`BLOCK`]
//! entries (`id` + 48 bytes each), first vectors and passages in blocks apart, so a search reads a
//! few rows however large the bank: every first vector, and the newest passages up to
//! [`PASSAGE_SCAN`]. The int8 codes sit one row per memory and are read only for the shortlist the
//! sign bits choose ([`SHORTLIST`]). A memory whose text has no known token gets an
//! empty row, which tells it apart from one not embedded yet (filled in by the backfill).

use std::collections::BinaryHeap;

use anyhow::Result;
use rusqlite::blob::Blob;
use rusqlite::{params, Connection, OptionalExtension};
use rustc_hash::FxHashSet;

use super::parts::{self, Centroids};
use crate::embed::{self, Code, Model, BITS};

/// Entries (vectors) per block of sign bits.
pub const BLOCK: usize = 512;
/// Bytes per entry in a block: its memory's id and its signs.
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

/// A memory's vectors, its whole beginning first, then its passages ([`Model::embed_memory`]);
/// none when no token of it is known.
pub fn embed(prompt: &str, reply: &str, topic: &str) -> Vectors {
    Model::get().embed_memory(prompt, reply, topic)
}

/// A memory's vectors: its whole beginning (which tells its subject), then its passages.
pub type Vectors = Vec<Vec<f32>>;

/// Vectors waiting to be written, grouped per bank when flushed (an import writes thousands).
#[derive(Default)]
pub struct Pending {
    rows: Vec<(i64, i64, Vectors)>,
}

impl Pending {
    pub fn add(&mut self, bank: i64, memory: i64, v: Vectors) {
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

/// The kinds of blocks: memories' first vectors (every one read by a search) and their passages'
/// (read newest first, up to [`PASSAGE_SCAN`] entries).
const HEADS: i64 = 0;
const PASSAGES: i64 = 1;

/// Passage entries a search reads at most, newest first: what bounds its cost in a bank of long
/// turns (a long turn has up to 16), while every memory's first vector is always read.
pub const PASSAGE_SCAN: usize = 100_000;

/// The partition of blocks that are not partitioned: passages', and a small bank's first vectors.
const LOOSE: i64 = -1;

/// A bank's last block of one kind and partition, while it is being filled: (id, entries).
type Tail = Option<(i64, Vec<u8>)>;

fn tail(c: &Connection, bank: i64, kind: i64, part: i64) -> Result<Tail> {
    Ok(c.prepare_cached(
        "SELECT id, data FROM vector_blocks WHERE bank_id = ?1 AND passages = ?2 AND part = ?3
         ORDER BY id DESC LIMIT 1",
    )?
    .query_row([bank, kind, part], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()?)
}

/// Puts a memory's entries in the bank's last block of their kind and partition, or in a new one
/// when they do not all fit (a memory's entries of one kind share a block); returns the block's id.
fn put(
    c: &Connection,
    bank: i64,
    (kind, part): (i64, i64),
    last: &mut Tail,
    memory: i64,
    vs: &[Vec<f32>],
) -> Result<i64> {
    if last.as_ref().is_none_or(|(_, data)| data.len() / ENTRY + vs.len() > BLOCK) {
        if let Some((id, data)) = last.take() {
            save(c, bank, id, &data)?;
        }
        c.prepare_cached("INSERT INTO vector_blocks (bank_id, n, data, passages, part) VALUES (?1, 0, x'', ?2, ?3)")?
            .execute([bank, kind, part])?;
        *last = Some((c.last_insert_rowid(), Vec::with_capacity(BLOCK * ENTRY)));
    }
    let (block, data) = last.as_mut().expect("just set");
    for v in vs {
        data.extend_from_slice(&memory.to_le_bytes());
        data.extend_from_slice(&embed::bits(v));
    }
    Ok(*block)
}

/// Appends memories' vectors to their bank: codes one row per memory, sign bits into the bank's
/// last blocks (first vectors and passages apart, a partitioned bank's first vectors in their
/// partition's) while they have room, then new blocks.
fn append(c: &Connection, bank: i64, rows: &[(i64, i64, Vectors)]) -> Result<()> {
    let parts = centroids(c, bank)?;
    let mut tails: std::collections::BTreeMap<(i64, i64), Tail> = std::collections::BTreeMap::new();
    let mut code_row = c.prepare_cached(
        "INSERT OR REPLACE INTO vectors (memory_id, block, passage_block, code) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (_, memory, vs) in rows {
        if vs.is_empty() {
            code_row.execute(params![memory, 0, None::<i64>, Vec::<u8>::new()])?;
            continue;
        }
        let part = parts.as_ref().map_or(LOOSE, |p| p.nearest(&vs[0]) as i64);
        let mut block = |at: (i64, i64), vs: &[Vec<f32>]| -> Result<i64> {
            let last = match tails.entry(at) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => e.insert(tail(c, bank, at.0, at.1)?),
            };
            put(c, bank, at, last, *memory, vs)
        };
        let head_block = block((HEADS, part), &vs[..1])?;
        let passage_block = if vs.len() > 1 { Some(block((PASSAGES, LOOSE), &vs[1..])?) } else { None };
        let code: Vec<u8> = vs.iter().flat_map(|v| Code::new(v).to_bytes()).collect();
        code_row.execute(params![memory, head_block, passage_block, code])?;
    }
    for (id, data) in tails.into_values().flatten() {
        save(c, bank, id, &data)?;
    }
    Ok(())
}

/// A partitioned bank's centres ([`parts`]); `None` for a bank that is not partitioned.
fn centroids(c: &Connection, bank: i64) -> Result<Option<Centroids>> {
    let bytes: Option<Vec<u8>> = c
        .prepare_cached("SELECT centroids FROM vector_parts WHERE bank_id = ?1")?
        .query_row([bank], |r| r.get(0))
        .optional()?;
    Ok(bytes.and_then(|b| Centroids::from_bytes(&b)))
}

/// The banks whose first vectors are due to be partitioned ([`partition`]).
pub fn partitions_due(c: &Connection) -> Result<Vec<i64>> {
    let mut stmt = c.prepare(
        "SELECT b.bank_id FROM (SELECT bank_id, sum(n) AS heads, sum(part = -1) AS loose FROM vector_blocks
             WHERE passages = 0 GROUP BY bank_id) b
         LEFT JOIN vector_parts p ON p.bank_id = b.bank_id
         WHERE (p.bank_id IS NULL AND b.heads >= ?1) OR (p.bank_id IS NOT NULL AND (b.heads >= 2 * p.heads OR b.loose > 0))",
    )?;
    let rows = stmt.query_map([parts::PARTITION_AT as i64], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Partitions a bank's first vectors by meaning ([`parts`]): reads every one's entry, trains
/// the partitions on a sample of them, and writes them again in blocks of their partition. Due
/// ([`partitions_due`]) when a bank reaches [`parts::PARTITION_AT`], again when it has doubled
/// since, or has taken in another bank's vectors. Seconds at a million memories: `ovmem sync` runs it, never a hook. Returns the
/// entries partitioned.
///
/// The memories' rows are not rewritten (2 GB at a million memories): the block a row names is
/// where its first vector was written, which [`remove`] checks before it searches the partition.
pub fn partition(c: &Connection, bank: i64) -> Result<usize> {
    let mut entries: Vec<u8> = Vec::new();
    {
        let mut stmt = c.prepare("SELECT data FROM vector_blocks WHERE bank_id = ?1 AND passages = ?2 ORDER BY id")?;
        let mut rows = stmt.query([bank, HEADS])?;
        while let Some(r) = rows.next()? {
            let data = r.get_ref(0)?.as_blob()?;
            entries.extend_from_slice(&data[..data.len() / ENTRY * ENTRY]);
        }
    }
    let entries: Vec<&[u8]> = entries.chunks_exact(ENTRY).collect();
    if entries.is_empty() {
        return Ok(0);
    }
    // Trained on an even sample's vectors (decoded from their codes), each entry placed by its
    // signs: reading every memory's codes would read 2 GB at a million memories.
    let id = |e: &[u8]| i64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
    let sample: Vec<Vec<f32>> = {
        let ids: Vec<i64> = entries.iter().step_by(entries.len().div_ceil(parts::SAMPLE)).map(|e| id(e)).collect();
        let mut read = vectors(c, &ids)?;
        ids.iter().filter_map(|i| read.remove(i)).collect()
    };
    let parts = Centroids::train(&sample);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let placed: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = entries
            .chunks(entries.len().div_ceil(workers))
            .map(|chunk| s.spawn(|| chunk.iter().map(|e| parts.nearest_signs(&e[8..])).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("placing entries does not panic")).collect()
    });
    let mut by_part: Vec<Vec<&[u8]>> = vec![Vec::new(); parts.len()];
    for (e, &part) in entries.iter().zip(&placed) {
        by_part[part].push(e);
    }
    c.execute("DELETE FROM vector_blocks WHERE bank_id = ?1 AND passages = ?2", [bank, HEADS])?;
    let mut insert =
        c.prepare_cached("INSERT INTO vector_blocks (bank_id, n, data, passages, part) VALUES (?1, ?2, ?3, ?4, ?5)")?;
    for (part, members) in by_part.iter().enumerate() {
        for chunk in members.chunks(BLOCK) {
            insert.execute(params![bank, chunk.len() as i64, chunk.concat(), HEADS, part as i64])?;
        }
    }
    c.execute(
        "INSERT OR REPLACE INTO vector_parts (bank_id, heads, centroids) VALUES (?1, ?2, ?3)",
        params![bank, entries.len() as i64, parts.to_bytes()],
    )?;
    Ok(entries.len())
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

/// Removes a memory's vectors (inside the caller's transaction); `bank` is the id of the bank it
/// was in. Its first vector is looked for in the block its row names, where it was written; when
/// its bank has been partitioned since ([`partition`]), in its partition's blocks, then in every
/// block of the bank's first vectors.
pub fn remove(c: &Connection, memory: i64, bank: Option<i64>) -> Result<()> {
    let row: Option<(i64, Option<i64>, Vec<u8>)> = c
        .prepare_cached("SELECT block, passage_block, code FROM vectors WHERE memory_id = ?1")?
        .query_row([memory], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let Some((block, passage_block, code)) = row else { return Ok(()) };
    c.prepare_cached("DELETE FROM vectors WHERE memory_id = ?1")?.execute([memory])?;
    if let Some(passages) = passage_block {
        drop_entries(c, passages, memory)?;
    }
    // An empty row (no known token) has no entries.
    let Some(first) = code.get(..embed::CODE_BYTES).and_then(Code::decode) else { return Ok(()) };
    if drop_entries(c, block, memory)? {
        return Ok(());
    }
    let Some(bank) = bank else { return Ok(()) };
    let part = centroids(c, bank)?.map_or(LOOSE, |p| p.nearest_signs(&embed::bits(&first)) as i64);
    let blocks: Vec<i64> = c
        .prepare_cached(
            "SELECT id FROM vector_blocks WHERE bank_id = ?1 AND passages = ?2 ORDER BY part = ?3 DESC, id",
        )?
        .query_map([bank, HEADS, part], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for block in blocks {
        if drop_entries(c, block, memory)? {
            break;
        }
    }
    Ok(())
}

/// Removes a memory's entries from a block; whether it held any.
fn drop_entries(c: &Connection, block: i64, memory: i64) -> Result<bool> {
    let row: Option<(i64, Vec<u8>)> = c
        .prepare_cached("SELECT bank_id, data FROM vector_blocks WHERE id = ?1")?
        .query_row([block], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((bank, data)) = row else { return Ok(false) };
    let kept: Vec<u8> = data
        .chunks_exact(ENTRY)
        .filter(|e| i64::from_le_bytes(e[..8].try_into().expect("8 bytes")) != memory)
        .flatten()
        .copied()
        .collect();
    if kept.len() == data.len() / ENTRY * ENTRY {
        return Ok(false);
    }
    save(c, bank, block, &kept)?;
    Ok(true)
}

/// A memory waiting for its vector: (id, bank, prompt, reply, topic).
pub type Todo = (i64, i64, String, String, String);
/// The vectors computed for one: (id, bank, vectors; none when no token of it is known).
pub type Embedded = (i64, i64, Vectors);

/// Up to `limit` memories that have no vector yet, newest first (they are the likeliest to be
/// asked about): (id, bank, prompt, reply, topic).
pub fn todo(c: &Connection, limit: usize) -> Result<Vec<Todo>> {
    let mut stmt = c.prepare_cached(
        "SELECT m.id, m.bank_id, m.prompt, m.reply, m.topic FROM vectors_todo t
         JOIN memories m ON m.id = t.id ORDER BY t.id DESC LIMIT ?1",
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
/// computed again by the model (backfill, newest first).
pub fn step_9(c: &Connection) -> Result<()> {
    c.execute_batch("DELETE FROM vectors; DELETE FROM vector_blocks;")?;
    Ok(())
}

/// Schema step 11: a memory's passages get vectors of their own, in blocks of their own (and its
/// row the block of its passages'); the one vector each memory had is dropped, to be computed
/// again with its passages (backfill, newest first).
pub fn step_11(c: &Connection) -> Result<()> {
    c.execute_batch(
        "DELETE FROM vectors; DELETE FROM vector_blocks;
         ALTER TABLE vector_blocks ADD COLUMN passages INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE vectors ADD COLUMN passage_block INTEGER;
         DROP INDEX vector_blocks_bank;
         CREATE INDEX vector_blocks_bank ON vector_blocks (bank_id, passages, id);",
    )?;
    Ok(())
}

/// Schema step 12: the memories without vectors are kept in a queue (`vectors_todo`) by
/// triggers, so finding them does not read the whole bank. The anti-join it replaces read every
/// memory's row at each stop and session start, even when none was missing: about 4 ms of a Stop
/// hook at 10,000 memories, growing with the bank.
pub fn step_12(c: &Connection) -> Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS vectors_todo (id INTEGER PRIMARY KEY);
         INSERT OR IGNORE INTO vectors_todo (id)
             SELECT m.id FROM memories m WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id);
         CREATE TRIGGER IF NOT EXISTS vectors_todo_added AFTER INSERT ON memories
             BEGIN INSERT OR IGNORE INTO vectors_todo (id) VALUES (new.id); END;
         CREATE TRIGGER IF NOT EXISTS vectors_todo_forgotten AFTER DELETE ON memories
             BEGIN DELETE FROM vectors_todo WHERE id = old.id; END;
         CREATE TRIGGER IF NOT EXISTS vectors_todo_embedded AFTER INSERT ON vectors
             BEGIN DELETE FROM vectors_todo WHERE id = new.memory_id; END;
         CREATE TRIGGER IF NOT EXISTS vectors_todo_dropped AFTER DELETE ON vectors
             WHEN EXISTS (SELECT 1 FROM memories WHERE id = old.memory_id)
             BEGIN INSERT OR IGNORE INTO vectors_todo (id) VALUES (old.memory_id); END;",
    )?;
    Ok(())
}

/// Schema step 14: a large bank's first vectors are partitioned by meaning ([`parts`]); a
/// block's partition is kept with it ([`LOOSE`] for blocks not partitioned), and each
/// partitioned bank's centres with the count of first vectors they were trained on.
pub fn step_14(c: &Connection) -> Result<()> {
    c.execute_batch(
        "ALTER TABLE vector_blocks ADD COLUMN part INTEGER NOT NULL DEFAULT -1;
         DROP INDEX IF EXISTS vector_blocks_bank;
         CREATE INDEX vector_blocks_bank ON vector_blocks (bank_id, passages, part, id, n);
         CREATE TABLE vector_parts (
             bank_id   INTEGER PRIMARY KEY,
             heads     INTEGER NOT NULL,
             centroids BLOB NOT NULL
         );",
    )?;
    Ok(())
}

/// Schema step 13: the index of the blocks holds their entry counts, so a search lists a bank's
/// blocks from the index alone. Listing them from their rows read one table page per block (a
/// block's row fills its page), 3.6 ms of a prompt hook at a million memories.
pub fn step_13(c: &Connection) -> Result<()> {
    c.execute_batch(
        "DROP INDEX IF EXISTS vector_blocks_bank;
         CREATE INDEX vector_blocks_bank ON vector_blocks (bank_id, passages, id, n);",
    )?;
    Ok(())
}

/// Memories without a vector yet.
pub fn missing(c: &Connection) -> Result<i64> {
    Ok(c.query_row("SELECT count(*) FROM vectors_todo", [], |r| r.get(0))?)
}

/// The `keep` memories of a bank nearest to a unit query vector, nearest first, with their
/// cosine: the sign bits of every memory choose a [`SHORTLIST`], scored on their int8 codes.
pub fn search(c: &Connection, bank: i64, query: &[f32], keep: usize) -> Result<Vec<(i64, f32)>> {
    Ok(nearest_read(c, bank, query, keep)?.into_iter().map(|(id, (_, cos))| (id, cos)).collect())
}

/// [`search`] with each memory's first vector too (its subject, as [`read`] gives it), decoded
/// from the codes the search has read already.
pub fn nearest_read(c: &Connection, bank: i64, query: &[f32], keep: usize) -> Result<Vec<(i64, Read)>> {
    Ok(nearest_meanwhile(c, bank, || true, || Some(query.to_vec()), keep, None)?.near)
}

/// What [`nearest_meanwhile`] found.
pub struct Found {
    /// The query vector (`None` when it has none).
    pub query: Option<Vec<f32>>,
    /// The memories nearest to it, with their subjects and cosines, nearest first.
    pub near: Vec<(i64, Read)>,
    /// The same among the memories it was asked to look among apart, up to [`AMONG_KEEP`].
    pub among: Vec<(i64, Read)>,
}

/// Memories of `among` (those written within a question's window of time) kept by their own
/// sign bits, and by their cosines: found by meaning when they are not among the nearest of the
/// whole bank, as the window's best by words are.
const AMONG_SHORTLIST: usize = 80;
pub const AMONG_KEEP: usize = 10;

/// [`nearest_read`] for a query vector that may still be computing on the other core (`query`
/// waits for it; `ready` says whether it would wait): returns it with what it found.
///
/// The sign bits searched are every first vector's and the newest passages' up to
/// [`PASSAGE_SCAN`] entries, all read in one snapshot (a transaction of their own unless one is
/// open already). While the query is not ready, their blocks are read ahead into one buffer (a
/// recall reads them while its question is encoded); once it is, each block left is compared as
/// it is read, in a buffer of one block. Copying a large bank's blocks into one buffer costs a
/// page fault per 4 kB written, which at 300,000 memories was most of the read.
///
/// `among`: memories to look for apart as well (those written within the question's window of
/// time), the [`AMONG_KEEP`] nearest of them, among the entries searched.
pub fn nearest_meanwhile(
    c: &Connection,
    bank: i64,
    ready: impl Fn() -> bool,
    query: impl FnOnce() -> Option<Vec<f32>>,
    keep: usize,
    among: Option<&FxHashSet<i64>>,
) -> Result<Found> {
    let own = c.is_autocommit();
    if own {
        c.execute_batch("BEGIN")?;
    }
    let found = shortlisted(c, bank, ready, query, among);
    let ended = if own { c.execute_batch("COMMIT") } else { Ok(()) };
    let (query, ids, apart) = found?;
    ended?;
    let Some(query) = query else { return Ok(Found { query: None, near: Vec::new(), among: Vec::new() }) };
    // A memory's passages are entries of their own, and a memory of the window may be on both
    // shortlists: each is read and scored once.
    let mut all: Vec<i64> = ids.iter().chain(&apart).copied().collect();
    all.sort_unstable();
    all.dedup();
    let mut scored = scan(c, &all, Some(&query), |codes| <[u8; embed::CODE_BYTES]>::try_from(first(codes)?).ok())?;
    scored.sort_by(|a, b| b.2.total_cmp(&a.2).then(b.0.cmp(&a.0)));
    let nearest = |of: &[i64], keep: usize| -> Vec<(i64, Read)> {
        let of: FxHashSet<i64> = of.iter().copied().collect();
        let taken = scored.iter().filter(|(id, _, _)| of.contains(id)).take(keep);
        taken.filter_map(|(id, first, cos)| Some((*id, (Code::decode(first)?, *cos)))).collect()
    };
    let (near, among) = (nearest(&ids, keep), nearest(&apart, AMONG_KEEP));
    Ok(Found { query: Some(query), near, among })
}

/// The blocks a search reads whatever its question, with their sizes in bytes as their entry
/// counts give them (from the index alone): the first vectors not partitioned (every one of a
/// bank smaller than [`parts::PARTITION_AT`]), then the passages' newest first.
fn blocks(c: &Connection, bank: i64) -> Result<Vec<(i64, usize)>> {
    let mut blocks: Vec<(i64, usize)> = Vec::new();
    let mut stmt = c.prepare_cached(
        "SELECT id, n FROM vector_blocks WHERE bank_id = ?1 AND passages = ?2 AND part = ?3 ORDER BY id",
    )?;
    let mut rows = stmt.query([bank, HEADS, LOOSE])?;
    while let Some(r) = rows.next()? {
        blocks.push((r.get(0)?, r.get::<_, usize>(1)? * ENTRY));
    }
    let mut stmt = c.prepare_cached(
        "SELECT id, n FROM vector_blocks WHERE bank_id = ?1 AND passages = ?2 AND part = ?3 ORDER BY id DESC",
    )?;
    let mut rows = stmt.query([bank, PASSAGES, LOOSE])?;
    let mut passages = 0;
    while passages < PASSAGE_SCAN {
        let Some(r) = rows.next()? else { break };
        let n: usize = r.get(1)?;
        blocks.push((r.get(0)?, n * ENTRY));
        passages += n;
    }
    Ok(blocks)
}

/// The blocks of a partitioned bank's first vectors that a search for `query` reads: those of the
/// partitions nearest to it, until they hold `probe` entries ([`parts::PROBE`]).
fn probed(
    c: &Connection,
    bank: i64,
    parts: &Centroids,
    query: &[f32],
    probe: Option<usize>,
) -> Result<Vec<(i64, usize)>> {
    let mut of_part: std::collections::HashMap<i64, Vec<(i64, usize)>> = std::collections::HashMap::new();
    let mut stmt =
        c.prepare_cached("SELECT part, id, n FROM vector_blocks WHERE bank_id = ?1 AND passages = ?2 AND part >= 0")?;
    let mut rows = stmt.query([bank, HEADS])?;
    let mut heads = 0;
    while let Some(r) = rows.next()? {
        let n: usize = r.get(2)?;
        heads += n;
        of_part.entry(r.get(0)?).or_default().push((r.get(1)?, n * ENTRY));
    }
    let probe = probe.unwrap_or_else(|| parts::probe_for(heads));
    let mut blocks = Vec::new();
    let mut entries = 0;
    for part in parts.ranked(query) {
        if entries >= probe {
            break;
        }
        for b in of_part.remove(&(part as i64)).unwrap_or_default() {
            entries += b.1 / ENTRY;
            blocks.push(b);
        }
    }
    Ok(blocks)
}

/// Bytes of blocks read ahead at most while a question is encoded: a larger buffer costs more
/// in page faults than reading ahead saves.
const AHEAD: usize = 16 << 20;

/// The query, the memories shortlisted, and those of `among`'s ([`shortlisted`]).
type Shortlisted = (Option<Vec<f32>>, Vec<i64>, Vec<i64>);

/// [`nearest_meanwhile`]'s snapshot: the query, the memories of the [`SHORTLIST`] entries
/// nearest to it, and of the [`AMONG_SHORTLIST`] nearest of `among`'s. The blocks every search
/// reads are read ahead while the question is encoded; a partitioned bank's nearest partitions,
/// once it is known.
fn shortlisted(
    c: &Connection,
    bank: i64,
    ready: impl Fn() -> bool,
    query: impl FnOnce() -> Option<Vec<f32>>,
    among: Option<&FxHashSet<i64>>,
) -> Result<Shortlisted> {
    let blocks = blocks(c, bank)?;
    let parts = centroids(c, bank)?;
    let mut blob = None;
    // Zeroed by the allocator: only the pages written to are ever mapped.
    let mut ahead = vec![0u8; if ready() { 0 } else { blocks.iter().map(|b| b.1).sum::<usize>().min(AHEAD) }];
    // The bytes read are the blob's own (its length as it is), the listed sizes only plan them.
    let (mut taken, mut at) = (0, 0);
    for &(id, _) in &blocks {
        if ready() {
            break;
        }
        let (block, len) = entries_of(c, &mut blob, id)?;
        if at + len > ahead.len() {
            break;
        }
        block.read_at_exact(&mut ahead[at..at + len], 0)?;
        (taken, at) = (taken + 1, at + len);
    }
    let Some(query) = query() else { return Ok((None, Vec::new(), Vec::new())) };
    // A partitioned bank's search reads only the partitions nearest the question, where a memory
    // of the window said in other words may not be: a window of few memories is scored whole,
    // and needs no shortlist of its own.
    let whole = among.filter(|a| parts.is_some() && a.len() <= AMONG_WHOLE);
    let mut nearest = Shortlist::new(&query, if whole.is_some() { None } else { among });
    nearest.offer(&ahead[..at]);
    drop(ahead);
    offer_each(c, &mut blob, &blocks[taken..], &mut nearest)?;
    if let Some(parts) = &parts {
        let probed = probed(c, bank, parts, &query, probe())?;
        offer_each(c, &mut blob, &probed, &mut nearest)?;
    }
    let (ids, apart) = nearest.ids();
    let apart = whole.map_or(apart, |w| w.iter().copied().collect());
    Ok((Some(query), ids, apart))
}

/// A window of time holding at most this many memories is scored whole in a partitioned bank (a
/// code read for each, about a millisecond for 400).
const AMONG_WHOLE: usize = SHORTLIST;

/// How many first vectors a search of a partitioned bank reads, when not as its size says
/// ([`parts::probe_for`]): fewer in tests, whose banks are small.
fn probe() -> Option<usize> {
    #[cfg(test)]
    if let Some(n) = PROBE_IN_TEST.get() {
        return Some(n);
    }
    None
}

#[cfg(test)]
thread_local! {
    static PROBE_IN_TEST: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Offers each of these blocks to the shortlist as it is read, in a buffer of one block.
fn offer_each<'c>(
    c: &'c Connection,
    blob: &mut Option<Blob<'c>>,
    blocks: &[(i64, usize)],
    nearest: &mut Shortlist,
) -> Result<()> {
    let mut one = vec![0u8; BLOCK * ENTRY];
    for &(id, _) in blocks {
        let (block, len) = entries_of(c, blob, id)?;
        if len > one.len() {
            one.resize(len, 0);
        }
        block.read_at_exact(&mut one[..len], 0)?;
        nearest.offer(&one[..len]);
    }
    Ok(())
}

/// Points `blob` at block `id` (opening it at the first block a search reads) and gives it with
/// the bytes of its whole entries: the blob's own length, whatever its listed count says.
fn entries_of<'a, 'c>(
    c: &'c Connection,
    blob: &'a mut Option<Blob<'c>>,
    id: i64,
) -> rusqlite::Result<(&'a mut Blob<'c>, usize)> {
    let block = match blob {
        Some(b) => {
            b.reopen(id)?;
            b
        }
        None => blob.insert(c.blob_open(rusqlite::DatabaseName::Main, "vector_blocks", "data", id, true)?),
    };
    let len = block.len() / ENTRY * ENTRY;
    Ok((block, len))
}

/// The [`SHORTLIST`] entries nearest to a query among those offered (fewest differing signs),
/// and the [`AMONG_SHORTLIST`] nearest of those of `among`'s memories.
struct Shortlist<'a> {
    bits: embed::Bits,
    /// Max-heap on distance: the worst of the shortlist on top, replaced by anything nearer.
    heap: BinaryHeap<(u32, i64)>,
    among: Option<&'a FxHashSet<i64>>,
    /// The least and the greatest id of `among`, so that most entries are passed over unlooked-up.
    span: (i64, i64),
    apart: BinaryHeap<(u32, i64)>,
}

/// Offers an entry at distance `d` to a max-heap of at most `keep`.
fn keep_nearest(heap: &mut BinaryHeap<(u32, i64)>, keep: usize, d: u32, id: i64) {
    if heap.len() < keep {
        heap.push((d, id));
    } else if heap.peek().is_some_and(|w| d < w.0) {
        heap.pop();
        heap.push((d, id));
    }
}

impl<'a> Shortlist<'a> {
    fn new(query: &[f32], among: Option<&'a FxHashSet<i64>>) -> Shortlist<'a> {
        let among = among.filter(|a| !a.is_empty());
        let span =
            among.map_or((1, 0), |a| a.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &id| (lo.min(id), hi.max(id))));
        Shortlist {
            bits: embed::bits(query),
            heap: BinaryHeap::with_capacity(SHORTLIST + 1),
            among,
            span,
            apart: BinaryHeap::new(),
        }
    }

    /// Takes in whole entries (`id` + signs).
    fn offer(&mut self, entries: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            #[target_feature(enable = "popcnt")]
            unsafe fn counted(list: &mut Shortlist, entries: &[u8]) {
                list.offer_each(entries)
            }
            // SAFETY: the CPU counts bits in one instruction (checked above).
            return unsafe { counted(self, entries) };
        }
        self.offer_each(entries)
    }

    #[inline(always)]
    fn offer_each(&mut self, entries: &[u8]) {
        let id = |e: &[u8]| i64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
        let (lo, hi) = self.span;
        for e in entries.chunks_exact(ENTRY) {
            let d = embed::hamming(&e[8..], &self.bits);
            keep_nearest(&mut self.heap, SHORTLIST, d, id(e));
            if let Some(among) = self.among {
                let id = id(e);
                if (lo..=hi).contains(&id) && among.contains(&id) {
                    keep_nearest(&mut self.apart, AMONG_SHORTLIST, d, id);
                }
            }
        }
    }

    /// The shortlist's memories, and those of `among`'s.
    fn ids(self) -> (Vec<i64>, Vec<i64>) {
        let ids = |heap: BinaryHeap<(u32, i64)>| heap.into_iter().map(|(_, id)| id).collect();
        (ids(self.heap), ids(self.apart))
    }
}

/// The cosine of the query with each memory that has a vector: with the nearest of its vectors.
pub fn cosines(c: &Connection, ids: &[i64], query: &[f32]) -> Result<Vec<(i64, f32)>> {
    Ok(scan(c, ids, Some(query), |codes| first(codes).map(|_| ()))?.into_iter().map(|(id, _, cos)| (id, cos)).collect())
}

/// A memory's first vector (its subject) and the cosine of a query with the nearest of its vectors.
pub type Read = (Vec<f32>, f32);

/// Each of these memories that has a vector: its first one (its subject, see [`Vectors`]) and
/// the cosine of the query with the nearest of them, in `ids`' order.
pub fn read(c: &Connection, ids: &[i64], query: &[f32]) -> Result<Vec<(i64, Read)>> {
    Ok(scan(c, ids, Some(query), |codes| Code::decode(first(codes)?))?
        .into_iter()
        .map(|(id, head, cos)| (id, (head, cos)))
        .collect())
}

/// Every vector of these memories (their subject's, then their passages'), for those that have
/// vectors.
pub fn passages(c: &Connection, ids: &[i64]) -> Result<super::rank::Passages> {
    let all = |codes: &[u8]| Some(codes.chunks_exact(embed::CODE_BYTES).filter_map(Code::decode).collect());
    Ok(scan(c, ids, None, all)?.into_iter().map(|(id, all, _)| (id, all)).collect())
}

/// The first stored vector of these memories (those that have one: their subject), read back
/// from its code.
pub fn vectors(c: &Connection, ids: &[i64]) -> Result<std::collections::HashMap<i64, Vec<f32>>> {
    Ok(scan(c, ids, None, |codes| Code::decode(first(codes)?))?.into_iter().map(|(id, head, _)| (id, head)).collect())
}

/// A memory's first code (its subject's) among its codes.
fn first(codes: &[u8]) -> Option<&[u8]> {
    codes.get(..embed::CODE_BYTES)
}

/// The one reader of memories' codes: for each of `ids` that has vectors, in order, what `take`
/// takes of its codes (a memory it gives nothing for is left out) and the cosine of `query` with
/// the nearest of its vectors (0 without a query).
fn scan<T>(
    c: &Connection,
    ids: &[i64],
    query: Option<&[f32]>,
    take: impl Fn(&[u8]) -> Option<T>,
) -> Result<Vec<(i64, T, f32)>> {
    let mut stmt = c.prepare_cached("SELECT code FROM vectors WHERE memory_id = ?1")?;
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        let mut rows = stmt.query([id])?;
        let Some(r) = rows.next()? else { continue };
        let codes = r.get_ref(0)?.as_blob()?;
        let Some(taken) = take(codes) else { continue };
        let cos = query.map_or(0.0, |q| {
            codes.chunks_exact(embed::CODE_BYTES).map(|code| Code::cosine(q, code)).fold(f32::MIN, f32::max)
        });
        out.push((id, taken, cos));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids of every first-vector entry of a bank, sorted, and the partitions of its blocks.
    fn heads(c: &Connection, bank: i64) -> (Vec<i64>, Vec<i64>) {
        let mut stmt = c.prepare("SELECT part, data FROM vector_blocks WHERE bank_id = ?1 AND passages = 0").unwrap();
        let rows: Vec<(i64, Vec<u8>)> =
            stmt.query_map([bank], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect();
        let mut ids: Vec<i64> = rows
            .iter()
            .flat_map(|(_, d)| d.chunks_exact(ENTRY).map(|e| i64::from_le_bytes(e[..8].try_into().unwrap())))
            .collect();
        ids.sort_unstable();
        (ids, rows.iter().map(|r| r.0).collect())
    }

    #[test]
    fn a_bank_is_due_for_partitions_at_its_size_again_when_doubled_and_after_a_merge() {
        let s = crate::store::Store::open_in_memory().unwrap();
        let c = &*s.conn;
        c.execute("INSERT INTO banks (id, name, docs, len) VALUES (7, 'project:/big', 0, 0)", []).unwrap();
        let block = |n: usize, part: i64| {
            c.execute(
                "INSERT INTO vector_blocks (bank_id, n, data, passages, part) VALUES (7, ?1, x'', 0, ?2)",
                params![n as i64, part],
            )
            .unwrap();
        };
        let at = parts::PARTITION_AT;
        block(at - 1, LOOSE);
        // Passages do not count.
        c.execute("INSERT INTO vector_blocks (bank_id, n, data, passages) VALUES (7, 5, x'', 1)", []).unwrap();
        assert!(partitions_due(c).unwrap().is_empty());
        block(1, LOOSE);
        assert_eq!(partitions_due(c).unwrap(), vec![7]);
        assert_eq!(s.stats().unwrap().to_partition, vec!["project:/big".to_string()]);
        // Partitioned at that size: due again once it has doubled, or holds vectors outside.
        c.execute("DELETE FROM vector_blocks WHERE passages = 0", []).unwrap();
        block(at, 0);
        c.execute("INSERT INTO vector_parts (bank_id, heads, centroids) VALUES (7, ?1, x'00')", [at as i64]).unwrap();
        assert!(partitions_due(c).unwrap().is_empty());
        block(at - 1, 1);
        assert!(partitions_due(c).unwrap().is_empty());
        block(1, 1);
        assert_eq!(partitions_due(c).unwrap(), vec![7], "doubled");
        c.execute("UPDATE vector_parts SET heads = ?1", [2 * at as i64]).unwrap();
        assert!(partitions_due(c).unwrap().is_empty());
        block(1, LOOSE);
        assert_eq!(partitions_due(c).unwrap(), vec![7], "merged in");
    }

    #[test]
    fn a_partitioned_bank_finds_what_it_found_before_and_keeps_every_entry() {
        let s = crate::store::Store::open_in_memory().unwrap();
        let c = &*s.conn;
        let (vs, _) = super::super::parts::tests::clustered(20, 1_500, 3);
        let mut pending = Pending::default();
        for (i, v) in vs.iter().enumerate() {
            // Every third memory has passages too.
            let mut all = vec![v.clone()];
            if i % 3 == 0 {
                all.push(vs[(i + 7) % vs.len()].clone());
            }
            pending.add(1, 1 + i as i64, all);
        }
        pending.flush(c).unwrap();
        assert!(partitions_due(c).unwrap().is_empty(), "a small bank is not due");
        let before: Vec<Vec<(i64, f32)>> = (0..10).map(|q| search(c, 1, &vs[q * 97], 20).unwrap()).collect();
        assert_eq!(partition(c, 1).unwrap(), vs.len());
        let (ids, parts) = heads(c, 1);
        assert_eq!(ids, (1..=vs.len() as i64).collect::<Vec<_>>(), "every first vector once");
        assert!(parts.iter().all(|&p| p >= 0), "every block of first vectors in a partition");
        let centres = centroids(c, 1).unwrap().expect("centres kept");
        assert_eq!(centres.len(), vs.len() / 39);
        assert!(blocks(c, 1).unwrap().len() == 1, "the passages' block alone is read whatever the question");
        // Probing as many entries as the bank has reads it all: the same results.
        for (q, found) in before.iter().enumerate() {
            assert_eq!(&search(c, 1, &vs[q * 97], 20).unwrap(), found, "question {q}");
            assert_eq!(found[0].0, 1 + q as i64 * 97);
        }
        // A bank without passages reads nothing but its nearest partitions.
        let mut only_heads = Pending::default();
        for (i, v) in vs.iter().enumerate().take(400) {
            only_heads.add(3, 10_000 + i as i64, vec![v.clone()]);
        }
        only_heads.flush(c).unwrap();
        let found = search(c, 3, &vs[50], 10).unwrap();
        partition(c, 3).unwrap();
        assert!(blocks(c, 3).unwrap().is_empty());
        assert_eq!(search(c, 3, &vs[50], 10).unwrap(), found);
        assert_eq!(found[0].0, 10_050);
        // A smaller probe reads the query's own partition first, and stops once it has enough.
        let q = &vs[5];
        let few = probed(c, 1, &centres, q, Some(10)).unwrap();
        let own = centres.nearest_signs(&embed::bits(q)) as i64;
        let part_of = |block: i64| -> i64 {
            c.query_row("SELECT part FROM vector_blocks WHERE id = ?1", [block], |r| r.get(0)).unwrap()
        };
        assert!(few.iter().all(|b| part_of(b.0) == centres.ranked(q)[0] as i64));
        assert_eq!(part_of(few[0].0), own);
        // A memory added later goes to its partition; a forgotten one leaves it, though its row
        // names the block it was first written to.
        let mut later = Pending::default();
        later.add(1, 5_000, vec![vs[5].clone()]);
        later.flush(c).unwrap();
        let block: i64 = c.query_row("SELECT block FROM vectors WHERE memory_id = 5000", [], |r| r.get(0)).unwrap();
        assert_eq!(part_of(block), centres.nearest(&vs[5]) as i64);
        assert!(search(c, 1, &vs[5], 3).unwrap().iter().any(|f| f.0 == 5_000));
        for gone in [5_000, 6, 7, 1_500] {
            remove(c, gone, Some(1)).unwrap();
        }
        let (ids, _) = heads(c, 1);
        assert_eq!(ids.len(), vs.len() - 3);
        assert!(![6, 7, 1_500, 5_000].iter().any(|g| ids.contains(g)));
        assert!(!search(c, 1, &vs[6], 20).unwrap().iter().any(|f| f.0 == 6));
        // Taking in another bank's vectors leaves them outside the partitions, read by every
        // search, until the bank is partitioned again.
        let mut other = Pending::default();
        other.add(2, 9_000, vec![vs[9].clone()]);
        other.flush(c).unwrap();
        c.execute("UPDATE vector_blocks SET bank_id = 1, part = -1 WHERE bank_id = 2", []).unwrap();
        assert_eq!(partitions_due(c).unwrap(), vec![1]);
        assert_eq!(blocks(c, 1).unwrap().len(), 2);
        partition(c, 1).unwrap();
        assert!(partitions_due(c).unwrap().is_empty());
        assert_eq!(heads(c, 1).0.len(), vs.len() - 3 + 1);
    }

    /// A question that is ready once it has been asked after `flip` times.
    fn ready_after(flip: usize) -> impl Fn() -> bool {
        let asked = std::cell::Cell::new(0);
        move || {
            asked.set(asked.get() + 1);
            asked.get() > flip
        }
    }

    /// Bank 1 of 1,200 memories (ids from 1), one vector each, in eight clusters: the vectors and
    /// each one's cluster.
    fn clustered_bank(c: &Connection) -> (Vec<Vec<f32>>, Vec<usize>) {
        let (vs, group) = super::super::parts::tests::clustered(8, 1_200, 11);
        let mut pending = Pending::default();
        for (i, v) in vs.iter().enumerate() {
            pending.add(1, 1 + i as i64, vec![v.clone()]);
        }
        pending.flush(c).unwrap();
        (vs, group)
    }

    /// A question's window of time holds a few memories far from it by meaning, behind a whole
    /// bank of nearer ones: the nearest of the window's are found apart, by their own sign bits
    /// and cosines, where the bank's nearest leave them out.
    #[test]
    fn the_nearest_of_a_window_are_found_apart_from_the_whole_banks_nearest() {
        let s = crate::store::Store::open_in_memory().unwrap();
        let c = &*s.conn;
        let (vs, group) = clustered_bank(c);
        let query = vs[0].clone();
        // The window: every memory of another group among the ids 300-700, and an id the bank
        // does not hold.
        let window: FxHashSet<i64> =
            (300..700).filter(|&i| group[i] != group[0]).map(|i| 1 + i as i64).chain([999_999]).collect();
        let cos = |id: i64| embed::dot(&query, &vs[id as usize - 1]);
        let mut want: Vec<i64> = window.iter().copied().filter(|&id| id <= vs.len() as i64).collect();
        want.sort_by(|a, b| cos(*b).total_cmp(&cos(*a)));
        let found = nearest_meanwhile(c, 1, || true, || Some(query.clone()), 50, Some(&window)).unwrap();
        assert_eq!(found.near.len(), 50);
        assert!(
            found.near.iter().all(|(id, _)| group[*id as usize - 1] == group[0]),
            "the bank's nearest: its own group"
        );
        let among: Vec<i64> = found.among.iter().map(|(id, _)| *id).collect();
        assert_eq!(among.len(), AMONG_KEEP);
        assert!(among.iter().all(|id| window.contains(id)), "only the window's: {among:?}");
        assert_eq!(among[0], want[0], "the window's nearest first");
        let hits = among.iter().filter(|id| want[..AMONG_KEEP].contains(id)).count();
        assert!(
            hits >= AMONG_KEEP - 2,
            "the window's nearest, as codes and sign bits tell: {among:?} against {want:?}"
        );
        assert!(found.among.windows(2).all(|w| w[0].1 .1 >= w[1].1 .1), "nearest first");
        // Without a window, nothing apart.
        let found = nearest_meanwhile(c, 1, || true, || Some(query.clone()), 50, None).unwrap();
        assert!(found.among.is_empty());
        let empty = FxHashSet::default();
        assert!(nearest_meanwhile(c, 1, || true, || Some(query.clone()), 50, Some(&empty)).unwrap().among.is_empty());
    }

    /// In a partitioned bank a search reads the partitions nearest the question; a window of few
    /// memories far from it by meaning is scored whole, so its nearest are still found.
    #[test]
    fn a_windows_memories_in_partitions_not_read_are_still_found_by_meaning() {
        let s = crate::store::Store::open_in_memory().unwrap();
        let c = &*s.conn;
        let (vs, group) = clustered_bank(c);
        partition(c, 1).unwrap();
        let query = vs[0].clone();
        let window: FxHashSet<i64> =
            (0..vs.len()).filter(|&i| group[i] != group[0]).take(40).map(|i| 1 + i as i64).collect();
        PROBE_IN_TEST.set(Some(100));
        let found = nearest_meanwhile(c, 1, || true, || Some(query.clone()), 50, Some(&window));
        PROBE_IN_TEST.set(None);
        let found = found.unwrap();
        assert!(
            found.near.iter().all(|(id, _)| !window.contains(id)),
            "the partitions read are the question's, not the window's"
        );
        let mut want = read(c, &window.iter().copied().collect::<Vec<_>>(), &query).unwrap();
        want.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1).then(b.0.cmp(&a.0)));
        let among: Vec<i64> = found.among.iter().map(|(id, _)| *id).collect();
        let want: Vec<i64> = want.iter().take(AMONG_KEEP).map(|(id, _)| *id).collect();
        assert_eq!(among, want, "the window's nearest, by their codes");
    }

    #[test]
    fn a_search_reads_every_first_vectors_block_then_the_newest_passages_blocks() {
        let s = crate::store::Store::open_in_memory().unwrap();
        let c = &*s.conn;
        let block = |first: i64, n: usize| -> Vec<u8> {
            (0..n as i64)
                .flat_map(|i| {
                    let id = first + i;
                    id.to_le_bytes().into_iter().chain((0..BITS).map(move |b| (id as usize * 7 + b) as u8))
                })
                .collect()
        };
        let mut insert =
            c.prepare("INSERT INTO vector_blocks (bank_id, n, passages, data) VALUES (?1, ?2, ?3, ?4)").unwrap();
        let mut add = |bank: i64, kind: i64, first: i64, n: usize| -> Vec<u8> {
            let data = block(first, n);
            insert.execute(params![bank, n as i64, kind, data]).unwrap();
            data
        };
        // Three blocks of first vectors, passages past the scan's limit, and another bank's blocks.
        let mut heads = Vec::new();
        for (i, n) in [BLOCK, BLOCK, 100].into_iter().enumerate() {
            heads.extend(add(1, HEADS, 1_000_000 * i as i64, n));
            add(2, HEADS, 9_000_000 + 1_000_000 * i as i64, n);
        }
        let written = PASSAGE_SCAN / BLOCK + 5;
        let passages: Vec<Vec<u8>> =
            (0..written).map(|b| add(1, PASSAGES, 100_000_000 + 1_000 * b as i64, BLOCK)).collect();
        // Every first vector, then the newest passages' blocks until the limit is reached.
        let read = PASSAGE_SCAN.div_ceil(BLOCK);
        let expected: Vec<u8> =
            heads.iter().copied().chain(passages.iter().rev().take(read).flatten().copied()).collect();
        let listed = blocks(c, 1).unwrap();
        assert_eq!(listed.len(), 3 + read, "three blocks of first vectors, then the passages' up to the limit");
        assert_eq!(listed.iter().map(|b| b.1).sum::<usize>(), expected.len());
        // The shortlist over those bytes is the same whether the blocks were read ahead, compared
        // as they were read, or the question came in between.
        let query: Vec<f32> = (0..embed::DIMS).map(|i| (i * 37 % 11) as f32 - 5.0).collect();
        let mut all = Shortlist::new(&query, None);
        all.offer(&expected);
        let mut want = all.ids().0;
        want.sort_unstable();
        assert_eq!(want.len(), SHORTLIST);
        for flip in [0, 1, 2, 40, usize::MAX] {
            let (q, mut ids, _) = shortlisted(c, 1, ready_after(flip), || Some(query.clone()), None).unwrap();
            ids.sort_unstable();
            assert_eq!(q.as_deref(), Some(&query[..]));
            assert!(ids == want, "ready after {flip} blocks");
        }
        // One snapshot: a transaction of its own, ended; or the caller's, left open.
        let found = nearest_meanwhile(c, 1, || false, || Some(query.clone()), 5, None).unwrap();
        assert!(found.query.is_some() && found.near.is_empty(), "these entries have no codes to score");
        assert!(c.is_autocommit(), "the snapshot's transaction is ended");
        c.execute_batch("BEGIN").unwrap();
        nearest_meanwhile(c, 1, || false, || Some(query.clone()), 5, None).unwrap();
        assert!(!c.is_autocommit(), "the caller's transaction is left open");
        c.execute_batch("COMMIT").unwrap();
        // The blocks are listed from the index alone; their bytes are read as they are, whatever
        // their counts say.
        let plan: String = c
            .query_row(
                "EXPLAIN QUERY PLAN SELECT id, n FROM vector_blocks WHERE bank_id = 1 AND passages = 0 ORDER BY id",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("COVERING INDEX"), "{plan}");
        c.execute("UPDATE vector_blocks SET n = 3 WHERE id = ?1", [listed[0].0]).unwrap();
        c.execute("UPDATE vector_blocks SET n = n + 9 WHERE id = ?1", [listed[1].0]).unwrap();
        for flip in [0, 1, usize::MAX] {
            let (_, mut ids, _) = shortlisted(c, 1, ready_after(flip), || Some(query.clone()), None).unwrap();
            ids.sort_unstable();
            assert!(ids == want, "counts off, ready after {flip} blocks");
        }
        let (q, ids, _) = shortlisted(c, 3, || false, || Some(query.clone()), None).unwrap();
        assert!(q.is_some() && ids.is_empty(), "a bank without vectors");
        assert_eq!(
            shortlisted(c, 1, || false, || None, None).unwrap(),
            (None, Vec::new(), Vec::new()),
            "no question vector"
        );
    }
}

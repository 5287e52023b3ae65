//! The inverted index, kept inside the SQLite database so it shares the store's transactions and
//! locking: every process of every harness reads and writes it safely, and a crash leaves the
//! index and the memories consistent. Postings are per bank and term, in blocks of up to
//! [`BLOCK`] entries (`doc` delta, weighted term frequency, weighted document length, as
//! varints), appended in place. Recall reads only the posting lists of the query's terms, so it
//! ranks the whole bank, whatever its size, without a cap on candidates.

use rusqlite::{params, Connection, OptionalExtension};
use rustc_hash::FxHashMap;

use super::text::{analyse_into, Term};

/// Entries per posting block.
pub const BLOCK: usize = 128;

/// Field weights, in quarter units: a word the user said counts 1, one in the reply 1/2, one in
/// the session's topic 1/4 (it helps a follow-up turn be found, never outvotes its own words).
pub const W_PROMPT: u32 = 4;
pub const W_REPLY: u32 = 2;
pub const W_TOPIC: u32 = 1;
pub const UNIT: f32 = 4.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    pub doc: i64,
    /// Weighted term frequency, in quarter units.
    pub tf: u32,
    /// Weighted document length, in quarter units.
    pub dl: u32,
}

/// A document's weighted bag of terms.
#[derive(Debug, Default, Clone)]
pub struct DocTerms {
    pub terms: Vec<(String, u32)>,
    pub len: u32,
}

/// Analyses a memory's fields into its weighted bag of terms.
pub fn doc_terms(prompt: &str, reply: &str, topic: &str) -> DocTerms {
    let mut tf: FxHashMap<String, u32> = FxHashMap::default();
    let mut len = 0u32;
    let mut buf: Vec<Term> = Vec::new();
    for (text, w) in [(prompt, W_PROMPT), (reply, W_REPLY), (topic, W_TOPIC)] {
        buf.clear();
        analyse_into(text, 0, &mut buf);
        for t in buf.drain(..) {
            len = len.saturating_add(w);
            *tf.entry(t.text).or_insert(0) += w;
        }
    }
    let mut terms: Vec<(String, u32)> = tf.into_iter().collect();
    terms.sort_unstable();
    DocTerms { terms, len: len.max(1) }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn get_varint(data: &[u8], i: &mut usize) -> Option<u64> {
    // Most values (deltas in dense lists, frequencies, lengths) fit one byte.
    let b = *data.get(*i)?;
    if b < 0x80 {
        *i += 1;
        return Some(u64::from(b));
    }
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *data.get(*i)?;
        *i += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// `[count][doc delta, tf, dl]*`; the first delta is from 0.
pub fn encode_block(entries: &[Posting]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + entries.len() * 4);
    out.push(entries.len() as u8);
    let mut prev = 0i64;
    for p in entries {
        put_varint(&mut out, (p.doc - prev) as u64);
        put_varint(&mut out, u64::from(p.tf));
        put_varint(&mut out, u64::from(p.dl));
        prev = p.doc;
    }
    out
}

/// Appends the entries of a block to `out`; a damaged block yields what decoded cleanly.
pub fn decode_block(data: &[u8], out: &mut Vec<Posting>) {
    let Some(&count) = data.first() else { return };
    out.reserve(count as usize);
    let mut i = 1;
    let mut doc = 0i64;
    for _ in 0..count {
        let (Some(d), Some(tf), Some(dl)) =
            (get_varint(data, &mut i), get_varint(data, &mut i), get_varint(data, &mut i))
        else {
            return;
        };
        doc += d as i64;
        out.push(Posting { doc, tf: tf as u32, dl: dl as u32 });
    }
}

/// The id of `term`, creating it when `create`.
pub fn term_id(conn: &Connection, term: &str, create: bool) -> rusqlite::Result<Option<i64>> {
    let found =
        conn.prepare_cached("SELECT id FROM vocab WHERE term = ?1")?.query_row([term], |r| r.get(0)).optional()?;
    if found.is_some() || !create {
        return Ok(found);
    }
    conn.prepare_cached("INSERT INTO vocab (term) VALUES (?1)")?.execute([term])?;
    Ok(Some(conn.last_insert_rowid()))
}

/// A term's id and its document frequency in `bank`, when some memory of the bank has it.
pub fn term_df(conn: &Connection, bank: i64, term: &str) -> rusqlite::Result<Option<(i64, u32)>> {
    let found: Option<(i64, i64)> = conn
        .prepare_cached(
            "SELECT v.id, t.df FROM vocab v JOIN terms t ON t.term_id = v.id AND t.bank_id = ?2 WHERE v.term = ?1",
        )?
        .query_row(params![term, bank], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(found.filter(|f| f.1 > 0).map(|(id, df)| (id, df as u32)))
}

/// Postings collected for a batch of documents, written in one go: a capture is a batch of one,
/// an import a batch of many thousands (which is what makes imports fast).
#[derive(Default)]
pub struct Batch {
    ids: FxHashMap<String, i64>,
    lists: FxHashMap<(i64, i64), Vec<Posting>>,
    banks: FxHashMap<i64, (i64, i64)>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty() && self.banks.is_empty()
    }

    /// Queues `doc` (ids must grow within a bank, as rowids do).
    pub fn add(&mut self, conn: &Connection, bank: i64, doc: i64, terms: &DocTerms) -> rusqlite::Result<()> {
        for (term, tf) in &terms.terms {
            let id = match self.ids.get(term) {
                Some(id) => *id,
                None => {
                    let id = term_id(conn, term, true)?.expect("created");
                    self.ids.insert(term.clone(), id);
                    id
                }
            };
            self.lists.entry((bank, id)).or_default().push(Posting { doc, tf: *tf, dl: terms.len });
        }
        let b = self.banks.entry(bank).or_insert((0, 0));
        b.0 += 1;
        b.1 += i64::from(terms.len);
        Ok(())
    }

    /// Writes every queued posting and the banks' statistics.
    pub fn flush(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let mut meta = conn.prepare_cached("SELECT df, last FROM terms WHERE bank_id = ?1 AND term_id = ?2")?;
        let mut get_block =
            conn.prepare_cached("SELECT data FROM postings WHERE bank_id = ?1 AND term_id = ?2 AND block = ?3")?;
        let mut put_block = conn.prepare_cached(
            "INSERT OR REPLACE INTO postings (bank_id, term_id, block, data) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut put_meta =
            conn.prepare_cached("INSERT OR REPLACE INTO terms (bank_id, term_id, df, last) VALUES (?1, ?2, ?3, ?4)")?;
        let mut entries: Vec<Posting> = Vec::with_capacity(BLOCK);
        for ((bank, term), new) in self.lists.drain() {
            let found: Option<(i64, i64)> =
                meta.query_row(params![bank, term], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
            let (mut df, mut block) = found.unwrap_or((0, 0));
            entries.clear();
            if found.is_some() {
                let data: Option<Vec<u8>> = get_block.query_row(params![bank, term, block], |r| r.get(0)).optional()?;
                if let Some(d) = data {
                    decode_block(&d, &mut entries);
                }
            }
            for p in new {
                if entries.len() == BLOCK {
                    put_block.execute(params![bank, term, block, encode_block(&entries)])?;
                    entries.clear();
                    block += 1;
                }
                entries.push(p);
                df += 1;
            }
            put_block.execute(params![bank, term, block, encode_block(&entries)])?;
            put_meta.execute(params![bank, term, df, block])?;
        }
        let mut stats = conn.prepare_cached("UPDATE banks SET docs = docs + ?2, len = len + ?3 WHERE id = ?1")?;
        for (bank, (docs, len)) in self.banks.drain() {
            stats.execute(params![bank, docs, len])?;
        }
        Ok(())
    }
}

/// Removes `doc` from the posting lists of its terms and from its bank's statistics.
pub fn remove(conn: &Connection, bank: i64, doc: i64, terms: &DocTerms) -> rusqlite::Result<()> {
    let mut blocks = conn.prepare_cached("SELECT block, data FROM postings WHERE bank_id = ?1 AND term_id = ?2")?;
    let mut put =
        conn.prepare_cached("UPDATE postings SET data = ?4 WHERE bank_id = ?1 AND term_id = ?2 AND block = ?3")?;
    let mut del = conn.prepare_cached("DELETE FROM postings WHERE bank_id = ?1 AND term_id = ?2 AND block = ?3")?;
    let mut df = conn.prepare_cached("UPDATE terms SET df = df - 1 WHERE bank_id = ?1 AND term_id = ?2")?;
    let mut entries = Vec::new();
    for (term, _) in &terms.terms {
        let Some(id) = term_id(conn, term, false)? else { continue };
        let found: Vec<(i64, Vec<u8>)> =
            blocks.query_map(params![bank, id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        for (block, data) in found {
            entries.clear();
            decode_block(&data, &mut entries);
            let before = entries.len();
            entries.retain(|p| p.doc != doc);
            if entries.len() == before {
                continue;
            }
            // An emptied block stays while it is the last one (appends go there); others go.
            let last: i64 =
                conn.query_row("SELECT last FROM terms WHERE bank_id = ?1 AND term_id = ?2", params![bank, id], |r| {
                    r.get(0)
                })?;
            if entries.is_empty() && block != last {
                del.execute(params![bank, id, block])?;
            } else {
                put.execute(params![bank, id, block, encode_block(&entries)])?;
            }
            df.execute(params![bank, id])?;
        }
    }
    conn.prepare_cached("UPDATE banks SET docs = max(docs - 1, 0), len = max(len - ?2, 0) WHERE id = ?1")?
        .execute(params![bank, i64::from(terms.len)])?;
    Ok(())
}

/// A term's posting list in one bank, appended to `out` in memory order.
pub fn postings(conn: &Connection, bank: i64, term: i64, out: &mut Vec<Posting>) -> rusqlite::Result<()> {
    let mut stmt = list_statement(conn)?;
    let mut rows = stmt.query(params![bank, term])?;
    while let Some(row) = rows.next()? {
        let data = row.get_ref(0)?.as_blob()?;
        decode_block(data, out);
    }
    Ok(())
}

/// A posting list read in order of memory id, a block at a time: a search over a word that a
/// million memories use reads its blocks as it reaches them, where decoding the whole list first
/// wrote (and faulted in) 16 bytes a posting, 16 MB, only to read them back once.
pub trait Postings {
    /// How many postings the list holds, and its first and last memory ids (`None` when empty).
    fn extent(&self) -> (usize, Option<(i64, i64)>);
    /// Appends the next block's postings to `out`; false once the list is done.
    fn next_block(&mut self, out: &mut Vec<Posting>) -> bool;
}

/// A list in memory is one block.
impl Postings for &[Posting] {
    fn extent(&self) -> (usize, Option<(i64, i64)>) {
        (self.len(), self.first().zip(self.last()).map(|(a, b)| (a.doc, b.doc)))
    }

    fn next_block(&mut self, out: &mut Vec<Posting>) -> bool {
        if self.is_empty() {
            return false;
        }
        out.extend_from_slice(self);
        *self = &[];
        true
    }
}

/// The statement that reads a term's blocks in order: [`postings`] and each [`Stream`] (one
/// prepared per term searched at once).
pub fn list_statement(conn: &Connection) -> rusqlite::Result<rusqlite::CachedStatement<'_>> {
    conn.prepare_cached("SELECT data FROM postings WHERE bank_id = ?1 AND term_id = ?2 ORDER BY block")
}

/// A term's posting list as the index holds it, decoded a block at a time ([`Postings`]). An
/// error reading it ends the list and is kept for [`Stream::finish`].
pub struct Stream<'s> {
    rows: rusqlite::Rows<'s>,
    /// The first block, read to know where the list starts.
    first: Vec<Posting>,
    len: usize,
    span: Option<(i64, i64)>,
    error: Option<rusqlite::Error>,
}

impl<'s> Stream<'s> {
    /// Opens `term`'s list in `bank` on `stmt` ([`list_statement`]); `len` is the term's
    /// document frequency.
    pub fn open(
        conn: &Connection,
        stmt: &'s mut rusqlite::Statement<'_>,
        bank: i64,
        term: i64,
        len: usize,
    ) -> rusqlite::Result<Self> {
        // The last posting: of the last block that still holds one (forgetting may empty blocks).
        let mut last = Vec::new();
        let mut back =
            conn.prepare_cached("SELECT data FROM postings WHERE bank_id = ?1 AND term_id = ?2 ORDER BY block DESC")?;
        let mut tail = back.query(params![bank, term])?;
        while last.is_empty() {
            match tail.next()? {
                Some(row) => decode_block(row.get_ref(0)?.as_blob()?, &mut last),
                None => break,
            }
        }
        drop(tail);
        let mut rows = stmt.query(params![bank, term])?;
        let mut first = Vec::new();
        // Blocks emptied by forgetting may precede the first posting.
        while first.is_empty() {
            match rows.next()? {
                Some(row) => decode_block(row.get_ref(0)?.as_blob()?, &mut first),
                None => break,
            }
        }
        let span = first.first().zip(last.last()).map(|(a, b)| (a.doc, b.doc.max(a.doc)));
        Ok(Self { rows, first, len, span, error: None })
    }

    /// The error that ended the list early, if one did.
    pub fn finish(self) -> rusqlite::Result<()> {
        self.error.map_or(Ok(()), Err)
    }
}

impl Postings for Stream<'_> {
    fn extent(&self) -> (usize, Option<(i64, i64)>) {
        (self.len, self.span)
    }

    fn next_block(&mut self, out: &mut Vec<Posting>) -> bool {
        if !self.first.is_empty() {
            out.append(&mut self.first);
            return true;
        }
        if self.error.is_some() {
            return false;
        }
        let rows = &mut self.rows;
        let read = (|| -> rusqlite::Result<bool> {
            let Some(row) = rows.next()? else { return Ok(false) };
            decode_block(row.get_ref(0)?.as_blob()?, out);
            Ok(true)
        })();
        read.unwrap_or_else(|e| {
            self.error = Some(e);
            false
        })
    }
}

/// Schema step 15: each bank records which analysis of the text ([`super::text::ANALYSIS`]) wrote
/// its index; a bank is created with the current one. Banks with memories are marked 0, to be
/// indexed anew by [`super::Store::backfill`].
pub fn step_15(c: &Connection) -> anyhow::Result<()> {
    c.execute_batch(&format!(
        "ALTER TABLE banks ADD COLUMN analysis INTEGER NOT NULL DEFAULT {};
         UPDATE banks SET analysis = 0 WHERE docs > 0;",
        super::text::ANALYSIS
    ))?;
    Ok(())
}

/// Schema steps 16 (analysis 2: a text's language chooses its stems) and 17 (analysis 3: a flag
/// of one letter is a term): the banks with memories keep the analysis that wrote them, so they
/// are indexed anew; an empty one has nothing to index and is current.
pub fn empty_banks_current(c: &Connection) -> anyhow::Result<()> {
    c.execute("UPDATE banks SET analysis = ?1 WHERE docs = 0", [super::text::ANALYSIS])?;
    Ok(())
}

/// The names of the banks with memories whose index an analysis older than `analysis` wrote.
pub fn stale_banks(c: &Connection, analysis: i64) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare_cached("SELECT name FROM banks WHERE analysis < ?1 ORDER BY name")?;
    let names = stmt.query_map([analysis], |r| r.get(0))?;
    names.collect()
}

/// A bank of at most `most` text (its weighted length) whose index an analysis older than
/// `analysis` wrote, the smallest first.
pub fn stale_bank(c: &Connection, analysis: i64, most: i64) -> rusqlite::Result<Option<i64>> {
    c.prepare_cached("SELECT id FROM banks WHERE analysis < ?1 AND len <= ?2 ORDER BY len, id LIMIT 1")?
        .query_row(params![analysis, most], |r| r.get(0))
        .optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip() {
        let entries: Vec<Posting> = (0..BLOCK as i64)
            .map(|i| Posting { doc: 7 + i * 300, tf: (i % 9) as u32 + 1, dl: 40 + i as u32 })
            .collect();
        let mut out = Vec::new();
        decode_block(&encode_block(&entries), &mut out);
        assert_eq!(out, entries);
        let mut out = Vec::new();
        decode_block(&[3, 0x80], &mut out);
        assert!(out.is_empty(), "a truncated block decodes to nothing, never panics");
    }

    #[test]
    fn a_stream_reads_the_list_the_index_holds_block_by_block() {
        let store = crate::store::Store::open_in_memory().unwrap();
        let c = &*store.conn;
        let terms = |words: &str| doc_terms(words, "", "");
        let mut batch = Batch::default();
        for doc in 1..=400 {
            batch.add(c, 1, doc, &terms(if doc % 2 == 0 { "alpha beta" } else { "alpha" })).unwrap();
            if doc % 150 == 0 {
                batch.flush(c).unwrap();
            }
        }
        batch.flush(c).unwrap();
        // Forgetting empties the first block (deleted) and the last one (kept while last).
        for doc in (1..=BLOCK as i64).chain(385..=400) {
            remove(c, 1, doc, &terms("alpha")).unwrap();
        }
        let alpha = term_id(c, "alpha", false).unwrap().unwrap();
        let mut whole = Vec::new();
        postings(c, 1, alpha, &mut whole).unwrap();
        assert_eq!(whole.first().map(|p| p.doc), Some(BLOCK as i64 + 1));
        assert_eq!(whole.last().map(|p| p.doc), Some(384));

        let mut stmt = list_statement(c).unwrap();
        let mut stream = Stream::open(c, &mut stmt, 1, alpha, whole.len()).unwrap();
        assert_eq!(stream.extent(), (whole.len(), Some((BLOCK as i64 + 1, 384))));
        let (mut read, mut blocks) = (Vec::new(), 0);
        while stream.next_block(&mut read) {
            blocks += 1;
        }
        assert_eq!(read, whole);
        assert!(blocks > 1, "read a block at a time");
        assert!(!stream.next_block(&mut read), "and stays done");
        stream.finish().unwrap();

        // A term without postings is an empty list.
        let mut stmt = list_statement(c).unwrap();
        let mut none = Stream::open(c, &mut stmt, 1, alpha + 100, 0).unwrap();
        assert_eq!(none.extent(), (0, None));
        assert!(!none.next_block(&mut read));
    }

    #[test]
    fn fields_are_weighted() {
        let d = doc_terms("retry budget", "the retry", "billing");
        let get = |t: &str| d.terms.iter().find(|(x, _)| x == t).map(|x| x.1);
        assert_eq!(get("retri"), Some(W_PROMPT + W_REPLY));
        assert_eq!(get("budget"), Some(W_PROMPT));
        assert_eq!(get("bill"), Some(W_TOPIC));
        assert_eq!(d.len, 2 * W_PROMPT + W_REPLY + W_TOPIC);
    }
}

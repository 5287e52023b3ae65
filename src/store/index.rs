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
    let mut stmt =
        conn.prepare_cached("SELECT data FROM postings WHERE bank_id = ?1 AND term_id = ?2 ORDER BY block")?;
    let mut rows = stmt.query(params![bank, term])?;
    while let Some(row) = rows.next()? {
        let data = row.get_ref(0)?.as_blob()?;
        decode_block(data, out);
    }
    Ok(())
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
    fn fields_are_weighted() {
        let d = doc_terms("retry budget", "the retry", "billing");
        let get = |t: &str| d.terms.iter().find(|(x, _)| x == t).map(|x| x.1);
        assert_eq!(get("retri"), Some(W_PROMPT + W_REPLY));
        assert_eq!(get("budget"), Some(W_PROMPT));
        assert_eq!(get("bill"), Some(W_TOPIC));
        assert_eq!(d.len, 2 * W_PROMPT + W_REPLY + W_TOPIC);
    }
}

//! Recall: the question asked of one bank, by its words (BM25 over the whole bank), its meaning
//! (the nearest vectors) and the revisions of what those find, reranked on the candidates' text
//! ([`rank`]), then the events it relates ([`facets`]) and the bank's pins. What a prompt hook
//! runs on every prompt, in one read transaction.

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use super::index::{self, Posting};
use super::rank::{self, Candidate, Query};
use super::{facets, lang, now, revise, text, vectors, when, Hit, Memory, Store};
use crate::cut::floor_char;

/// A time window holding more memories than this does not single any out: its memories are not
/// looked for beyond the question's best matches.
const WITHIN_AT_MOST: usize = 5_000;

/// The ids of memories written within a question's window.
type Within = rustc_hash::FxHashSet<i64>;

/// `ids`, if few enough for a window to single them out.
fn few(ids: Within) -> Option<Within> {
    (ids.len() <= WITHIN_AT_MOST).then_some(ids)
}

/// How many revisions of a revision are followed from a candidate.
const REVISION_DEPTH: usize = 3;

/// A question as one bank is asked it ([`Store::asked`]).
struct Asked {
    bank_id: i64,
    /// The analysis the bank's index was written with.
    analysis: i64,
    /// The bank's mean weighted length of a memory.
    avgdl: f32,
    q: Query,
    /// Each term the bank has: its id and in how many memories it is.
    ids: std::collections::HashMap<String, (i64, u32)>,
    /// The memories written within the time the question names, if few enough to single out.
    within: Option<Within>,
    /// Whether the question has a term at all, before those the bank lacks are dropped: one of
    /// stopwords alone ("the of a") asks nothing, by its words or its meaning.
    has_terms: bool,
}

/// Characters of a candidate's prompt and of its reply read when candidates are reranked.
const RERANK_TEXT: usize = 4000;

/// A candidate's prompt, reply and topic as the reranker reads them (as analysis `analysis`
/// did, its bank's): a long reply is judged on its beginning, enough for wording and proximity,
/// and a recall over long chats stays fast. The beginning holds what tells the text's language,
/// so it is read in the language its index was written in.
fn analyse(m: &Memory, analysis: i64) -> [Vec<text::Term>; 3] {
    const _: () = assert!(RERANK_TEXT >= lang::SAMPLE);
    fn head(s: &str) -> &str {
        &s[..floor_char(s, RERANK_TEXT)]
    }
    let of = |s: &str| text::analyse_as(s, analysis);
    [of(head(&m.prompt)), of(head(&m.reply)), of(&m.topic)]
}

impl Store {
    /// The memories of `bank` most relevant to `query`, best first, at most `limit`; the bank's
    /// pinned memories come first (`curate.rs`).
    pub fn recall(&self, bank: &str, query: &str, limit: usize) -> Result<Vec<Hit>> {
        self.snapshot(|| {
            let (ranked, among) = self.ranked_among(bank, query, limit)?;
            let ranked = self.with_facets(bank, query, ranked, &among, limit)?;
            self.pins_first(bank, query, ranked, limit)
        })
    }

    /// The best memory of each event the question relates ([`facets::facets`]), asked on its own,
    /// takes a slot when neither it nor its session is shown: the place of the last memory shown
    /// that is neither the best of another event nor one plain BM25 or the words alone rank first
    /// (see [`Hit::kept`]).
    fn with_facets(
        &self,
        bank: &str,
        query: &str,
        mut ranked: Vec<Hit>,
        among: &rustc_hash::FxHashSet<i64>,
        limit: usize,
    ) -> Result<Vec<Hit>> {
        // Whether `h` shows memory `b` (as an item, with another, or by its session).
        fn shows(h: &Hit, b: &Hit) -> bool {
            let m = &b.memory;
            h.memory.id == m.id
                || m.session.is_some() && h.memory.session == m.session
                || h.with.iter().any(|w| w.id == m.id)
        }
        // The benchmark's reference rankers stay plain.
        if matches!(recall_mode(), Mode::Semantic | Mode::Fusion) || limit < 2 {
            return Ok(ranked);
        }
        let facets = facets::facets(query);
        if facets.is_empty() {
            return Ok(ranked);
        }
        ranked.truncate(limit);
        let mut keep: Vec<bool> = ranked.iter().map(|h| h.kept).collect();
        let mut picks: Vec<Hit> = Vec::new();
        for facet in &facets {
            let found = self.ranked(bank, facet, limit)?;
            // The event is shown when one of its best few is, or one of their sessions.
            let near = &found[..found.len().min(facets::COVERED)];
            if let Some(j) = ranked.iter().position(|h| near.iter().any(|b| shows(h, b))) {
                keep[j] = true;
            } else if let Some(best) = found.into_iter().next().filter(|b| among.contains(&b.memory.id)) {
                if !picks.iter().any(|p| shows(p, &best)) {
                    picks.push(best);
                }
            }
        }
        place(&mut ranked, keep, picks, limit);
        Ok(ranked)
    }

    /// Runs `f`'s reads in one read transaction (unless one is open already): one snapshot of the
    /// store for all of them, and the database's and the WAL's read locks taken once. Each
    /// statement on its own takes and drops them with four `fcntl` calls; a recall runs a few
    /// hundred statements.
    fn snapshot<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            return f();
        }
        self.conn.prepare_cached("BEGIN")?.execute([])?;
        let out = f();
        let ended = self.conn.prepare_cached("COMMIT").and_then(|mut s| s.execute([]));
        if ended.is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        let out = out?;
        ended?;
        Ok(out)
    }

    /// The ranking itself: BM25 candidates, reranked.
    pub(super) fn ranked(&self, bank: &str, query: &str, limit: usize) -> Result<Vec<Hit>> {
        Ok(self.ranked_among(bank, query, limit)?.0)
    }

    /// [`Store::ranked`], with every candidate it reranked (found by the question's words, its
    /// meaning, or as a revision of one).
    fn ranked_among(&self, bank: &str, query: &str, limit: usize) -> Result<(Vec<Hit>, rustc_hash::FxHashSet<i64>)> {
        let c = &*self.conn;
        let Some(Asked { bank_id, analysis, avgdl, q, ids, within, has_terms }) = self.asked(bank, query, limit)?
        else {
            return Ok(Default::default());
        };
        let model = crate::embed::Model::get();
        let mode = recall_mode();
        // Asked for only once the words have been searched: a prefetched question
        // ([`prefetch_question`]) is computed meanwhile on the other core.
        let asks = has_terms && mode != Mode::Lexical;
        let question = || if asks { model.question(query) } else { None };
        if matches!(mode, Mode::Semantic | Mode::Fusion) {
            let mut lists: Vec<Vec<Posting>> = Vec::with_capacity(q.scan);
            for t in &q.terms[..q.scan] {
                let mut list = Vec::with_capacity(ids[&t.text].1 as usize);
                index::postings(c, bank_id, ids[&t.text].0, &mut list)?;
                lists.push(list);
            }
            let qvec = question();
            let hits = self.baseline(mode, &q, &lists, avgdl, bank_id, qvec.as_deref(), limit)?;
            return Ok((hits, Default::default()));
        }
        // The scanned terms' lists, each read a block at a time as the ranking reaches it.
        let mut statements = Vec::with_capacity(q.scan);
        for _ in 0..q.scan {
            statements.push(index::list_statement(c)?);
        }
        let mut lists = Vec::with_capacity(q.scan);
        for (t, stmt) in q.terms[..q.scan].iter().zip(statements.iter_mut()) {
            let (term, df) = ids[&t.text];
            lists.push(index::Stream::open(c, stmt, bank_id, term, df as usize)?);
        }
        let scored = rank::bm25(&q, &mut lists, avgdl, rank::RERANK, within.as_ref());
        for list in lists {
            list.finish()?;
        }
        let mut memories: Vec<(rank::Scored, Memory)> = Vec::with_capacity(scored.len() + rank::DENSE);
        let mut lens = Vec::with_capacity(scored.len() + rank::DENSE);
        for s in &scored {
            if let Some((m, dl)) = self.get_with_len(s.doc)? {
                memories.push((*s, m));
                lens.push(dl);
            }
        }
        let lexical: std::collections::HashSet<i64> = scored.iter().map(|s| s.doc).collect();
        let mut analysed: Vec<[Vec<text::Term>; 3]> = memories.iter().map(|(_, m)| analyse(m, analysis)).collect();
        // The meaning: the memories nearest to the question, whatever their words; found by
        // meaning alone, a memory must be near enough to be about the question at all. The sign
        // bits are read while the question is still being encoded.
        // And among what was written within the question's window of time, apart: the words'
        // best there join the candidates (`within`), and so do the nearest by meaning.
        let (qvec, near) = if asks {
            let ready = || model.question_ready(query);
            let found = vectors::nearest_meanwhile(c, bank_id, ready, question, rank::DENSE, within.as_ref())?;
            let mut near = found.near;
            for (doc, read) in found.among {
                if !near.iter().any(|(d, _)| *d == doc) {
                    near.push((doc, read));
                }
            }
            (found.query, near)
        } else {
            (None, Vec::new())
        };
        for &(doc, _) in near.iter().filter(|(d, (_, cos))| !lexical.contains(d) && *cos >= rank::MIN_COSINE) {
            if let Some((m, dl)) = self.get_with_len(doc)? {
                memories.push((rank::Scored { doc, score: 0.0, matched: 0 }, m));
                lens.push(dl);
            }
        }
        if memories.is_empty() {
            return Ok(Default::default());
        }
        let links = self.with_revisers(&mut memories, &mut lens)?;
        // Each candidate's subject (its first vector) and its cosine with the question (its
        // nearest passage's).
        // Those the search by meaning read already are not read again.
        let mut vectors: std::collections::HashMap<i64, vectors::Read> = near.into_iter().collect();
        if let Some(v) = &qvec {
            let unread: Vec<i64> = memories.iter().map(|(_, m)| m.id).filter(|id| !vectors.contains_key(id)).collect();
            vectors.extend(vectors::read(c, &unread, v)?);
        }
        // The terms too common to scan still count, on each candidate's own text (all of them for
        // a memory found by its meaning alone).
        analysed.extend(memories[analysed.len()..].iter().map(|(_, m)| analyse(m, analysis)));
        let mut candidates: Vec<Candidate> = memories
            .iter()
            .zip(&lens)
            .zip(analysed)
            .map(|(((s, m), dl), fields)| {
                let from = if lexical.contains(&m.id) { q.scan } else { 0 };
                let (extra, bits) = rank::text_bm25(&q, &fields, *dl, avgdl, from);
                let (vector, dense) = vectors.remove(&m.id).map_or((None, None), |(v, cos)| (Some(v), Some(cos)));
                Candidate {
                    doc: m.id,
                    bm25: s.score + extra,
                    matched: s.matched | bits,
                    session: m.session.as_deref(),
                    created_at: m.created_at,
                    fields,
                    said: [&m.prompt, &m.reply],
                    dense,
                    vector,
                }
            })
            .collect();
        // The candidates' cosines again, with the question moved towards the nearest of them.
        if let Some(moved) = qvec.as_deref().and_then(|v| rank::feedback(v, &candidates)) {
            let ids: Vec<i64> = candidates.iter().filter(|c| c.dense.is_some()).map(|c| c.doc).collect();
            let cos: std::collections::HashMap<i64, f32> = vectors::cosines(c, &ids, &moved)?.into_iter().collect();
            for cand in &mut candidates {
                cand.dense = cos.get(&cand.doc).copied().or(cand.dense);
            }
        }
        let index_of: std::collections::HashMap<i64, usize> =
            memories.iter().enumerate().map(|(i, (_, m))| (m.id, i)).collect();
        let links: Vec<(usize, usize)> =
            links.iter().filter_map(|(o, n)| Some((*index_of.get(o)?, *index_of.get(n)?))).collect();
        let ranked = rank::rerank_reading(&q, &candidates, &links, limit, |ids| vectors::passages(c, ids))?;
        let among = memories.iter().map(|(_, m)| m.id).collect();
        let hits = ranked
            .into_iter()
            .filter_map(|r| {
                let i = *index_of.get(&r.doc)?;
                let matched = candidates[i].matched;
                let terms = q
                    .terms
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| matched & (1 << k) != 0)
                    .map(|(_, t)| t.text.clone())
                    .collect();
                let superseded_by = r
                    .superseded_by
                    .and_then(|n| index_of.get(&n))
                    .map(|&n| (memories[n].1.id, memories[n].1.created_at));
                let with = r.with.iter().filter_map(|d| index_of.get(d)).map(|&j| memories[j].1.clone()).collect();
                Some(Hit { memory: memories[i].1.clone(), score: r.score, superseded_by, terms, with, kept: r.kept })
            })
            .collect();
        Ok((hits, among))
    }

    /// The bank's statistics and the question as this bank is asked it: its terms looked up
    /// (a compound the bank lacks by its parts) and weighed, and the time it names. `None` when
    /// the bank is empty or unknown, or nothing is asked for.
    fn asked(&self, bank: &str, query: &str, limit: usize) -> Result<Option<Asked>> {
        let c = &*self.conn;
        let bank_row: Option<(i64, i64, i64, i64)> = c
            .prepare_cached("SELECT id, docs, len, analysis FROM banks WHERE name = ?1")?
            .query_row([bank], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional()?;
        let Some((bank_id, docs, len, analysis)) = bank_row else { return Ok(None) };
        if docs == 0 || limit == 0 {
            return Ok(None);
        }
        let mut q = Query::parse_as(query, analysis);
        // A bank indexed by an older analysis (until it is indexed anew, see [`Store::backfill`])
        // is asked only for the terms that analysis wrote: a term it lacked would be matched in
        // the memories written since, and raise them above the older ones for it alone.
        if analysis < text::ANALYSIS {
            q.terms.retain(|t| !text::new_since(analysis, &t.text));
        }
        let (window, within) = self.window(bank_id, query)?;
        q.window = window;
        let has_terms = !q.terms.is_empty();
        let mut ids: std::collections::HashMap<String, (i64, u32)> = std::collections::HashMap::new();
        // The terms the bank lacks, so that none is looked up twice.
        let mut absent: Vec<String> = Vec::new();
        let mut look_up = |term: &str| -> Result<bool> {
            if ids.contains_key(term) {
                return Ok(true);
            }
            if absent.iter().any(|a| a == term) {
                return Ok(false);
            }
            match index::term_df(c, bank_id, term)? {
                Some(found) => {
                    ids.insert(term.to_string(), found);
                    Ok(true)
                }
                None => {
                    absent.push(term.to_string());
                    Ok(false)
                }
            }
        };
        for t in &q.terms {
            look_up(&t.text)?;
        }
        q.split_compounds(look_up)?;
        q.weigh(docs as u32, |t| ids.get(t).map(|x| x.1));
        let avgdl = len as f32 / docs as f32 / index::UNIT;
        Ok(Some(Asked { bank_id, analysis, avgdl, q, ids, within, has_terms }))
    }

    /// Brings along the later memories that revise a candidate, and the ones that revise those
    /// (a decision changed twice), whatever their own words; returns every (older, newer) pair.
    fn with_revisers(
        &self,
        memories: &mut Vec<(rank::Scored, Memory)>,
        lens: &mut Vec<u32>,
    ) -> Result<Vec<(i64, i64)>> {
        let mut links: Vec<(i64, i64)> = Vec::new();
        let mut frontier: Vec<i64> = memories.iter().map(|(_, m)| m.id).collect();
        for _ in 0..REVISION_DEPTH {
            let found = revise::revisers(&self.conn, &frontier)?;
            frontier.clear();
            for (older, newer) in found {
                links.push((older, newer));
                if !memories.iter().any(|(_, m)| m.id == newer) {
                    if let Some((m, dl)) = self.get_with_len(newer)? {
                        memories.push((rank::Scored { doc: newer, score: 0.0, matched: 0 }, m));
                        lens.push(dl);
                        frontier.push(newer);
                    }
                }
            }
            if frontier.is_empty() {
                break;
            }
        }
        Ok(links)
    }

    /// The time `query` names, placed on the calendar as seen today; if the bank holds nothing
    /// from then, as seen from its newest memory: "last week" and "in November" of a project last
    /// worked on in the spring are its last week and its November. With it, the memories written
    /// within it if there are few enough for the window to single them out (at most
    /// [`WITHIN_AT_MOST`]): the one read that also tells whether the bank holds any.
    fn window(&self, bank_id: i64, query: &str) -> Result<(Option<when::Window>, Option<Within>)> {
        let now = now();
        let Some(today) = when::window(query, now) else { return Ok((None, None)) };
        let inside = self.written_within(bank_id, today)?;
        if !inside.is_empty() {
            return Ok((Some(today), few(inside)));
        }
        let newest: Option<i64> = self
            .conn
            .prepare_cached("SELECT max(created_at) FROM memories WHERE bank_id = ?1")?
            .query_row([bank_id], |r| r.get(0))?;
        match newest.filter(|&n| n < now).and_then(|n| when::window(query, n)) {
            Some(then) => Ok((Some(then), few(self.written_within(bank_id, then)?))),
            None => Ok((Some(today), few(inside))),
        }
    }

    /// Up to [`WITHIN_AT_MOST`] + 1 of the bank's memories written within `w`.
    fn written_within(&self, bank_id: i64, w: when::Window) -> Result<Within> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id FROM memories WHERE bank_id = ?1 AND created_at >= ?2 AND created_at < ?3 LIMIT ?4",
        )?;
        let ids = stmt
            .query_map(params![bank_id, w.from, w.to, WITHIN_AT_MOST as i64 + 1], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Within>>()?;
        Ok(ids)
    }

    /// The benchmark's reference rankers over the same bank and the same question
    /// (`OVMEM_RECALL_MODE`): the model's cosine alone, or the plain convex fusion
    /// `0.5·minmax(BM25) + 0.5·minmax(cosine)` over the union of both top-100s.
    #[allow(clippy::too_many_arguments)]
    fn baseline(
        &self,
        mode: Mode,
        q: &Query,
        lists: &[Vec<Posting>],
        avgdl: f32,
        bank: i64,
        qvec: Option<&[f32]>,
        limit: usize,
    ) -> Result<Vec<Hit>> {
        const POOL: usize = 100;
        let c = &*self.conn;
        let near = match qvec {
            Some(v) => vectors::search(c, bank, v, POOL)?,
            None => Vec::new(),
        };
        let mut score: Vec<(i64, f32)> = if mode == Mode::Semantic {
            near
        } else {
            let lexical = rank::bm25(q, &mut lists.iter().map(Vec::as_slice).collect::<Vec<_>>(), avgdl, POOL, None);
            let mut ids: Vec<i64> = lexical.iter().map(|s| s.doc).chain(near.iter().map(|n| n.0)).collect();
            ids.sort_unstable();
            ids.dedup();
            let cos: std::collections::HashMap<i64, f32> = match qvec {
                Some(v) => vectors::cosines(c, &ids, v)?.into_iter().collect(),
                None => Default::default(),
            };
            let bm: std::collections::HashMap<i64, f32> = lexical.iter().map(|s| (s.doc, s.score)).collect();
            let range = |xs: &mut dyn Iterator<Item = f32>| {
                xs.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
            };
            let (blo, bhi) = range(&mut bm.values().copied());
            let (clo, chi) = range(&mut cos.values().copied());
            let norm = |x: f32, lo: f32, hi: f32| if hi > lo { (x - lo) / (hi - lo) } else { 1.0 };
            ids.iter()
                .map(|id| {
                    let b = bm.get(id).map_or(0.0, |&x| norm(x, blo.min(0.0), bhi));
                    let d = cos.get(id).map_or(0.0, |&x| norm(x, clo, chi));
                    (*id, 0.5 * b + 0.5 * d)
                })
                .collect()
        };
        score.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        let mut hits = Vec::with_capacity(limit);
        for (id, s) in score.into_iter().take(limit) {
            if let Some(memory) = self.get(id)? {
                hits.push(Hit {
                    memory,
                    score: s,
                    superseded_by: None,
                    terms: Vec::new(),
                    with: Vec::new(),
                    kept: false,
                });
            }
        }
        Ok(hits)
    }
}

/// `OVMEM_RECALL_MODE`, a benchmark knob, so one run measures what each part adds: `lexical`,
/// recall by the words alone (as ovmem ranked before it had a semantic signal); `semantic`, by the
/// model's cosine alone; `fused`, the plain convex fusion of both ([`Store::baseline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Full,
    Lexical,
    Semantic,
    Fusion,
}

/// Puts each pick in `ranked` (at most `limit` long), in the place of the last memory not to
/// keep (`keep`, one flag per memory); a pick with no such place left is not shown.
fn place(ranked: &mut Vec<Hit>, mut keep: Vec<bool>, picks: Vec<Hit>, limit: usize) {
    for pick in picks {
        if ranked.len() >= limit {
            let Some(j) = keep.iter().rposition(|k| !k) else { break };
            ranked.remove(j);
            keep.remove(j);
        }
        ranked.push(pick);
        keep.push(true);
    }
}

/// Readies the model for [`prefetch_question`] ahead, unless recall is by words alone.
pub fn warm_model() {
    if recall_mode() != Mode::Lexical {
        crate::embed::warm();
    }
}

/// Starts encoding a question that [`Store::recall`] is about to be asked (see
/// [`crate::embed::Model::prefetch`]), when recall would encode it at all.
pub fn prefetch_question(query: &str) {
    let mode = recall_mode();
    if mode != Mode::Lexical && !Query::parse(query).terms.is_empty() {
        crate::embed::Model::prefetch(query);
    }
    // The events it relates are asked on their own too (`Store::with_facets`, the full ranking
    // only).
    if mode == Mode::Full {
        for facet in facets::facets(query) {
            crate::embed::Model::prefetch(&facet);
        }
    }
}

fn recall_mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("OVMEM_RECALL_MODE").as_deref() {
        Ok("lexical") => Mode::Lexical,
        Ok("semantic") => Mode::Semantic,
        Ok("fused") => Mode::Fusion,
        _ => Mode::Full,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewMemory;

    #[test]
    fn an_event_takes_the_place_of_the_last_memory_not_kept() {
        let hit = |id: i64, kept: bool| Hit {
            memory: Memory { id, ..Default::default() },
            score: 0.0,
            superseded_by: None,
            terms: Vec::new(),
            with: Vec::new(),
            kept,
        };
        let ids = |r: &[Hit]| r.iter().map(|h| h.memory.id).collect::<Vec<_>>();
        let ranked = || vec![hit(1, true), hit(2, false), hit(3, true), hit(4, false)];
        let place_kept = |r: &mut Vec<Hit>, picks: Vec<Hit>, limit: usize| {
            let keep = r.iter().map(|h| h.kept).collect();
            place(r, keep, picks, limit)
        };
        let mut r = ranked();
        place_kept(&mut r, vec![hit(9, false)], 4);
        assert_eq!(ids(&r), [1, 2, 3, 9]);
        let mut r = ranked();
        place_kept(&mut r, vec![hit(8, false), hit(9, false), hit(10, false)], 4);
        assert_eq!(ids(&r), [1, 3, 8, 9], "what is kept stays; a pick with no place left is not shown");
        let mut r = ranked();
        r.truncate(2);
        place_kept(&mut r, vec![hit(9, false)], 4);
        assert_eq!(ids(&r), [1, 2, 9], "room left: nothing is taken out");
    }

    /// A recall's reads share one transaction, which it ends whether it succeeds or fails; a
    /// transaction the caller opened is the caller's to end.
    #[test]
    fn a_recall_reads_in_one_transaction_and_leaves_none_open() {
        let s = Store::open_in_memory().unwrap();
        let fact = NewMemory {
            bank: "p1",
            prompt: "The staging database listens on port 5433",
            created_at: now(),
            ..Default::default()
        };
        s.add(&fact).unwrap();
        assert_eq!(s.recall("p1", "staging database port", 5).unwrap().len(), 1);
        assert!(s.conn.is_autocommit(), "no transaction is left open");
        let inside = s.snapshot(|| Ok(s.conn.is_autocommit())).unwrap();
        assert!(!inside, "the reads run in a transaction");
        assert!(s.snapshot(|| -> Result<()> { anyhow::bail!("a read failed") }).is_err());
        assert!(s.conn.is_autocommit(), "a failed recall leaves no transaction open");
        s.conn.execute_batch("BEGIN").unwrap();
        assert_eq!(s.recall("p1", "staging database port", 5).unwrap().len(), 1);
        assert!(!s.conn.is_autocommit(), "the caller's transaction is left to the caller");
        s.conn.execute_batch("COMMIT").unwrap();
    }
}

//! Which memory revises which. When a memory says it changes something ("we drop RabbitMQ and go
//! with Kafka", "switched the TTL to 72 h", "改用 Postgres"), the earlier memories on the same
//! subject are found by the rare words they share with it, and each pair is recorded as it is
//! written. Recall then brings the revision back with the memory it revised, even when the
//! question's words only find the original, shows it first and marks the original superseded.
//! Time is the events' own (`created_at`), so an import of old history links as a capture would.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};
use rustc_hash::{FxHashMap, FxHashSet};

use super::text;

/// Schema step 7: the `revisions` table (older memory, the later one that revises it).
pub(super) fn step_7(c: &Connection) -> Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS revisions (
            older INTEGER NOT NULL,
            newer INTEGER NOT NULL,
            PRIMARY KEY (older, newer)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS revisions_newer ON revisions (newer);",
    )?;
    Ok(())
}

/// Schema step 8: the memories stored before revisions were recorded are checked afterwards, a
/// few at a time ([`backfill`]). The one row holds the highest id not checked yet.
pub(super) fn step_8(c: &Connection) -> Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS revisions_unchecked (upto INTEGER NOT NULL);
         INSERT INTO revisions_unchecked (upto) SELECT max(id) FROM memories HAVING max(id) IS NOT NULL;",
    )?;
    Ok(())
}

/// Schema step 10: memories that say they revise something and were linked by their words alone
/// (an import writes no vectors), to be linked again by meaning once every memory has its vector
/// ([`relink`]).
pub(super) fn step_10(c: &Connection) -> Result<()> {
    c.execute_batch("CREATE TABLE IF NOT EXISTS revisions_relink (id INTEGER PRIMARY KEY);")?;
    Ok(())
}

/// Queued memories that have their vectors (a memory's row in `vectors`, empty when no token of
/// it is known): only these can be linked by meaning.
const READY: &str =
    "SELECT r.id FROM revisions_relink r WHERE EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = r.id)";

/// Queues memories to be linked again by meaning ([`relink`]), once they have their vectors.
pub(super) fn queue_relink(c: &Connection, ids: &[i64]) -> Result<()> {
    let mut insert = c.prepare_cached("INSERT OR IGNORE INTO revisions_relink (id) VALUES (?1)")?;
    for id in ids {
        insert.execute([id])?;
    }
    Ok(())
}

/// Links up to `limit` queued memories that have their vectors again (by words and meaning),
/// inside the caller's transaction; returns how many were taken (fewer than `limit`: none of
/// those is left).
pub(super) fn relink(c: &Connection, limit: usize) -> Result<usize> {
    let ids: Vec<i64> = {
        let mut stmt = c.prepare_cached(&format!("{READY} ORDER BY r.id DESC LIMIT ?1"))?;
        let rows = stmt.query_map([limit as i64], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut done = c.prepare_cached("DELETE FROM revisions_relink WHERE id = ?1")?;
    for &id in &ids {
        link(c, id)?;
        done.execute([id])?;
    }
    Ok(ids.len())
}

/// Whether memories that have their vectors are queued to be linked again by meaning.
pub(super) fn relink_queued(c: &Connection) -> Result<bool> {
    Ok(c.prepare_cached(&format!("{READY} LIMIT 1"))?.exists([])?)
}

/// Whether memories stored before revisions were recorded are left to check.
pub(super) fn unchecked(c: &Connection) -> Result<bool> {
    Ok(c.prepare_cached("SELECT 1 FROM revisions_unchecked LIMIT 1")?.exists([])?)
}

/// Checks up to `limit` of the memories stored before revisions were recorded, newest first,
/// linking those that revise an earlier one, inside the caller's transaction; returns how many
/// were checked (fewer than `limit`: none is left).
pub(super) fn backfill(c: &Connection, limit: usize) -> Result<usize> {
    let upto: Option<i64> = c.query_row("SELECT max(upto) FROM revisions_unchecked", [], |r| r.get(0))?;
    let Some(upto) = upto else { return Ok(0) };
    let todo: Vec<(i64, String, String)> = {
        let mut stmt =
            c.prepare_cached("SELECT id, prompt, reply FROM memories WHERE id <= ?1 ORDER BY id DESC LIMIT ?2")?;
        let rows = stmt.query_map(params![upto, limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (id, prompt, reply) in &todo {
        if says_it_revises(prompt, reply) {
            link(c, *id)?;
        }
    }
    match todo.last() {
        Some(&(last, _, _)) if todo.len() == limit => {
            c.execute("UPDATE revisions_unchecked SET upto = ?1", [last - 1])?;
        }
        _ => {
            c.execute("DELETE FROM revisions_unchecked", [])?;
        }
    }
    Ok(todo.len())
}

/// Word beginnings that say a text changes an earlier choice, in the languages ovmem's users
/// write. "now" and "update" are left out: they are said of everything, not only of revisions.
const CUES: &[&str] = &[
    // English. Words that also describe everyday edits ("moved the helper", "changed the
    // signature", "latency dropped") count only in the phrases that revise a choice.
    "actually",
    "instead",
    "switch",
    "replac",
    "revert",
    "swap",
    "undo",
    "undid",
    "roll back",
    "rolled back",
    "rollback",
    "supersed",
    "deprecat",
    "no longer",
    "anymore",
    "any more",
    "change of plan",
    "revisit",
    "reconsider",
    "rethink",
    "second thought",
    "changed my mind",
    "changed our mind",
    "change it to",
    "changed it to",
    "changed to",
    "changing to",
    "migrate to",
    "migrated to",
    "migrating to",
    "migrate from",
    "migrated from",
    "migrating from",
    "move to",
    "moved to",
    "moving to",
    "move off",
    "moved off",
    "went back to",
    "go back to",
    "stop using",
    "stopped using",
    "not use",
    "was a mistake",
    "get rid of",
    "got rid of",
    "over to",
    "in favour of",
    "in favor of",
    "is gone",
    "new direction",
    "can't stay",
    "cannot stay",
    "in place of",
    "rather than",
    // German
    "stattdessen",
    "umgestellt",
    "umstell",
    "ersetz",
    "gewechselt",
    "wechsel",
    "nicht mehr",
    // French, Spanish, Portuguese, Italian
    "plutôt",
    "remplac",
    "désormais",
    "en lugar de",
    "en vez de",
    "reemplaz",
    "cambiamos",
    "em vez de",
    "substitu",
    "invece",
    "sostituit",
];

/// The same for scripts written without spaces, matched anywhere in the text. A verb is listed
/// by the stems of its forms that revise (Korean 바꾸다: 바꾸-, 바꿔-, 바꿨-; Japanese 止める is
/// やめる written in kanji), as the English list has "switch" for switched and switching.
const CJK_CUES: &[&str] = &[
    "改用",
    "换成",
    "改成",
    "改为",
    "替换",
    "不再",
    "取代",
    "換成",
    "改為",
    "替換",
    "切换",
    "切換",
    "停用",
    "弃用",
    "棄用",
    "改回",
    "换掉",
    "換掉",
    "迁移到",
    "遷移到", // Chinese
    "代わりに",
    "切り替え",
    "切り替わ",
    "置き換え",
    "差し替え",
    "乗り換え",
    "変更",
    "やめて",
    "やめる",
    "やめた",
    "止めて",
    "止める",
    "止めた",
    "移行", // Japanese
    "대신",
    "변경",
    "바꿨",
    "바꾸",
    "바꿔",
    "갈아타",
    "갈아탔",
    "교체",
    "전환", // Korean
];

/// Whether `text` says it revises something: a cue outside a question. "Should we purge
/// instead next time?", "what are we actually running there?" and "换成 kafka 会不会就没这事了？"
/// weigh a change, they do not make it; a request put as a question ("can you switch it to
/// Kafka?") does.
pub fn says_revision(text: &str) -> bool {
    let lower = text.to_lowercase();
    let said = |i: usize| !weighs(&lower, i);
    if CJK_CUES.iter().any(|c| lower.match_indices(c).any(|(i, _)| said(i))) {
        return true;
    }
    // A cue begins a word: "drop" in "dropped", not in "eavesdrop".
    let begins = |i: usize| lower[..i].chars().next_back().is_none_or(|p| !p.is_alphanumeric() && p != '_');
    CUES.iter().any(|cue| {
        lower.match_indices(cue).any(|(i, _)| begins(i) && said(i) && (!OPENING.contains(cue) || opens(&lower, i)))
    }) || words(&lower).any(|(i, w)| {
        SPLIT_CUES
            .iter()
            .any(|(verbs, particles)| verbs.contains(&w) && said(i) && particle_follows(&lower, i, particles))
    })
}

/// The words of a text (letters, digits and apostrophes) with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

/// A verb that revises with its particle after its object ("move the API off Render",
/// "migrating the cron jobs onto Temporal"), where the object keeps the words of
/// [`CUES`]' "move off" and "migrate to" apart. "move X to Y" is left out: it is how a file or a
/// function is moved.
const SPLIT_CUES: &[(&[&str], &[&str])] = &[
    (&["move", "moves", "moved", "moving"], &["off"]),
    (&["migrate", "migrates", "migrated", "migrating"], &["to", "onto", "off", "from"]),
];

/// Words that may stand between a split cue's verb and its particle.
const SPLIT_GAP: usize = 4;

/// Whether one of `particles` follows the word at byte `at` of `text` within [`SPLIT_GAP`] words,
/// in its clause.
fn particle_follows(text: &str, at: usize, particles: &[&str]) -> bool {
    let rest = &text[at..];
    let ends = |(j, c): (usize, char)| ends_clause(c) || ends_sentence(rest, j, c);
    let clause = rest.char_indices().find(|&jc| ends(jc)).map_or(rest.len(), |(j, _)| j);
    words(&rest[..clause]).skip(1).take(SPLIT_GAP + 1).any(|(_, w)| particles.contains(&w))
}

/// Cues that revise only where they open a sentence ("Actually, use Postgres"; "no, actually,
/// keep it"): within one they stress ("how does a heat pump actually work", "she's actually glad").
const OPENING: &[&str] = &["actually"];

/// Words that may come before an opening cue in its sentence.
const INTERJECTIONS: &[&str] = &["oh", "no", "nah", "wait", "hmm", "ok", "okay", "well", "so", "but", "and"];

/// Whether the word of `text` (lower case) at byte `at` opens its sentence, after interjections
/// at most.
fn opens(text: &str, at: usize) -> bool {
    words(&text[sentence_start(text, at)..at]).all(|(_, w)| INTERJECTIONS.contains(&w))
}

/// The byte where the sentence of `text` holding byte `at` starts.
fn sentence_start(text: &str, at: usize) -> usize {
    text[..at].char_indices().rev().find(|&(j, c)| ends_sentence(text, j, c)).map_or(0, |(j, c)| j + c.len_utf8())
}

/// Whether `c` at byte `j` of `text` ends a sentence, in the scripts ovmem's users write: a full
/// stop only before a space (not in `config.toml` or `v2.0`).
fn ends_sentence(text: &str, j: usize, c: char) -> bool {
    match c {
        '!' | '?' | '\n' | '。' | '！' | '？' => true,
        '.' => text[j + 1..].chars().next().is_none_or(char::is_whitespace),
        _ => false,
    }
}

/// Whether `c` ends a clause within a sentence (a comma, a semicolon or a colon, in Latin or CJK
/// form, or an enumeration comma).
fn ends_clause(c: char) -> bool {
    matches!(c, ',' | ';' | ':' | '，' | '；' | '：' | '、')
}

/// Openings of a question that asks for something to be done rather than whether to do it.
const REQUESTS: &[&str] = &["can you", "could you", "would you", "will you", "can we", "please"];

/// Whether the sentence of `text` (lower case) around byte `at` is a question that weighs a
/// change: its clause says a Chinese "whether" ([`WHETHER`]), or it ends with a question mark and
/// does not open as a request.
fn weighs(text: &str, at: usize) -> bool {
    let start = sentence_start(text, at);
    let end = text[at..].char_indices().map(|(j, c)| (at + j, c)).find(|&(j, c)| ends_sentence(text, j, c));
    // Chinese asks "whether" by saying both ("会不会", "要不要"), often with no question mark:
    // in the cue's own clause.
    let to = end.map_or(text.len(), |(j, _)| j);
    let from = text[start..at].rfind(ends_clause).map_or(start, |j| start + j);
    let upto = text[at..to].find(ends_clause).map_or(to, |j| at + j);
    if WHETHER.iter().any(|w| text[from..upto].contains(w)) {
        return true;
    }
    if !matches!(end, Some((_, '?' | '？'))) {
        return false;
    }
    let sentence = text[start..at].trim_start_matches(|c: char| !c.is_alphanumeric());
    !REQUESTS.iter().any(|r| sentence.starts_with(r))
}

/// Chinese "whether or not" forms that weigh a change rather than ask for it ("能不能", can you,
/// asks for it).
const WHETHER: &[&str] = &["会不会", "會不會", "要不要", "是不是"];

/// At most this many of the memory's rarest terms are looked up.
const TERMS: usize = 16;
/// A term in more memories than this share of the bank (or this many) says nothing of a subject.
const COMMON_SHARE: f64 = 0.2;
const COMMON_MAX: u32 = 2_000;
/// An earlier memory may be on the same subject when it shares this share of the looked-up
/// terms' weight (IDF, identifiers and numbers counting double)...
const SAME_SUBJECT: f64 = 0.2;
/// ...and is within this share of the best such memory. At most [`OLDER`] are linked.
const NEAR_BEST: f64 = 0.8;
const OLDER: usize = 2;
/// By meaning, an earlier memory is on the same subject when the model's vectors of the two are
/// at least this close (decisions and their revisions in other words measure about 0.45-0.8,
/// turns of one project on other subjects mostly below 0.4), and within [`NEAR_BEST_COS`] of the
/// nearest such memory.
const SAME_SUBJECT_COS: f32 = 0.45;
const NEAR_BEST_COS: f32 = 0.1;

/// The part of a memory's fields read for revisions.
fn head(s: &str) -> &str {
    // Its first 2,000 characters, in place (a copy of them was most of what asking cost).
    s.char_indices().nth(2_000).map_or(s, |(i, _)| &s[..i])
}

/// Whether a memory's own words say it revises something: what the user asked for, since an
/// assistant describes every edit in words like these ("moved the read to spawn_blocking",
/// "replaced the loop") and a user changing a choice says so. A memory with no prompt (a fact
/// written by hand) is judged on its text. Checked as the memory is inserted, so only these
/// memories are looked at again by [`link`].
pub(super) fn says_it_revises(prompt: &str, reply: &str) -> bool {
    let (prompt, reply) = (head(prompt), head(reply));
    says_revision(if prompt.trim().is_empty() { reply } else { prompt })
}

/// The things a memory names, from its terms and whether each is an identifier: its identifiers
/// with a letter (a service, a file, a product; not a number or a port, nor a flag such as `-q`
/// or a language such as C++, which a project's memories mention in passing whatever their
/// subject), each once.
pub(super) fn names<'a>(terms: impl Iterator<Item = (&'a str, bool)>) -> Vec<&'a str> {
    let mut n: Vec<&str> = terms
        .filter(|(t, strong)| *strong && t.chars().any(char::is_alphabetic) && !text::is_symbol(t))
        .map(|(t, _)| t)
        .collect();
    n.sort_unstable();
    n.dedup();
    n
}

/// Whether an earlier memory (`has`: does it say this term) names what a later one names: two of
/// `names` (one, if there is one), or it is about another subject however much of its wording it
/// shares: "NATS keeps dropping jobs in search-indexer; switch to Kafka" names NATS as
/// ledger-worker's choice does, but revises only a memory that names search-indexer too. A later
/// memory that names nothing may revise any.
pub(super) fn names_alike(names: &[&str], has: impl Fn(&str) -> bool) -> bool {
    names.iter().filter(|n| has(n)).count() >= names.len().min(2)
}

/// Whether two memories are turns of one session: the later follows the earlier up, and is shown
/// with it; it does not revise it (neither when revisions are recorded nor at recall).
pub(super) fn one_session(a: Option<&str>, b: Option<&str>) -> bool {
    a.is_some() && a == b
}

/// Records which earlier memories of its bank memory `id` revises ([`says_it_revises`] said it
/// revises something). Runs in the writer's transaction, after the memory's postings are written.
pub(super) fn link(c: &Connection, id: i64) -> Result<usize> {
    let row: Option<(i64, String, String, i64, Option<String>, i64)> = c
        .prepare_cached(
            "SELECT m.bank_id, m.prompt, m.reply, m.created_at, m.session, b.docs FROM memories m
             JOIN banks b ON b.id = m.bank_id WHERE m.id = ?1",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .optional()?;
    let Some((bank, prompt, reply, at, session, docs)) = row else { return Ok(0) };
    let (prompt, reply) = (head(&prompt), head(&reply));
    // The memory's distinct terms (its own words: the session's topic is shared by every turn
    // of the session, so it is left out), with their document frequency in the bank.
    let mut strong: FxHashMap<String, bool> = FxHashMap::default();
    for t in text::analyse(prompt).into_iter().chain(text::analyse(reply)) {
        *strong.entry(t.text).or_insert(false) |= t.strong;
    }
    let common = ((docs as f64 * COMMON_SHARE) as u32).clamp(2, COMMON_MAX);
    let mut terms: Vec<(i64, f64)> = Vec::new();
    for (term, is_strong) in &strong {
        // A term only this memory has cannot be shared; one most memories have is no subject.
        if let Some((tid, df)) = super::index::term_df(c, bank, term)?.filter(|&(_, df)| df >= 2 && df <= common) {
            let idf = ((docs as f64 + 1.0) / df as f64).ln();
            terms.push((tid, if *is_strong { 2.0 * idf } else { idf }));
        }
    }
    terms.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    terms.truncate(TERMS);
    let mass: f64 = terms.iter().map(|t| t.1).sum();
    if terms.len() < 2 || mass <= 0.0 {
        // Too few shared words to judge by: by meaning alone.
        terms.clear();
    }
    let mut shared: FxHashMap<i64, f64> = FxHashMap::default();
    let mut list = Vec::new();
    for &(tid, w) in &terms {
        list.clear();
        super::index::postings(c, bank, tid, &mut list)?;
        for p in &list {
            if p.doc != id {
                *shared.entry(p.doc).or_insert(0.0) += w;
            }
        }
    }
    let mut ranked: Vec<(i64, f64)> =
        shared.into_iter().map(|(d, w)| (d, w / mass)).filter(|&(_, s)| s >= SAME_SUBJECT).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    // What the memory names (identifiers, however common): an earlier memory must name it too
    // ([`names_alike`]).
    let names = names(strong.iter().map(|(t, s)| (t.as_str(), *s)));
    let mut older = c.prepare_cached("SELECT created_at, session, prompt, reply FROM memories WHERE id = ?1")?;
    // An earlier memory this one may revise: earlier (the event's own time; the id breaks a
    // tie), of another session, and naming what this one names ([`names_alike`]). A turn of the
    // same session is what this one follows up ("what does the viola actually do"), shown with
    // it, not a decision it takes back.
    let mut may_revise = |doc: i64| -> Result<bool> {
        let row: Option<(i64, Option<String>, String, String)> =
            older.query_row([doc], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional()?;
        let Some((then, theirs, p, r)) = row else { return Ok(false) };
        if (then, doc) >= (at, id) || one_session(session.as_deref(), theirs.as_deref()) {
            return Ok(false);
        }
        if names.is_empty() {
            return Ok(true);
        }
        let theirs: FxHashSet<String> =
            text::analyse(head(&p)).into_iter().chain(text::analyse(head(&r))).map(|t| t.text).collect();
        Ok(names_alike(&names, |n| theirs.contains(n)))
    };
    let mut best: Option<f64> = None;
    let mut linked: Vec<i64> = Vec::new();
    for (doc, s) in ranked.into_iter().take(4 * OLDER) {
        if best.is_some_and(|b| s < b * NEAR_BEST) || linked.len() >= OLDER {
            break;
        }
        if !may_revise(doc)? {
            continue;
        }
        best.get_or_insert(s);
        revised_by(c, doc, &[id])?;
        linked.push(doc);
    }
    // By meaning: a revision said in other words than the decision it changes ("duplicate
    // request protection" for "idempotency keys") shares too few rare words with it, but the
    // model puts the two close together. The nearest earlier memories, when near enough; not for
    // a text the model does not read (mostly Han, kana or hangul), whose vectors are all about
    // as near to each other.
    if linked.len() < OLDER && crate::embed::reads_script(prompt) && crate::embed::reads_script(reply) {
        if let Some(v) = super::vectors::vectors(c, &[id])?.remove(&id) {
            // Found by any of their vectors, judged on their subjects (first vectors, which the
            // search decodes for the memories it keeps) alone.
            let found = super::vectors::nearest_read(c, bank, &v, 4 * OLDER + 1)?;
            let mut near: Vec<(i64, f32)> =
                found.iter().map(|(doc, (subject, _))| (*doc, crate::embed::dot(&v, subject))).collect();
            near.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
            let mut best: Option<f32> = None;
            for (doc, cos) in near {
                if linked.len() >= OLDER || cos < SAME_SUBJECT_COS || best.is_some_and(|b| cos < b - NEAR_BEST_COS) {
                    break;
                }
                if doc == id || linked.contains(&doc) || !may_revise(doc)? {
                    continue;
                }
                best.get_or_insert(cos);
                revised_by(c, doc, &[id])?;
                linked.push(doc);
            }
        }
    }
    Ok(linked.len())
}

/// The later memories that revise each of `ids` (older id, newer id), oldest reviser first.
pub fn revisers(c: &Connection, ids: &[i64]) -> Result<Vec<(i64, i64)>> {
    let mut stmt = c.prepare_cached(
        "SELECT r.older, r.newer FROM revisions r JOIN memories m ON m.id = r.newer
         WHERE r.older = ?1 ORDER BY m.created_at, r.newer",
    )?;
    let mut out = Vec::new();
    for &id in ids {
        let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        for row in rows {
            out.push(row?);
        }
    }
    Ok(out)
}

/// Records that `newer` revise `older` (an edited memory keeps its revisers).
pub(super) fn revised_by(c: &Connection, older: i64, newer: &[i64]) -> Result<()> {
    let mut insert = c.prepare_cached("INSERT OR IGNORE INTO revisions (older, newer) VALUES (?1, ?2)")?;
    for n in newer {
        insert.execute(params![older, n])?;
    }
    Ok(())
}

/// Drops the pairs a deleted memory is part of.
pub(super) fn remove(c: &Connection, id: i64) -> Result<()> {
    c.prepare_cached("DELETE FROM revisions WHERE older = ?1 OR newer = ?1")?.execute([id])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewMemory, Store};

    proptest::proptest! {
        /// Any text, with question marks and full stops of every script around its cues, is read
        /// whole: no sentence is cut inside a character.
        #[test]
        fn any_text_is_read_for_cues(s in crate::anytext::text(160), cue in proptest::sample::select(CUES), stop in proptest::sample::select(&["?", "？", ". ", "。", "!", "."][..])) {
            let t = format!("{s} {cue} {s}{stop}{s}");
            let _ = says_revision(&t);
            let _ = says_it_revises(&t, &s);
        }
    }

    const DAY: i64 = 86_400;

    fn turn<'a>(prompt: &'a str, reply: &'a str, at: i64) -> NewMemory<'a> {
        NewMemory { bank: "p", prompt, reply, harness: Some("codex"), created_at: at, ..Default::default() }
    }

    /// A bank with a decision about billing-api's queue, everyday turns about it and about
    /// another service, and filler, so that words are as rare as in a real bank.
    fn bank() -> (Store, i64, i64) {
        let s = Store::open_in_memory().unwrap();
        let t0 = 1_700_000_000;
        let decision = s
            .add(&turn(
                "For billing-api, which broker should carry the invoice jobs: RabbitMQ or NATS?",
                "RabbitMQ: the team already runs it. Wired in config/billing-api.toml.",
                t0,
            ))
            .unwrap()
            .unwrap();
        let other = s
            .add(&turn(
                "For ledger-worker, which broker should carry the posting jobs: RabbitMQ or NATS?",
                "NATS: it is already in the cluster. Wired in config/ledger-worker.toml.",
                t0 + DAY,
            ))
            .unwrap()
            .unwrap();
        s.add(&turn(
            "fix the flaky test in billing-api",
            "Moved the fixture to a per-test schema; it passes 200 runs.",
            t0 + 2 * DAY,
        ))
        .unwrap();
        everyday(&s, t0 + 3 * DAY);
        (s, decision, other)
    }

    /// Everyday turns on other things, a day apart from `from`, so that words are as rare as in
    /// a real bank.
    fn everyday(s: &Store, from: i64) {
        for (i, (p, r)) in [
            ("bump serde in ledger-worker", "Bumped serde; nothing used the changed APIs."),
            ("why is the docker build slow?", "The dependency layer came after COPY src; moved it before."),
            ("add a health endpoint", "Added /healthz returning the build hash."),
        ]
        .iter()
        .enumerate()
        {
            s.add(&turn(p, r, from + i as i64 * DAY)).unwrap();
        }
    }

    fn pairs(s: &Store) -> Vec<(i64, i64)> {
        let mut stmt = s.conn.prepare("SELECT older, newer FROM revisions ORDER BY older, newer").unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    }

    #[test]
    fn a_revision_is_linked_to_the_decision_it_changes_and_recalled_with_it() {
        let (s, decision, _) = bank();
        let at = 1_700_000_000 + 40 * DAY;
        let revision = s
            .add(&turn(
                "RabbitMQ keeps losing invoice jobs in billing-api; let's switch to Kafka",
                "Done: Kafka carries them now, config/billing-api.toml updated.",
                at,
            ))
            .unwrap()
            .unwrap();
        assert_eq!(pairs(&s), [(decision, revision)]);
        // A question in the decision's words alone brings the revision back, first, and the
        // decision marked as superseded by it.
        let hits = s.recall("p", "which broker did we pick?", 5).unwrap();
        let ids: Vec<i64> = hits.iter().map(|h| h.memory.id).collect();
        let (r, d) = (ids.iter().position(|&i| i == revision), ids.iter().position(|&i| i == decision));
        assert!(r.is_some() && r < d, "{ids:?}");
        assert_eq!(hits[d.unwrap()].superseded_by, Some((revision, at)));
        // An edited decision is still revised by it.
        let edited = match s.edit(decision, "For billing-api, RabbitMQ carries the invoice jobs", "").unwrap() {
            crate::store::curate::Edited::Replaced(id) => id,
            other => panic!("{other:?}"),
        };
        assert_eq!(pairs(&s), [(edited, revision)]);
        // Forgetting either side drops the pair.
        assert!(s.forget(revision).unwrap());
        assert!(pairs(&s).is_empty());
    }

    #[test]
    fn memories_stored_before_revisions_were_recorded_are_checked_later() {
        let (s, decision, _) = bank();
        let revision = s
            .add(&turn(
                "RabbitMQ keeps losing invoice jobs in billing-api; let's switch to Kafka",
                "Done: Kafka carries them now, config/billing-api.toml updated.",
                1_700_000_000 + 40 * DAY,
            ))
            .unwrap()
            .unwrap();
        // As a store migrated from before schema step 7 is: no pairs, every memory unchecked.
        s.conn.execute_batch("DELETE FROM revisions").unwrap();
        s.conn.execute_batch("DELETE FROM revisions_unchecked").unwrap();
        step_8(&s.conn).unwrap();
        assert!(pairs(&s).is_empty());
        let batches: Vec<usize> = (0..4).map(|_| s.write(|c| backfill(c, 3)).unwrap()).collect();
        assert_eq!(batches, [3, 3, 1, 0], "seven memories, three at a time, newest first, then nothing left");
        assert_eq!(pairs(&s), [(decision, revision)]);
        // The link found late orders them: the revision above the decision it replaced, which is
        // marked (another service's broker decision may rank anywhere: the question names none).
        let hits = s.recall("p", "which broker did we pick?", 5).unwrap();
        let at = |id: i64| hits.iter().position(|h| h.memory.id == id);
        assert!(at(revision).unwrap() < at(decision).unwrap(), "{hits:?}");
        assert_eq!(hits[at(decision).unwrap()].superseded_by.map(|s| s.0), Some(revision));
    }

    /// A tool's memories mention its flags whatever their subject: a flag is no name a revision
    /// must share with what it revises.
    #[test]
    fn a_flag_named_in_passing_does_not_make_a_revision_of_another_subject() {
        let s = Store::open_in_memory().unwrap();
        let t0 = 1_700_000_000;
        let quiet = s
            .add(&turn(
                "Asha's PR adds -q: print nothing, exit 0 on a match and 1 without",
                "Merged; with -q the receiver returns HasResults at the first match.",
                t0,
            ))
            .unwrap()
            .unwrap();
        everyday(&s, t0 + DAY);
        let later = s
            .add(&turn(
                "the receiver sometimes switches to streaming late; Tavian has a refactor for its buffer",
                "Merged his ReceiverBuffer in walk.rs: the receiver streams once its deadline passes; -q still \
                 returns HasResults at the first match.",
                t0 + 40 * DAY,
            ))
            .unwrap()
            .unwrap();
        assert!(!pairs(&s).contains(&(quiet, later)), "{:?}", pairs(&s));
        assert_eq!(
            names([("-q", true), ("c++", true), ("walker", false), ("hasresults", true)].into_iter()),
            ["hasresults"]
        );
    }

    #[test]
    fn everyday_edits_and_other_subjects_are_not_revisions() {
        let (s, _, _) = bank();
        let at = 1_700_000_000 + 40 * DAY;
        // An assistant describing an edit in revision words, to a prompt that revises nothing.
        s.add(&turn("make the billing-api invoice jobs async", "Replaced the blocking send; moved it to a task.", at))
            .unwrap();
        // A revision of another service's choice, in much the same words as the billing-api one.
        s.add(&turn(
            "NATS keeps dropping posting jobs in search-indexer; switch to Kafka",
            "Switched; config/search-indexer.toml updated.",
            at + 1,
        ))
        .unwrap();
        assert!(pairs(&s).is_empty(), "{:?}", pairs(&s));
    }

    #[test]
    fn a_turn_of_the_same_session_is_followed_up_not_revised() {
        let s = Store::open_in_memory().unwrap();
        let t0 = 1_700_000_000;
        let in_session = |prompt, reply, at| NewMemory { session: Some("s1"), ..turn(prompt, reply, at) };
        s.add(&in_session(
            "For billing-api, which broker should carry the invoice jobs: RabbitMQ or NATS?",
            "RabbitMQ: the team already runs it. Wired in config/billing-api.toml.",
            t0,
        ))
        .unwrap();
        everyday(&s, t0 + 2 * DAY);
        s.add(&in_session(
            "and the billing-api invoice jobs on RabbitMQ: quorum queues instead of classic ones",
            "Declared them as quorum queues in config/billing-api.toml.",
            t0 + 60,
        ))
        .unwrap();
        assert!(pairs(&s).is_empty(), "{:?}", pairs(&s));
    }

    #[test]
    fn an_imported_history_links_by_the_events_own_time() {
        let (s, decision, _) = bank();
        // Written after the decision but dated before it (an imported older history): it
        // cannot revise what came after it.
        s.add(&turn("let's switch billing-api's invoice jobs to Kafka instead of RabbitMQ", "Noted.", 1_600_000_000))
            .unwrap();
        assert!(pairs(&s).iter().all(|&(older, _)| older != decision), "{:?}", pairs(&s));
    }

    #[test]
    fn revision_wording_is_recognised_in_many_languages() {
        for t in [
            "change of plan: we drop RabbitMQ and go with Kafka",
            "Actually, use Postgres for the idempotency keys",
            "No, actually, keep the tokens for three days. And add a test",
            "Switched the cache to Redis",
            "we no longer run the nightly job",
            "Let's revisit duplicate request protection",
            "On second thought, keep the tokens for three days",
            "Wir nutzen stattdessen Postgres",
            "On remplace Redis par Postgres",
            "幂等键改用 Postgres 存储",
            "キャッシュを Redis に切り替えました",
            "캐시를 Redis 대신 Postgres로",
            "이제 그걸로 추천을 바꿔 주세요",
            "Teams の方はもう止めていいよ",
            "轮询切换到半小时一次",
            // A request put as a question, and a full stop inside a name.
            "Can you switch billing-api to Kafka instead?",
            "能不能换成腾讯云",
            "换成腾讯云吧，要不要通知客户我们再说",
            "Use `config.toml` instead. It is what the other services read",
            // A verb and its particle apart.
            "Let's move the API off Render to Fly.io",
            "We're migrating the nightly jobs onto Temporal",
        ] {
            assert!(says_revision(t), "{t}");
        }
        for t in [
            "We use Postgres for the idempotency keys",
            "Moved the dependency layer before COPY src, so rebuilds drop from 252s to 17s",
            "Bumped serde; nothing used the changed APIs",
            "the migration cost is not worth it",
            "update the docs now",
            "Moved the retry helper to src/net/retry.rs",
            "moving on, the migration runner logs to stdout",
            "We moved the call. Off-by-one fixed too",
            "Should we move the API off Render?",
            // A change weighed, not made.
            "should we purge the stream instead next time?",
            "And the tests on arm, what are we actually running there?",
            "换成 kafka 会不会就没这事了？",
            "换成 kafka 会不会就没这事了",
            "要不要改用 Postgres",
            "Redis の代わりに何がいい？",
            // Stress, not a change.
            "How does a heat pump actually work",
            "Leah says she's actually glad we didn't do Tulum.",
        ] {
            assert!(!says_revision(t), "{t}");
        }
    }
}

//! The embedded memory store: one SQLite database (`$OVMEM_HOME/memory.db`, WAL) holding the
//! memories of every bank with their own inverted index ([`index`]), per-session prompt buffers,
//! topics and flags, so every hook process of every harness shares state safely. Every write
//! takes the write lock up front (`BEGIN IMMEDIATE`) and waits for it within the caller's budget;
//! a captured turn and the prompts it consumes are one transaction, so a turn is stored exactly
//! once with its prompt or not at all. Schema versions are kept in `PRAGMA user_version`.

pub mod browse;
pub mod curate;
pub mod facets;
pub mod index;
pub mod injections;
pub mod lang;
mod outbox;
pub mod parts;
pub mod rank;
mod recall;
pub mod revise;
pub mod text;
pub mod vectors;
pub mod when;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use injections::Injection;
pub use recall::{prefetch_question, warm_model};

use index::{doc_terms, Batch};

/// The schema a new database gets, and older ones are migrated to.
const SCHEMA: &str = include_str!("schema.sql");
/// Version 3 added the outbox.
const OUTBOX: &str = include_str!("outbox.sql");

/// The schema steps after version 3, in order: a store at version `v` runs every step numbered
/// above `v`, each in the same write transaction. A new step takes the next number and is added
/// here; each helper of a change that adds tables owns its own step.
type Step = (i64, fn(&Connection) -> Result<()>);
const STEPS: &[Step] = &[
    (4, vectors::create),
    (5, injections::step),
    (6, outbox::step_6),
    (7, revise::step_7),
    (8, revise::step_8),
    (9, vectors::step_9),
    (10, revise::step_10),
    (11, vectors::step_11),
    (12, vectors::step_12),
    (13, vectors::step_13),
    (14, vectors::step_14),
    (15, index::step_15),
    (16, index::empty_banks_current),
    (17, index::empty_banks_current),
    (18, safe_bank_names),
];

/// Step 18: a bank an older ovmem named with a remote's credentials or query, or a secret in a
/// directory's name, is renamed (merged into the bank of its safe name when that exists).
fn safe_bank_names(c: &Connection) -> Result<()> {
    let names: Vec<String> = {
        let mut stmt = c.prepare("SELECT name FROM banks")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for name in names {
        if let Some(safe) = crate::project::safe_bank_name(&name) {
            Store::merge_in(c, &name, &safe)?;
        }
    }
    Ok(())
}

/// The schema version of a store that has run every step.
const VERSION: i64 = {
    let mut v = 3;
    let mut i = 0;
    while i < STEPS.len() {
        if STEPS[i].0 > v {
            v = STEPS[i].0;
        }
        i += 1;
    }
    v
};

/// Where a memory came from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A captured turn: what the user said and what the agent answered.
    #[default]
    Turn,
    /// A fact added by hand or through the MCP tools.
    Fact,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Turn => "turn",
            Kind::Fact => "fact",
        }
    }

    fn parse(s: &str) -> Self {
        if s == "fact" {
            Kind::Fact
        } else {
            Kind::Turn
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Memory {
    #[serde(default)]
    pub id: i64,
    #[serde(default)]
    pub bank: String,
    #[serde(default)]
    pub kind: Kind,
    /// What the user said (for a fact: the fact).
    #[serde(default)]
    pub prompt: String,
    /// What the agent answered.
    #[serde(default)]
    pub reply: String,
    /// The session's subject when the turn was captured, so a short follow-up makes sense.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topic: String,
    #[serde(default)]
    pub harness: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    /// When it happened (the harness's own time where it gives one), Unix seconds.
    pub created_at: i64,
}

impl Memory {
    /// The memory as one text: `User: …` / `Assistant: …` for a turn, the fact itself otherwise.
    pub fn content(&self) -> String {
        match (self.kind, self.prompt.is_empty(), self.reply.is_empty()) {
            (Kind::Fact, _, _) => self.prompt.clone(),
            (_, false, false) => format!("User: {}\nAssistant: {}", self.prompt, self.reply),
            (_, false, true) => format!("User: {}", self.prompt),
            (_, true, _) => format!("Assistant: {}", self.reply),
        }
    }
}

/// A memory as exported (and imported): the fields above plus `content`, the one-text form, so
/// exports stay readable by older versions and by people.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exported {
    #[serde(flatten)]
    pub memory: Memory,
    #[serde(default)]
    pub content: Option<String>,
}

impl Exported {
    /// A memory from an export line: its fields, or (older exports) `content` split back into
    /// prompt and reply.
    pub fn into_memory(self) -> Memory {
        let mut m = self.memory;
        if m.prompt.is_empty() && m.reply.is_empty() {
            let content = self.content.unwrap_or_default();
            match content.strip_prefix("User: ") {
                Some(rest) => match rest.split_once("\nAssistant: ") {
                    Some((p, r)) => (m.prompt, m.reply) = (p.to_string(), r.to_string()),
                    None => m.prompt = rest.to_string(),
                },
                None => match content.strip_prefix("Assistant: ") {
                    Some(r) => m.reply = r.to_string(),
                    None => {
                        m.kind = Kind::Fact;
                        m.prompt = content;
                    }
                },
            }
        }
        m
    }
}

/// A memory to store.
#[derive(Debug, Clone, Default)]
pub struct NewMemory<'a> {
    pub bank: &'a str,
    pub kind: Kind,
    pub prompt: &'a str,
    pub reply: &'a str,
    pub topic: &'a str,
    pub harness: Option<&'a str>,
    pub session: Option<&'a str>,
    pub created_at: i64,
    /// A captured turn's id: storing the same turn twice (a replayed spool file) is a no-op.
    pub turn_id: Option<&'a str>,
}

/// A recalled memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub memory: Memory,
    pub score: f32,
    /// A later memory on the same subject: its id and date.
    pub superseded_by: Option<(i64, i64)>,
    /// The query terms (analysed) it matched, for choosing the passage to show.
    pub terms: Vec<String>,
    /// Other turns of its session worth showing with it (a follow-up, an earlier step), oldest
    /// first.
    pub with: Vec<Memory>,
    /// It is the memory plain BM25 or the words alone rank first, shown whatever else is.
    pub kept: bool,
}

/// A bank of at most this much text (its weighted length, `banks.len`) is indexed anew within a
/// hook's backfill when an older analysis wrote its index (larger ones by `ovmem sync`): about
/// 18 ms of the hook's 40, some 500 short turns or 100 with an agent's long replies (2,000
/// memories of 135 words, 600,000, took 70 ms).
const REINDEX_IN_HOOK: i64 = 150_000;

/// What [`Store::backfill`] caught up on.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Backfilled {
    /// Memories given their vector.
    pub embedded: usize,
    /// Memories checked for whether they revise an earlier one.
    pub checked: usize,
    /// First vectors of large banks partitioned by meaning ([`vectors::partition`]).
    pub partitioned: usize,
    /// Banks indexed anew because their index was written by an older analysis of the text.
    pub reindexed: usize,
}

#[derive(Debug, Serialize)]
pub struct Stats {
    pub memories: i64,
    pub banks: Vec<(String, i64)>,
    pub pending_prompts: i64,
    pub schema_version: i64,
    pub bytes: u64,
    /// Memories waiting to be sent to the remote backend, the oldest one's time, the last error.
    pub queued: i64,
    pub queued_since: Option<i64>,
    pub last_send_error: Option<String>,
    /// Memories the server refused for good (parked, with the server's reason), and the newest
    /// one's reason.
    pub parked: i64,
    pub parked_error: Option<String>,
    /// Memories still without their vectors (found by their words until `ovmem sync` or later
    /// hooks embed them).
    pub without_vectors: i64,
    /// Banks large enough for their vectors to be partitioned that are not yet (or have doubled
    /// since): `ovmem sync` partitions them.
    pub to_partition: Vec<String>,
    /// Banks whose index an older analysis of the text wrote (hooks index the small ones anew,
    /// `ovmem sync` every one).
    pub to_reindex: Vec<String>,
}

pub struct Store {
    conn: std::mem::ManuallyDrop<Connection>,
    /// Hook processes exit right after their work: closing the last connection would make
    /// SQLite checkpoint and remove the WAL on every prompt. They leave that to the automatic
    /// checkpoint instead (the data is in the WAL either way).
    skip_close: bool,
    /// How long a write may wait for the lock (and retry) before giving up.
    busy: Duration,
}

impl Drop for Store {
    fn drop(&mut self) {
        if !self.skip_close {
            // SAFETY: dropped exactly once, here.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.conn) };
        }
    }
}

pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// The earliest date a memory may carry (2000-01-01): anything before is a broken clock or a
/// broken file, not a coding session.
pub const EARLIEST: i64 = 946_684_800;

/// Why a memory's date (Unix seconds) cannot be right, if it cannot: before [`EARLIEST`], or
/// more than a day ahead of this machine's clock (a date from the future would be shown first at
/// every session start, forever).
pub fn implausible_date(at: i64) -> Option<String> {
    let now = now();
    if at < EARLIEST {
        Some(format!("its date ({at}) is before 2000-01-01"))
    } else if at > now + 86_400 {
        let shown = if at < 253_402_300_800 { crate::dates::date(at) } else { format!("Unix time {at}") };
        Some(format!("its date ({shown}) is in the future"))
    } else {
        None
    }
}

/// Unix milliseconds: the order of a session's prompts and turns within one second.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// What one transaction adds besides the memory rows: their postings, and the memories that say
/// they revise something, linked to what they revise by their words once the postings are
/// written, and queued to be linked by their meaning once they have their vectors (which are
/// never computed inside a transaction: see [`Store::backfill`]).
#[derive(Default)]
struct Writes {
    postings: Batch,
    revisions: Vec<i64>,
}

impl Writes {
    fn flush(&mut self, c: &Connection) -> Result<()> {
        self.postings.flush(c)?;
        for &id in &self.revisions {
            revise::link(c, id)?;
        }
        revise::queue_relink(c, &self.revisions)?;
        self.revisions.clear();
        Ok(())
    }
}

/// Secrets and `<private>` spans never reach the database, whoever writes.
fn scrub(s: &str) -> std::borrow::Cow<'_, str> {
    crate::redact::scrub(s)
}

/// A session id as stored, sent and logged: itself, unless it holds what looks like a secret;
/// then a digest of it (the same for every hook of that session, so its turns stay together).
pub fn private_id(id: &str) -> std::borrow::Cow<'_, str> {
    // Most ids are UUIDs or short: nothing a secret rule would take.
    let uuid = id.len() == 36 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if id.len() < 16 || uuid || scrub(id) == id {
        return std::borrow::Cow::Borrowed(id);
    }
    std::borrow::Cow::Owned(format!("s-{}", &crate::fsx::sha256_hex(id.as_bytes())[..24]))
}

/// Whitespace-folded, lowercased: what counts as "the same text" for deduplication.
fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// 128 bits of sha256 over the whitespace-folded, lowercased fields.
fn content_hash(kind: Kind, prompt: &str, reply: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(kind.as_str());
    for field in [prompt, reply] {
        h.update([0x1f]);
        let mut first = true;
        for word in field.split_whitespace() {
            if !first {
                h.update(b" ");
            }
            first = false;
            if word.bytes().any(|b| b.is_ascii_uppercase() || b >= 0x80) {
                h.update(word.to_lowercase().as_bytes());
            } else {
                h.update(word.as_bytes());
            }
        }
    }
    h.finalize()[..16].to_vec()
}

fn is_busy(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<rusqlite::Error>().is_some_and(|e| {
            matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        })
    })
}

impl Store {
    /// Opens (creating if needed) the database; writes wait at most `busy` for the lock.
    pub fn open(path: &Path, busy: Duration) -> Result<Self> {
        // Root creating the store in another user's home (`sudo ovmem memory add` with their
        // HOME) makes it theirs, as the installer does what it creates (`fsx::heir`): their hooks
        // must write it. SQLite gives the WAL and shared-memory files the database's owner.
        let root = crate::sys::euid() == Some(0);
        if let Some(dir) = path.parent() {
            let made = if root { crate::fsx::create_dirs(dir, None).map(drop) } else { std::fs::create_dir_all(dir) };
            made.with_context(|| format!("could not create `{}`", dir.display()))?;
        }
        if root && std::fs::symlink_metadata(path).is_err() {
            // An empty file is an empty database to SQLite.
            let _ = crate::fsx::create_or_open(path, 0o600);
        }
        let conn =
            Connection::open(path).with_context(|| format!("could not open the memory store `{}`", path.display()))?;
        let store = Self::with_connection(conn, busy)?;
        let version: i64 = store.conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version != VERSION {
            // WAL mode is a property of the database file: set once, when it is created or migrated.
            store
                .conn
                .pragma_update(None, "journal_mode", "WAL")
                .context("could not switch the memory store to WAL")?;
            store.migrate().with_context(|| format!("could not prepare the memory store `{}`", path.display()))?;
        }
        Ok(store)
    }

    pub fn open_in_memory() -> Result<Self> {
        let store = Self::with_connection(Connection::open_in_memory()?, Duration::from_secs(1))?;
        store.migrate()?;
        Ok(store)
    }

    fn with_connection(conn: Connection, busy: Duration) -> Result<Self> {
        // A hook process lives a few milliseconds: SQLite's lookaside pool (120 KB touched up
        // front) costs it more in page faults than it saves in allocations.
        // SAFETY: the handle is valid and has no lookaside memory outstanding yet.
        unsafe {
            rusqlite::ffi::sqlite3_db_config(
                conn.handle(),
                rusqlite::ffi::SQLITE_DBCONFIG_LOOKASIDE,
                std::ptr::null_mut::<std::ffi::c_void>(),
                0i32,
                0i32,
            );
        }
        conn.busy_timeout(busy)?;
        // Read, not mapped (`mmap_size` stays 0): a hook's process maps nothing of the store, so
        // it neither faults in a page-table entry for every page it touches (sixteen at a time,
        // by fault-around, on a read as random as a shortlist's) nor tears them down on exit; a
        // blob's overflow pages are read straight into the caller's buffer. 0.9 to 1.2 ms less
        // per prompt at 10,000 memories, taking turns with the mapped store.
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA mmap_size = 0")?;
        Ok(Self { conn: std::mem::ManuallyDrop::new(conn), skip_close: false, busy })
    }

    /// Writes from here on wait at most `wait` for another process's lock (opening, and migrating,
    /// waited the budget the store was opened with).
    pub fn with_write_wait(mut self, wait: Duration) -> Self {
        self.busy = wait;
        let _ = self.conn.busy_timeout(wait);
        self
    }

    /// For a process about to exit: do not checkpoint on close (see `skip_close`). Instead the
    /// WAL is folded back into the database once it passes 256 KiB (a `stat` per hook, a
    /// checkpoint every few dozen writes). That bound matters on every hook: a process that opens
    /// the store alone rebuilds SQLite's WAL index by reading and checksumming the whole WAL, so
    /// a 4 MiB WAL cost each prompt hook about a millisecond. The checkpoint never waits: when
    /// another process holds the store, it is left to a later hook.
    pub fn for_exiting_process(mut self, path: &Path) -> Self {
        self.skip_close = true;
        let wal = crate::fsx::sibling(path, "-wal");
        if std::fs::metadata(wal).is_ok_and(|m| m.len() > 256 << 10) {
            let _ = self.conn.busy_timeout(Duration::ZERO);
            let _ = self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            let _ = self.conn.busy_timeout(self.busy);
        }
        self
    }

    /// Runs `f` in a write transaction taken up front (`BEGIN IMMEDIATE`), so it never fails
    /// half-way on a lock upgrade; waits for the lock and retries within the store's budget.
    fn write<T>(&self, mut f: impl FnMut(&Connection) -> Result<T>) -> Result<T> {
        let deadline = Instant::now() + self.busy;
        loop {
            let attempt = (|| -> Result<T> {
                self.conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
                match f(&self.conn) {
                    Ok(v) => {
                        self.conn.prepare_cached("COMMIT")?.execute([])?;
                        Ok(v)
                    }
                    Err(e) => {
                        let _ = self.conn.execute_batch("ROLLBACK");
                        Err(e)
                    }
                }
            })();
            match attempt {
                Err(e) if is_busy(&e) && Instant::now() < deadline => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => return other,
            }
        }
    }

    fn migrate(&self) -> Result<()> {
        self.write(|c| {
            // Re-checked under the write lock: another hook may have migrated meanwhile.
            let version: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0))?;
            match version {
                v if (3..=VERSION).contains(&v) => {}
                0 => c.execute_batch(&format!("{SCHEMA}\n{OUTBOX}"))?,
                1 => {
                    migrate_v1(c)?;
                    c.execute_batch(OUTBOX)?;
                }
                2 => c.execute_batch(OUTBOX)?,
                v => anyhow::bail!(
                    "the memory store has schema version {v}, newer than this ovmem understands ({VERSION}); upgrade ovmem"
                ),
            }
            if version == VERSION {
                return Ok(());
            }
            for (step, run) in STEPS {
                if *step > version.max(3) {
                    run(c)?;
                }
            }
            c.pragma_update(None, "user_version", VERSION)?;
            Ok(())
        })
    }

    fn bank_id(c: &Connection, bank: &str, create: bool) -> rusqlite::Result<Option<i64>> {
        let found =
            c.prepare_cached("SELECT id FROM banks WHERE name = ?1")?.query_row([bank], |r| r.get(0)).optional()?;
        if found.is_some() || !create {
            return Ok(found);
        }
        // A new bank's index is written by the current analysis (the column's default is the
        // analysis of the time step 15 ran). A store migrated from before step 15 creates its
        // banks before the column exists, and step 15 marks them.
        if c.prepare_cached("SELECT 1 FROM pragma_table_info('banks') WHERE name = 'analysis'")?.exists([])? {
            c.prepare_cached("INSERT INTO banks (name, analysis) VALUES (?1, ?2)")?
                .execute(params![bank, text::ANALYSIS])?;
        } else {
            c.prepare_cached("INSERT INTO banks (name) VALUES (?1)")?.execute([bank])?;
        }
        Ok(Some(c.last_insert_rowid()))
    }

    /// Inserts one memory inside a transaction, queueing its postings in `batch`; `None` when
    /// the same memory (or the same turn) is already stored.
    fn insert(c: &Connection, m: &NewMemory, batch: &mut Writes) -> Result<Option<i64>> {
        let (prompt, reply, topic) = (scrub(m.prompt), scrub(m.reply), scrub(m.topic));
        let m = NewMemory { prompt: &prompt, reply: &reply, topic: &topic, ..m.clone() };
        let terms = doc_terms(m.prompt, m.reply, m.topic);
        let hash = content_hash(m.kind, m.prompt, m.reply);
        Self::insert_analysed(c, &m, &terms, &hash, batch)
    }

    /// [`Store::insert`] with the analysis done beforehand (an import analyses on another thread).
    fn insert_analysed(
        c: &Connection,
        m: &NewMemory,
        terms: &index::DocTerms,
        hash: &[u8],
        batch: &mut Writes,
    ) -> Result<Option<i64>> {
        if m.prompt.trim().is_empty() && m.reply.trim().is_empty() {
            return Ok(None);
        }
        let bank = Self::bank_id(c, m.bank, true)?.expect("created");
        let n = c
            .prepare_cached(
                "INSERT OR IGNORE INTO memories
                 (bank_id, kind, prompt, reply, topic, harness, session, created_at, captured_at, hash, turn_id, len)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?
            .execute(params![
                bank,
                m.kind.as_str(),
                m.prompt,
                m.reply,
                m.topic,
                m.harness,
                m.session,
                m.created_at,
                now(),
                hash,
                m.turn_id,
                terms.len
            ])?;
        if n == 0 {
            return Ok(None);
        }
        let id = c.last_insert_rowid();
        batch.postings.add(c, bank, id, terms)?;
        if revise::says_it_revises(m.prompt, m.reply) {
            batch.revisions.push(id);
        }
        Ok(Some(id))
    }

    /// Adds a memory, then its vectors; `None` when the same one is already in that bank.
    pub fn add(&self, m: &NewMemory) -> Result<Option<i64>> {
        let id = self.write(|c| {
            let mut batch = Writes::default();
            let id = Self::insert(c, m, &mut batch)?;
            batch.flush(c)?;
            Ok(id)
        })?;
        if id.is_some() {
            // Best effort: the memory is stored; a later backfill gives it its vectors if this
            // cannot (a busy store), and the caller is not told it failed when it did not.
            let _ = self.embed_newest(1);
        }
        Ok(id)
    }

    /// Adds a fact (by hand, or from the MCP tools) to `bank`.
    pub fn add_fact(&self, bank: &str, text: &str, harness: Option<&str>, at: i64) -> Result<Option<i64>> {
        self.add(&NewMemory { bank, kind: Kind::Fact, prompt: text, harness, created_at: at, ..Default::default() })
    }

    /// Imports memories in transactions of `batch_size` rows: rows and their postings are written
    /// together, while the next batch is read and analysed on a second thread, which is what makes
    /// a large import fast. Their vectors come later ([`Store::backfill`]: hooks, `ovmem sync`).
    /// Stops at the first error the iterator yields, keeping what came before.
    /// Returns (added, duplicates).
    pub fn import<I>(&self, memories: I, batch_size: usize) -> Result<(usize, usize)>
    where
        I: Iterator<Item = Result<Memory>> + Send,
    {
        type Analysed = (Memory, index::DocTerms, Vec<u8>);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Vec<Analysed>>>(2);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let mut chunk: Vec<Analysed> = Vec::with_capacity(batch_size);
                for m in memories {
                    match m {
                        Ok(mut m) => {
                            for field in [&mut m.prompt, &mut m.reply, &mut m.topic] {
                                if let std::borrow::Cow::Owned(s) = scrub(field) {
                                    *field = s;
                                }
                            }
                            // What names where a memory came from is kept as safely as its text.
                            if let Some(safe) = crate::project::safe_bank_name(&m.bank) {
                                m.bank = safe;
                            }
                            if let Some(std::borrow::Cow::Owned(s)) = m.harness.as_deref().map(scrub) {
                                m.harness = Some(s);
                            }
                            if let Some(std::borrow::Cow::Owned(s)) = m.session.as_deref().map(private_id) {
                                m.session = Some(s);
                            }
                            let terms = doc_terms(&m.prompt, &m.reply, &m.topic);
                            let hash = content_hash(m.kind, &m.prompt, &m.reply);
                            chunk.push((m, terms, hash));
                            if chunk.len() >= batch_size && tx.send(Ok(std::mem::take(&mut chunk))).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Ok(std::mem::take(&mut chunk)));
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
                let _ = tx.send(Ok(chunk));
            });
            let (mut added, mut dup) = (0, 0);
            for chunk in rx {
                let chunk = chunk.map_err(|e| e.context(format!("after {added} memories were imported")))?;
                let (a, d) = self.write(|c| {
                    let mut batch = Writes::default();
                    let (mut a, mut d) = (0, 0);
                    for (m, terms, hash) in &chunk {
                        let new = NewMemory {
                            bank: &m.bank,
                            kind: m.kind,
                            prompt: &m.prompt,
                            reply: &m.reply,
                            topic: &m.topic,
                            harness: m.harness.as_deref(),
                            session: m.session.as_deref(),
                            created_at: m.created_at,
                            turn_id: None,
                        };
                        match Self::insert_analysed(c, &new, terms, hash, &mut batch)? {
                            Some(_) => a += 1,
                            None => d += 1,
                        }
                    }
                    batch.flush(c)?;
                    Ok((a, d))
                })?;
                added += a;
                dup += d;
            }
            Ok((added, dup))
        })
    }

    /// Captures a finished turn in one transaction: the session's buffered prompts are taken (the
    /// payload's own prompt is the fallback), the memory stored with the session's topic, and the
    /// topic kept up to date. `Ok(None)` when there is nothing to store or it is already stored.
    pub fn capture(&self, turn: &Turn) -> Result<Option<i64>> {
        self.write(|c| {
            // The prompts seen before the turn ended; and any seen "after" this very moment, which
            // only a clock stepped back between prompt and stop can give (they came before it:
            // left, they were lost to this turn and glued onto the next).
            let now = now_ms();
            let mut prompts: Vec<String> = {
                let mut stmt = c.prepare_cached(
                    "SELECT prompt FROM session_prompts WHERE session = ?1
                     AND (coalesce(seen_ms, created_at * 1000 + 999) <= ?2 OR seen_ms > ?3)
                     ORDER BY coalesce(seen_ms, created_at * 1000 + 999), id",
                )?;
                let rows = stmt.query_map(params![turn.session, turn.buffered_before_ms, now], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            c.prepare_cached(
                "DELETE FROM session_prompts WHERE session = ?1
                 AND (coalesce(seen_ms, created_at * 1000 + 999) <= ?2 OR seen_ms > ?3)",
            )?
            .execute(params![turn.session, turn.buffered_before_ms, now])?;
            if prompts.is_empty() {
                prompts.extend(turn.fallback_prompt.iter().cloned());
            }
            let prompt = prompts.join("\n");
            let topic = Self::topic_for(c, turn.bank, turn.session, &prompt)?;
            let mut batch = Writes::default();
            let id = Self::insert(
                c,
                &NewMemory {
                    bank: turn.bank,
                    kind: Kind::Turn,
                    prompt: &prompt,
                    reply: turn.reply.unwrap_or(""),
                    topic: &topic,
                    harness: Some(turn.harness),
                    session: Some(turn.session),
                    created_at: turn.at,
                    turn_id: Some(turn.turn_id),
                },
                &mut batch,
            )?;
            batch.flush(c)?;
            if let (Some(id), Some(o)) = (id, turn.outbound) {
                Self::enqueue(c, id, &o)?;
            }
            Ok(id)
        })
    }

    /// The topic to store with a turn: the session's first substantial prompt, and for a short
    /// follow-up also the prompt before it. Records this prompt as the session's latest.
    fn topic_for(c: &Connection, bank: &str, session: &str, prompt: &str) -> Result<String> {
        let row: Option<(String, String)> = c
            .prepare_cached("SELECT topic, last_prompt FROM sessions WHERE session = ?1 AND bank = ?2")?
            .query_row(params![session, bank], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let substantial = text::analyse(prompt).len() >= 3;
        let clip = |s: &str| crate::runtime::capture::truncate(s.trim(), 200);
        let (topic, last) = row.unwrap_or_default();
        let mut parts: Vec<String> = Vec::new();
        if !topic.is_empty() && normalise(&topic) != normalise(prompt) {
            parts.push(topic.clone());
        }
        if !substantial && !last.is_empty() && last != topic && normalise(&last) != normalise(prompt) {
            parts.push(last.clone());
        }
        let new_topic = if topic.is_empty() && substantial { clip(prompt) } else { topic };
        let new_last = if prompt.trim().is_empty() { last } else { clip(prompt) };
        c.prepare_cached(
            "INSERT INTO sessions (session, bank, topic, last_prompt, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (session, bank) DO UPDATE SET topic = ?3, last_prompt = ?4, updated_at = ?5",
        )?
        .execute(params![session, bank, new_topic, new_last, now()])?;
        Ok(parts.join(" / "))
    }

    fn row_memory(r: &rusqlite::Row) -> rusqlite::Result<Memory> {
        Ok(Memory {
            id: r.get(0)?,
            bank: r.get(1)?,
            kind: Kind::parse(&r.get::<_, String>(2)?),
            prompt: r.get(3)?,
            reply: r.get(4)?,
            topic: r.get(5)?,
            harness: r.get(6)?,
            session: r.get(7)?,
            created_at: r.get(8)?,
        })
    }

    const FIELDS: &'static str = "m.id, b.name, m.kind, m.prompt, m.reply, m.topic, m.harness, m.session, m.created_at";
    const FROM: &'static str = "memories m JOIN banks b ON b.id = m.bank_id";

    fn get_with_len(&self, id: i64) -> Result<Option<(Memory, u32)>> {
        let sql = format!("SELECT {}, m.len FROM {} WHERE m.id = ?1", Self::FIELDS, Self::FROM);
        Ok(self.conn.prepare_cached(&sql)?.query_row([id], |r| Ok((Self::row_memory(r)?, r.get(9)?))).optional()?)
    }

    fn get(&self, id: i64) -> Result<Option<Memory>> {
        let sql = format!("SELECT {} FROM {} WHERE m.id = ?1", Self::FIELDS, Self::FROM);
        Ok(self.conn.prepare_cached(&sql)?.query_row([id], Self::row_memory).optional()?)
    }

    /// Catches up on what an older store's memories lack, in small transactions until nothing is
    /// left or `budget` is spent: their vectors (newest first), then whether they revise an
    /// earlier memory.
    pub fn backfill(&self, budget: Duration) -> Result<Backfilled> {
        const STEP: usize = 64;
        let deadline = Instant::now() + budget;
        let mut done = Backfilled::default();
        // Vectors are computed outside any transaction (the model takes tens of milliseconds per
        // memory, and no writer should wait for it), at least one per call, then written.
        // A long budget (`ovmem sync`) uses every core; a hook's short one, this thread.
        let long = budget >= Duration::from_secs(1);
        // Banks whose index an older analysis wrote are indexed anew, one write each: any bank
        // with a long budget, a small one in a hook (a bank's index is rebuilt whole, at about
        // 30,000 short memories a second).
        let most = if long { i64::MAX } else { REINDEX_IN_HOOK };
        while Instant::now() < deadline {
            let Some(bank) = index::stale_bank(&self.conn, text::ANALYSIS, most)? else { break };
            self.write(|c| Self::reindex(c, bank))?;
            done.reindexed += 1;
        }
        let workers = if long { std::thread::available_parallelism().map_or(1, |n| n.get()).min(4) } else { 1 };
        let mut caught_up = false;
        loop {
            let todo = vectors::todo(&self.conn, 16 * workers)?;
            let embedded = vectors::embed_until(&todo, deadline, workers);
            let n = embedded.len();
            self.write(|c| vectors::fill(c, &embedded))?;
            done.embedded += n;
            if n < todo.len() || Instant::now() >= deadline {
                break;
            }
            if todo.len() < 16 * workers {
                caught_up = true;
                break;
            }
        }
        // The revisions just given their vectors are linked by meaning now, whatever is left of
        // the budget (a few lookups each).
        if revise::relink_queued(&self.conn)? {
            done.checked += self.write(|c| revise::relink(c, STEP))?;
        }
        if !caught_up {
            return Ok(done);
        }
        // A large bank's first vectors, partitioned once they are all in: seconds at a million
        // memories, so only with a long budget (`ovmem sync`), never in a hook.
        if long {
            for bank in vectors::partitions_due(&self.conn)? {
                done.partitioned += self.write(|c| vectors::partition(c, bank))?;
            }
        }
        // Then revisions: memories stored before they were recorded, and the rest of those
        // waiting to be linked by meaning. Each queue is read before a write is taken.
        type Queue = (fn(&Connection) -> Result<bool>, fn(&Connection, usize) -> Result<usize>);
        let queues: [Queue; 2] = [(revise::unchecked, revise::backfill), (revise::relink_queued, revise::relink)];
        for (pending, step) in queues {
            while Instant::now() < deadline && pending(&self.conn)? {
                let n = self.write(|c| step(c, STEP))?;
                done.checked += n;
                if n < STEP {
                    break;
                }
            }
        }
        Ok(done)
    }

    /// Gives the `n` newest memories without vectors theirs (what was just written, outside its
    /// transaction), then links those queued by meaning.
    pub(crate) fn embed_newest(&self, n: usize) -> Result<()> {
        let todo = vectors::todo(&self.conn, n)?;
        let embedded = vectors::embed_until(&todo, Instant::now() + Duration::from_secs(3600), 1);
        self.write(|c| vectors::fill(c, &embedded))?;
        if revise::relink_queued(&self.conn)? {
            self.write(|c| revise::relink(c, n))?;
        }
        Ok(())
    }

    /// Memories without a vector yet.
    pub fn missing_vectors(&self) -> Result<i64> {
        vectors::missing(&self.conn)
    }

    /// Whether a table created on first use exists yet.
    pub(crate) fn has_table(&self, name: &str) -> Result<bool> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1")?
            .query_row([name], |r| r.get(0))?;
        Ok(n > 0)
    }

    /// The newest memories of `bank` (its pinned ones first).
    pub fn recent(&self, bank: &str, limit: usize) -> Result<Vec<Memory>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE b.name = ?1 ORDER BY m.created_at DESC, m.id DESC LIMIT ?2",
            Self::FIELDS,
            Self::FROM
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![bank, limit as i64], Self::row_memory)?;
        let newest = rows.collect::<rusqlite::Result<_>>()?;
        self.pinned_then(bank, newest, limit)
    }

    /// Every memory (of one bank, or all), newest first.
    pub fn list(&self, bank: Option<&str>, limit: Option<usize>) -> Result<Vec<Memory>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE ?1 IS NULL OR b.name = ?1 ORDER BY m.created_at DESC, m.id DESC LIMIT ?2",
            Self::FIELDS,
            Self::FROM
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(params![bank, limit.map_or(-1, |l| l as i64)], Self::row_memory)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Deletes a memory and every trace of it; false when there is none with that id. See
    /// [`Store::forget_many`].
    pub fn forget(&self, id: i64) -> Result<bool> {
        Ok(self.forget_many(&[id])?.missing.is_empty())
    }

    /// Deletes memories and every trace of them; returns the ids there was no memory for. Gone
    /// with each: its postings (document frequencies decremented, blocks rewritten), the index
    /// terms and vocabulary only it used, its vectors, its outbox entry, its session's topic and
    /// the parts of its session's other memories' topics taken from its prompt (those are indexed
    /// anew). Then its bytes: the database is rewritten without free space (`VACUUM`, with
    /// `secure_delete` on) and the WAL checkpointed and truncated, so the text survives neither in
    /// free pages, nor in the slack of live ones, nor in old WAL frames.
    pub fn forget_many(&self, ids: &[i64]) -> Result<Forgot> {
        self.conn.pragma_update(None, "secure_delete", "ON")?;
        let missing = self.write(|c| {
            let mut missing = Vec::new();
            for &id in ids {
                if !Self::forget_in(c, id)? {
                    missing.push(id);
                }
            }
            Ok(missing)
        });
        let scrub = match &missing {
            // Also when nothing was found: forgetting again finishes a rewrite that failed before.
            Ok(_) if !ids.is_empty() => self.vacuum().err().map(|e| format!("{e:#}")),
            _ => None,
        };
        let _ = self.conn.pragma_update(None, "secure_delete", "OFF");
        Ok(Forgot { missing: missing?, not_scrubbed: scrub })
    }

    fn forget_in(c: &Connection, id: i64) -> Result<bool> {
        type Row = (i64, String, String, String, String, Option<String>);
        let row: Option<Row> = c
            .query_row(
                "SELECT m.bank_id, b.name, m.prompt, m.reply, m.topic, m.session FROM memories m
                 JOIN banks b ON b.id = m.bank_id WHERE m.id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .optional()?;
        let Some((bank, bank_name, prompt, reply, topic, session)) = row else { return Ok(false) };
        let terms = doc_terms(&prompt, &reply, &topic);
        index::remove(c, bank, id, &terms)?;
        Self::delete_rows(c, id)?;
        if let Some(session) = &session {
            c.execute("DELETE FROM sessions WHERE session = ?1 AND bank = ?2", params![session, bank_name])?;
            if strip_topics(c, bank, session, &prompt)? {
                Self::reindex(c, bank)?;
            }
        }
        drop_unused_terms(c, terms.terms.iter().map(|(t, _)| t.as_str()))?;
        Ok(true)
    }

    /// Deletes a memory's row and the rows keyed by it (its outbox entry, its vector, its revision pairs); its
    /// postings are the caller's (removed, or rebuilt by [`Store::reindex`]).
    fn delete_rows(c: &Connection, id: i64) -> Result<()> {
        let bank: Option<i64> =
            c.query_row("SELECT bank_id FROM memories WHERE id = ?1", [id], |r| r.get(0)).optional()?;
        c.execute("DELETE FROM memories WHERE id = ?1", [id])?;
        c.execute("DELETE FROM outbox WHERE memory_id = ?1", [id])?;
        revise::remove(c, id)?;
        vectors::remove(c, id, bank)
    }

    /// Rewrites the database without free space, then truncates the WAL (see [`Store::forget_many`]).
    /// Best effort: a reader holding the store at that moment keeps old frames until it is done,
    /// so the checkpoint is retried within the store's budget.
    fn vacuum(&self) -> Result<()> {
        let deadline = Instant::now() + self.busy;
        while let Err(e) = self.conn.execute_batch("VACUUM") {
            let e = anyhow::Error::from(e);
            if !is_busy(&e) || Instant::now() >= deadline {
                return Err(e.context("could not rewrite the store without the deleted text (VACUUM)"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.truncate_wal()
    }

    /// Folds the WAL into the database and truncates it, waiting for readers within the store's
    /// budget (a hook reading at that moment holds old frames).
    fn truncate_wal(&self) -> Result<()> {
        let deadline = Instant::now() + self.busy;
        loop {
            let busy: i64 = self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
            if busy == 0 {
                return Ok(());
            }
            if Instant::now() >= deadline {
                anyhow::bail!("another process kept the store's WAL busy, so it could not be truncated");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Indexes a bank anew from its memories (after memories moved in, or a topic was rewritten).
    fn reindex(c: &Connection, bank: i64) -> Result<()> {
        let old: Vec<i64> = {
            let mut stmt = c.prepare("SELECT term_id FROM terms WHERE bank_id = ?1")?;
            let rows = stmt.query_map([bank], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        c.execute("DELETE FROM postings WHERE bank_id = ?1", [bank])?;
        c.execute("DELETE FROM terms WHERE bank_id = ?1", [bank])?;
        c.execute("UPDATE banks SET docs = 0, len = 0 WHERE id = ?1", [bank])?;
        let mut batch = Batch::default();
        {
            let mut stmt = c.prepare("SELECT id, prompt, reply, topic FROM memories WHERE bank_id = ?1 ORDER BY id")?;
            let mut rows = stmt.query([bank])?;
            while let Some(r) = rows.next()? {
                let (prompt, reply, topic): (String, String, String) = (r.get(1)?, r.get(2)?, r.get(3)?);
                batch.add(c, bank, r.get(0)?, &doc_terms(&prompt, &reply, &topic))?;
            }
        }
        batch.flush(c)?;
        for t in old {
            drop_unused_vocab(c, t)?;
        }
        c.execute("UPDATE banks SET analysis = ?2 WHERE id = ?1", params![bank, text::ANALYSIS])?;
        Ok(())
    }

    /// Moves every memory of bank `from` into bank `into` (prompt buffers and session topics
    /// too) and removes `from`; a memory already in `into` is kept once. Returns how many
    /// memories `from` had. Idempotent: a bank that is gone has nothing to move.
    pub fn merge(&self, from: &str, into: &str) -> Result<usize> {
        if from == into {
            return Ok(0);
        }
        self.write(|c| Self::merge_in(c, from, into))
    }

    fn merge_in(c: &Connection, from: &str, into: &str) -> Result<usize> {
        let Some(src) = Self::bank_id(c, from, false)? else { return Ok(0) };
        let moved: i64 = c.query_row("SELECT count(*) FROM memories WHERE bank_id = ?1", [src], |r| r.get(0))?;
        c.execute("UPDATE session_prompts SET bank = ?2 WHERE bank = ?1", params![from, into])?;
        c.execute("UPDATE OR IGNORE sessions SET bank = ?2 WHERE bank = ?1", params![from, into])?;
        c.execute("DELETE FROM sessions WHERE bank = ?1", [from])?;
        c.execute("UPDATE injections SET bank = ?2 WHERE bank = ?1", params![from, into])?;
        match Self::bank_id(c, into, false)? {
            // The usual first use: the bank only changes its name; its index stays valid.
            None => {
                c.execute("UPDATE banks SET name = ?2 WHERE id = ?1", params![src, into])?;
            }
            Some(dst) => {
                let dups: Vec<i64> = {
                    let mut stmt = c.prepare(
                        "SELECT id FROM memories WHERE bank_id = ?1
                         AND hash IN (SELECT hash FROM memories WHERE bank_id = ?2)",
                    )?;
                    let rows = stmt.query_map(params![src, dst], |r| r.get(0))?;
                    rows.collect::<rusqlite::Result<_>>()?
                };
                for &d in &dups {
                    Self::delete_rows(c, d)?;
                }
                c.execute("UPDATE memories SET bank_id = ?2 WHERE bank_id = ?1", params![src, dst])?;
                // Sign-bit blocks hold whole entries, so they move as they are; not partitioned
                // by the bank they join (read by every search until `ovmem sync` partitions it).
                c.execute("UPDATE vector_blocks SET bank_id = ?2, part = -1 WHERE bank_id = ?1", params![src, dst])?;
                c.execute("DELETE FROM vector_parts WHERE bank_id = ?1", [src])?;
                c.execute("DELETE FROM postings WHERE bank_id = ?1", [src])?;
                c.execute("DELETE FROM terms WHERE bank_id = ?1", [src])?;
                c.execute("DELETE FROM banks WHERE id = ?1", [src])?;
                Self::reindex(c, dst)?;
            }
        }
        Ok(moved as usize)
    }

    /// Carries a project's older banks (`from`, see [`crate::project::Bank`]) over into its bank
    /// on first use: one lookup by name each, a merge only for one that exists. Hooks racing
    /// here are safe: each merge is one write transaction, and a bank already moved is gone.
    pub fn carry_over(&self, into: &str, from: &[String]) -> Result<usize> {
        let mut n = 0;
        for f in from {
            if f != into && Self::bank_id(&self.conn, f, false)?.is_some() {
                n += self.merge(f, into)?;
            }
        }
        Ok(n)
    }

    /// Every bank with how many memories it holds, the largest first.
    pub fn banks(&self) -> Result<Vec<(String, i64)>> {
        let mut stmt = self.conn.prepare(
            "SELECT b.name, (SELECT count(*) FROM memories m WHERE m.bank_id = b.id) AS n FROM banks b
             ORDER BY n DESC, b.name",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The memories of `bank` whose own text (what the user said and the agent answered, not the
    /// session's topic stored with a follow-up) contains every word of `query` (as analysed), for
    /// forgetting by query: exact and conservative, never "the most similar". The query is
    /// scrubbed like everything stored, so a secret pasted in full matches the memory that holds
    /// it redacted, and text copied from `memory list` matches what is stored.
    pub fn matching_all(&self, bank: &str, query: &str) -> Result<Vec<Memory>> {
        let c = &*self.conn;
        let Some(bank_id) = Self::bank_id(c, bank, false)? else { return Ok(Vec::new()) };
        let words = |s: &str| -> std::collections::BTreeSet<String> {
            let all = text::analyse(s);
            // A whole identifier (a DSN, `a.b_c`) is also indexed as its words: a part of it
            // copied from `memory list` is matched by those words.
            all.iter()
                .filter(|t| !all.iter().any(|u| u != *t && u.start >= t.start && u.end <= t.end && u.text != t.text))
                .map(|t| t.text.clone())
                .collect()
        };
        let mut terms: Vec<String> = words(&scrub(query)).into_iter().collect();
        terms.sort();
        terms.dedup();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let mut docs: Option<std::collections::BTreeSet<i64>> = None;
        for t in &terms {
            let mut list = Vec::new();
            if let Some(id) = index::term_id(c, t, false)? {
                index::postings(c, bank_id, id, &mut list)?;
            }
            let set: std::collections::BTreeSet<i64> = list.iter().map(|p| p.doc).collect();
            docs = Some(match docs {
                None => set,
                Some(d) => d.intersection(&set).copied().collect(),
            });
        }
        let mut out = Vec::new();
        for id in docs.unwrap_or_default().into_iter().rev() {
            let Some(m) = self.get(id)? else { continue };
            let own = format!("{}\n{}", m.prompt, m.reply);
            let mut have = words(&own);
            have.extend(words(&scrub(&own)));
            if terms.iter().all(|t| have.contains(t)) {
                out.push(m);
            }
        }
        Ok(out)
    }

    pub fn stats(&self) -> Result<Stats> {
        let c = &*self.conn;
        let memories = c.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?;
        let mut stmt = c.prepare("SELECT name, docs FROM banks WHERE docs > 0 ORDER BY docs DESC, name")?;
        let banks = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        let pending_prompts = c.query_row("SELECT count(*) FROM session_prompts", [], |r| r.get(0))?;
        let schema_version = c.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let bytes: i64 =
            c.query_row("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()", [], |r| {
                r.get(0)
            })?;
        let d = self.outbox_depth()?;
        let mut to_partition = Vec::new();
        for bank in vectors::partitions_due(c)? {
            to_partition.push(c.query_row("SELECT name FROM banks WHERE id = ?1", [bank], |r| r.get(0))?);
        }
        Ok(Stats {
            memories,
            banks,
            pending_prompts,
            schema_version,
            bytes: bytes as u64,
            queued: d.queued,
            queued_since: d.since,
            last_send_error: d.last_error,
            parked: d.parked,
            parked_error: d.parked_error,
            without_vectors: vectors::missing(c)?,
            to_partition,
            to_reindex: index::stale_banks(c, text::ANALYSIS)?,
        })
    }

    /// Remembers a prompt until the turn's reply arrives, and makes the first substantial prompt
    /// of a session its topic.
    pub fn buffer_prompt(&self, session: &str, bank: &str, harness: &str, prompt: &str) -> Result<()> {
        self.buffer_prompt_item("", session, bank, harness, prompt, now_ms())
    }

    /// [`Store::buffer_prompt`] for a prompt with an id (`item`, empty for none): buffering the
    /// same item twice (a replayed spool file) keeps one copy. `at_ms` is when it was seen (Unix
    /// milliseconds): a turn takes the prompts seen before it, even within one second.
    pub fn buffer_prompt_item(
        &self,
        item: &str,
        session: &str,
        bank: &str,
        harness: &str,
        prompt: &str,
        at_ms: i64,
    ) -> Result<()> {
        let item = (!item.is_empty()).then_some(item);
        let prompt = &*scrub(prompt);
        self.write(|c| {
            c.prepare_cached(
                "INSERT OR IGNORE INTO session_prompts (session, bank, harness, prompt, created_at, item_id, seen_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![session, bank, harness, prompt, at_ms.div_euclid(1000), item, at_ms])?;
            if text::analyse(prompt).len() >= 3 {
                c.prepare_cached(
                    "INSERT INTO sessions (session, bank, topic, last_prompt, updated_at) VALUES (?1, ?2, ?3, '', ?4)
                     ON CONFLICT (session, bank) DO UPDATE SET topic = CASE WHEN topic = '' THEN ?3 ELSE topic END",
                )?
                .execute(params![
                    session,
                    bank,
                    crate::runtime::capture::truncate(prompt.trim(), 200),
                    now()
                ])?;
            }
            Ok(())
        })
    }

    /// Sets a per-session flag; true when it was not set before (first time).
    pub fn set_flag_once(&self, session: &str, flag: &str) -> Result<bool> {
        self.write(|c| {
            let n = c.execute(
                "INSERT OR IGNORE INTO session_flags (session, flag, created_at) VALUES (?1, ?2, ?3)",
                params![session, flag, now()],
            )?;
            Ok(n == 1)
        })
    }

    /// Drops flags and session topics older than `max_age` seconds. Prompts whose turn never
    /// finished (a crashed or abandoned session) are not dropped: they become memories of their
    /// own, one per session.
    pub fn prune(&self, max_age: i64) -> Result<()> {
        let cutoff = now() - max_age;
        self.write(|c| {
            let orphans: Vec<(String, String, String, String, i64)> = {
                let mut stmt = c.prepare(
                    "SELECT session, bank, harness, group_concat(prompt, char(10)), min(created_at)
                     FROM (SELECT * FROM session_prompts WHERE created_at < ?1 ORDER BY id)
                     GROUP BY session, bank, harness",
                )?;
                let rows = stmt.query_map([cutoff], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let mut batch = Writes::default();
            for (session, bank, harness, prompt, at) in &orphans {
                let new = NewMemory {
                    bank,
                    prompt,
                    harness: Some(harness),
                    session: Some(session),
                    created_at: *at,
                    ..Default::default()
                };
                Self::insert(c, &new, &mut batch)?;
            }
            batch.flush(c)?;
            c.execute("DELETE FROM session_prompts WHERE created_at < ?1", [cutoff])?;
            c.execute("DELETE FROM session_flags WHERE created_at < ?1", [cutoff])?;
            c.execute("DELETE FROM sessions WHERE updated_at < ?1", [cutoff - 23 * 86_400])?;
            Ok(())
        })
    }
}

/// What [`Store::forget_many`] did.
#[derive(Debug)]
pub struct Forgot {
    /// The ids there was no memory for.
    pub missing: Vec<i64>,
    /// Why the deleted text may still be in the file's free space (the rewrite or the WAL
    /// truncate could not be done); `None` when it is gone from the files too.
    pub not_scrubbed: Option<String>,
}

/// A finished turn, as the stop hook (or a replayed spool file) hands it to the store.
#[derive(Debug, Clone)]
pub struct Turn<'a> {
    pub turn_id: &'a str,
    pub bank: &'a str,
    pub session: &'a str,
    pub harness: &'a str,
    pub reply: Option<&'a str>,
    /// The prompt from the payload or transcript, used when no prompt was buffered.
    pub fallback_prompt: Option<String>,
    /// Only prompts seen up to this time (Unix milliseconds) belong to this turn (a spool replay
    /// must not take the prompts of later turns).
    pub buffered_before_ms: i64,
    pub at: i64,
    /// Queue the stored turn for the remote backend too (in the same transaction).
    pub outbound: Option<Outbound<'a>>,
}

/// Where a memory goes on the remote backend.
#[derive(Debug, Clone, Copy)]
pub struct Outbound<'a> {
    /// The server's bank (Hindsight).
    pub bank: &'a str,
    /// The project's identity (normalised git remote or directory name).
    pub project: &'a str,
    /// `completed` or `cancelled`.
    pub status: &'a str,
}

pub use outbox::{Depth, Parked, Queued, SessionToEnd, PARK_AFTER};

/// Removes from the topics of `session`'s other memories in `bank` every part taken from
/// `prompt` (a topic is ` / `-joined clips of earlier prompts); true when one changed.
fn strip_topics(c: &Connection, bank: i64, session: &str, prompt: &str) -> Result<bool> {
    let prompt = normalise(prompt);
    let rows: Vec<(i64, String)> = {
        let mut stmt =
            c.prepare("SELECT id, topic FROM memories WHERE bank_id = ?1 AND session = ?2 AND topic != ''")?;
        let rows = stmt.query_map(params![bank, session], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut changed = false;
    for (id, topic) in rows {
        let parts: Vec<&str> = topic.split(" / ").collect();
        let kept: Vec<&str> = parts
            .iter()
            .copied()
            .filter(|p| {
                let p = normalise(p.trim_end_matches('…'));
                p.is_empty() || !prompt.contains(&p)
            })
            .collect();
        if kept.len() != parts.len() {
            let topic = kept.join(" / ");
            c.execute("UPDATE memories SET topic = ?2 WHERE id = ?1", params![id, topic])?;
            // Its vector was read from the old topic too: the forgotten prompt's meaning goes.
            let (prompt, reply): (String, String) =
                c.query_row("SELECT prompt, reply FROM memories WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            vectors::remove(c, id, Some(bank))?;
            let mut pending = vectors::Pending::default();
            pending.add(bank, id, vectors::embed(&prompt, &reply, &topic));
            pending.flush(c)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// Drops the index terms no document uses any more (a document frequency of 0, with their empty
/// posting blocks) and the vocabulary no bank uses: their text came from what was deleted.
fn drop_unused_terms<'a>(c: &Connection, terms: impl Iterator<Item = &'a str>) -> Result<()> {
    for t in terms {
        let Some(id) = index::term_id(c, t, false)? else { continue };
        c.prepare_cached("DELETE FROM postings WHERE term_id = ?1 AND bank_id IN (SELECT bank_id FROM terms WHERE term_id = ?1 AND df <= 0)")?
            .execute([id])?;
        c.prepare_cached("DELETE FROM terms WHERE term_id = ?1 AND df <= 0")?.execute([id])?;
        drop_unused_vocab(c, id)?;
    }
    Ok(())
}

/// Drops a vocabulary entry that no bank's index uses any more.
fn drop_unused_vocab(c: &Connection, term_id: i64) -> Result<()> {
    c.prepare_cached("DELETE FROM vocab WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM terms WHERE term_id = ?1)")?
        .execute([term_id])?;
    Ok(())
}

/// Schema 1 (one FTS5 table over `User: … / Assistant: …` texts) to 2: every memory is split back
/// into prompt and reply and indexed anew; prompt buffers and flags are kept.
fn migrate_v1(c: &Connection) -> Result<()> {
    c.execute_batch(
        "DROP TRIGGER IF EXISTS memories_ai; DROP TRIGGER IF EXISTS memories_ad;
         DROP TABLE IF EXISTS memories_fts; DROP INDEX IF EXISTS memories_bank_time;
         DROP INDEX IF EXISTS session_prompts_session;
         ALTER TABLE memories RENAME TO memories_v1;
         ALTER TABLE session_prompts RENAME TO session_prompts_v1;
         ALTER TABLE session_flags RENAME TO session_flags_v1;",
    )?;
    c.execute_batch(SCHEMA)?;
    c.execute_batch(
        "INSERT INTO session_prompts (id, session, bank, harness, prompt, created_at)
           SELECT id, session, bank, harness, prompt, created_at FROM session_prompts_v1;
         DROP TABLE session_prompts_v1;
         INSERT INTO session_flags SELECT * FROM session_flags_v1; DROP TABLE session_flags_v1;",
    )?;
    let old: Vec<Memory> = {
        let mut stmt = c.prepare("SELECT bank, content, harness, session, created_at FROM memories_v1 ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            let content: String = r.get(1)?;
            Ok(Exported {
                memory: Memory {
                    bank: r.get(0)?,
                    harness: r.get(2)?,
                    session: r.get(3)?,
                    created_at: r.get(4)?,
                    ..Default::default()
                },
                content: Some(content),
            }
            .into_memory())
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    // Banks were raw working directories then (`project:/p/`, a symlinked path): each memory goes
    // to its project's bank under today's rule, so it is recalled there again.
    let pending: Vec<(i64, String)> = {
        let mut stmt = c.prepare("SELECT id, bank FROM session_prompts")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (id, bank) in pending {
        c.execute(
            "UPDATE session_prompts SET bank = ?2 WHERE id = ?1",
            params![id, crate::project::migrate_bank(&bank)],
        )?;
    }
    let old: Vec<Memory> =
        old.into_iter().map(|m| Memory { bank: crate::project::migrate_bank(&m.bank), ..m }).collect();
    let mut batch = Writes::default();
    for m in &old {
        let new = NewMemory {
            bank: &m.bank,
            kind: if m.harness.as_deref() == Some("cli") || m.harness.as_deref() == Some("mcp") {
                Kind::Fact
            } else {
                m.kind
            },
            prompt: &m.prompt,
            reply: &m.reply,
            harness: m.harness.as_deref(),
            session: m.session.as_deref(),
            created_at: m.created_at,
            ..Default::default()
        };
        Store::insert(c, &new, &mut batch)?;
    }
    // Their vectors come later (the vector tables are a later step): backfilled like any older store's.
    batch.postings.flush(c)?;
    c.execute_batch("DROP TABLE memories_v1;")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn<'a>(bank: &'a str, prompt: &'a str, reply: &'a str, at: i64) -> NewMemory<'a> {
        NewMemory { bank, prompt, reply, harness: Some("codex"), created_at: at, ..Default::default() }
    }

    /// Noon (UTC) of a `YYYY-MM-DD` day, in Unix seconds.
    fn noon(day: &str) -> i64 {
        crate::dates::parse_iso8601(&format!("{day}T12:00:00Z")).unwrap()
    }

    #[test]
    fn recall_ranks_by_relevance_within_a_bank() {
        let s = Store::open_in_memory().unwrap();
        let t = now();
        s.add(&turn("p1", "The staging database listens on port 5433", "", t)).unwrap();
        s.add(&turn("p1", "We deploy with a blue-green switch on Fridays", "", t)).unwrap();
        s.add(&turn("p2", "The staging database listens on port 9999", "", t)).unwrap();
        let hits = s.recall("p1", "Which port does the staging database use?", 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].memory.prompt.contains("5433"));
        assert!(s.recall("p3", "staging database", 5).unwrap().is_empty());
    }

    /// "In November" is read on the bank's calendar: the November before its newest memory
    /// (a project last worked on in February), and what was written then counts for more.
    #[test]
    fn a_question_that_names_a_time_prefers_what_was_written_then() {
        let s = Store::open_in_memory().unwrap();
        let july = "The nightly export failed again: the export job failed on a full disk of the export host";
        let november = "Nightly export broke because the upstream token had expired";
        s.add(&NewMemory { session: Some("s1"), ..turn("p", july, "", noon("2025-07-14")) }).unwrap();
        s.add(&NewMemory { session: Some("s2"), ..turn("p", november, "", noon("2025-11-20")) }).unwrap();
        s.add(&NewMemory { session: Some("s3"), ..turn("p", "Renamed the billing tables", "", noon("2026-02-10")) })
            .unwrap();
        let first = |q: &str| s.recall("p", q, 5).unwrap()[0].memory.prompt.clone();
        assert_eq!(first("Why did the nightly export fail?"), july);
        assert_eq!(first("Why did the nightly export fail in November?"), november);
        assert_eq!(first("Why did the nightly export fail in July?"), july);
    }

    /// Dozens of memories from other months match the question's words better; the one from
    /// the month it names, answering half as well, goes first.
    #[test]
    fn a_memory_from_the_named_time_goes_before_better_matches_from_other_months() {
        let s = Store::open_in_memory().unwrap();
        let subjects = ["login form", "search page", "mobile menu", "audit log", "invoice PDF"];
        let mut texts: Vec<String> = (0..100)
            .map(|i| format!("Reviewed the {} layout with design, ticket {i}", subjects[i % subjects.len()]))
            .collect();
        texts.extend((0..45).map(|i| format!("Nightly billing export failed again; reran billing export job {i}")));
        for (i, text) in texts.iter().enumerate() {
            let at = noon(&format!("2025-{:02}-{:02}", 1 + i % 10, 1 + i % 28));
            s.add(&NewMemory { session: Some(&format!("s{i}")), ..turn("p", text, "", at) }).unwrap();
        }
        let november = "The nightly billing export broke: the upstream token had expired";
        s.add(&NewMemory { session: Some("nov"), ..turn("p", november, "", noon("2025-11-20")) }).unwrap();
        s.add(&NewMemory { session: Some("feb"), ..turn("p", "Renamed the ledger tables", "", noon("2026-02-10")) })
            .unwrap();
        let first = |q: &str| s.recall("p", q, 5).unwrap()[0].memory.prompt.clone();
        assert_ne!(first("Why did the nightly billing export fail?"), november);
        assert_eq!(first("Why did the nightly billing export fail in November?"), november);
    }

    /// "Had the Fiesta been sold before my first shift at the warehouse?": five sessions about the
    /// sale take every slot by the question's words; the new job is told in other words in one
    /// session. Asked on its own, the second event brings that session into the slots.
    #[test]
    fn a_question_relating_two_events_shows_both() {
        let s = Store::open_in_memory().unwrap();
        let add = |session: &str, text: &str, at: i64| {
            s.add(&NewMemory { session: Some(session), ..turn("p", text, "", at) }).unwrap();
        };
        let sale = [
            "Put the old Fiesta up for sale online, asking 1,800 for it",
            "Someone came to look at the Fiesta and wanted it sold cheaper",
            "The Fiesta is sold! The buyer collected it on Saturday",
            "Paperwork now that the Fiesta is sold: the logbook and the insurance",
            "Should the Fiesta have been sold before the brakes were fixed?",
        ];
        for (i, text) in sale.iter().enumerate() {
            add(&format!("car{i}"), text, noon(&format!("2025-10-{:02}", 1 + i)));
        }
        add(
            "job",
            "Night rota at the distribution centre began yesterday: eight hours scanning pallets",
            noon("2025-11-03"),
        );
        let q = "Had the Fiesta been sold before my first shift at the warehouse?";
        let hits = s.recall("p", q, 3).unwrap();
        let sessions: Vec<&str> = hits.iter().filter_map(|h| h.memory.session.as_deref()).collect();
        assert!(sessions.contains(&"job"), "{sessions:?}");
        assert!(sessions.iter().any(|s| s.starts_with("car")), "{sessions:?}");
        assert_eq!(hits.len(), 3);
    }

    /// The memory of the month a question names says it in other words, and fifty-five memories
    /// of other months are nearer to the question by meaning: it is still a candidate, found by
    /// meaning among what was written then (and not without the month named), and shown.
    #[test]
    fn a_memory_of_the_named_time_in_other_words_is_found_by_its_meaning() {
        let s = Store::open_in_memory().unwrap();
        let add = |i: usize, text: &str, at: i64| {
            s.add(&NewMemory { session: Some(&format!("s{i}")), ..turn("p", text, "", at) }).unwrap();
        };
        let day = |i: usize| noon(&format!("2025-{:02}-{:02}", 1 + i % 10, 1 + i % 28));
        for i in 0..25 {
            add(i, &format!("Nightly billing export failed again; reran billing export job {i}"), day(i));
        }
        for i in 25..55 {
            add(
                i,
                &format!("The overnight run that ships invoices out broke down once more, retry number {i}"),
                day(i),
            );
        }
        // And memories the question's words find that say little of it.
        for i in 55..75 {
            add(
                i,
                &format!(
                    "Lunch order {i}: pizza for Tom from billing and Ana from export, who failed the nightly quiz"
                ),
                day(i),
            );
        }
        let november = "Overnight invoice dump to the warehouse crashed: its upstream credential had lapsed";
        s.add(&NewMemory { session: Some("nov"), ..turn("p", november, "", noon("2025-11-20")) }).unwrap();
        let found = |q: &str| s.recall("p", q, 100).unwrap().iter().any(|h| h.memory.prompt == november);
        assert!(!found("Why did the nightly billing export fail?"), "fifty-five nearer memories leave it out");
        assert!(found("Why did the nightly billing export fail in November?"), "the month named finds it");
    }

    #[test]
    fn duplicates_are_ignored_and_migrations_are_idempotent() {
        let s = Store::open_in_memory().unwrap();
        assert!(s.add_fact("b", "Fact  one", None, 1).unwrap().is_some());
        assert!(s.add_fact("b", "fact one", None, 2).unwrap().is_none());
        s.migrate().unwrap();
        assert_eq!(s.stats().unwrap().memories, 1);
    }

    #[test]
    fn any_text_is_a_safe_query() {
        let s = Store::open_in_memory().unwrap();
        s.add_fact("b", "quotes \" and stars * and NEAR(x y)", None, 1).unwrap();
        for q in ["\"", "a AND OR NOT (", "*", "col:val", "ünïcödé テスト", "NEAR(x y)", ""] {
            s.recall("b", q, 5).unwrap();
        }
        assert!(s.recall("b", "the of a", 5).unwrap().is_empty());
    }

    /// A turn of session `s1` in bank `b`, ending a reply, taking the prompts buffered before
    /// `before` (milliseconds).
    fn ended<'a>(id: &'a str, reply: &'a str, before: i64) -> Turn<'a> {
        Turn {
            turn_id: id,
            bank: "b",
            session: "s1",
            harness: "codex",
            reply: Some(reply),
            fallback_prompt: None,
            buffered_before_ms: before,
            at: now(),
            outbound: None,
        }
    }

    #[test]
    fn a_turn_takes_its_buffered_prompts_once() {
        let s = Store::open_in_memory().unwrap();
        s.buffer_prompt("s1", "b", "codex", "first question about the parser").unwrap();
        s.buffer_prompt("s1", "b", "codex", "second").unwrap();
        let t = ended("t1", "done", now_ms());
        let id = s.capture(&t).unwrap().unwrap();
        let m = s.get(id).unwrap().unwrap();
        assert_eq!(m.prompt, "first question about the parser\nsecond");
        assert!(s.capture(&t).unwrap().is_none(), "the same turn id is stored once");
        assert!(s.set_flag_once("s1", "inject").unwrap());
        assert!(!s.set_flag_once("s1", "inject").unwrap());
    }

    /// A clock stepped back between a prompt and its stop (an NTP correction): the prompt, stamped
    /// "later" than the turn, is still the turn's, and not glued onto the next one. A prompt seen
    /// after a spooled turn ended is still left to its own turn.
    #[test]
    fn a_clock_stepped_back_keeps_the_prompt_with_its_turn() {
        let s = Store::open_in_memory().unwrap();
        let ahead = now_ms() + 600_000;
        s.buffer_prompt_item("", "s1", "b", "codex", "we use kafka for the audit events", ahead).unwrap();
        let id = s.capture(&ended("t1", "Noted: kafka.", now_ms())).unwrap().unwrap();
        assert_eq!(s.get(id).unwrap().unwrap().prompt, "we use kafka for the audit events");
        // A replayed turn that ended an hour ago leaves a prompt of a minute ago to its own turn.
        s.buffer_prompt_item("", "s1", "b", "codex", "and the audit log goes to s3", now_ms() - 60_000).unwrap();
        let id = s.capture(&ended("t0", "Earlier reply.", now_ms() - 3_600_000)).unwrap().unwrap();
        assert_eq!(s.get(id).unwrap().unwrap().prompt, "");
        let id = s.capture(&ended("t2", "Noted: s3.", now_ms())).unwrap().unwrap();
        assert_eq!(s.get(id).unwrap().unwrap().prompt, "and the audit log goes to s3");
    }

    #[test]
    fn prompts_of_abandoned_sessions_become_memories() {
        let s = Store::open_in_memory().unwrap();
        s.buffer_prompt_item("", "gone", "b", "codex", "the release checklist lives in docs/release.md", 1_000_000)
            .unwrap();
        s.prune(3600).unwrap();
        let all = s.list(None, None).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(
            (all[0].prompt.as_str(), all[0].created_at),
            ("the release checklist lives in docs/release.md", 1000)
        );
        assert_eq!(s.stats().unwrap().pending_prompts, 0);
    }

    #[test]
    fn a_short_follow_up_keeps_its_session_topic() {
        let s = Store::open_in_memory().unwrap();
        let capture = |id: &str, prompt: &str, reply: &str| {
            s.buffer_prompt("s1", "b", "codex", prompt).unwrap();
            s.capture(&ended(id, reply, now_ms())).unwrap().unwrap()
        };
        capture("t1", "The flaky integration test in payments-api times out on CI", "It waits on a mock clock.");
        let id = capture("t2", "rerun?", "Rerun passed.");
        let m = s.get(id).unwrap().unwrap();
        assert!(m.topic.contains("payments-api"), "{m:?}");
        let hits = s.recall("b", "did the payments-api rerun pass", 5).unwrap();
        assert!(hits[0].memory.id == id || hits[0].with.iter().any(|m| m.id == id), "{hits:?}");
    }

    #[test]
    fn forget_removes_the_memory_from_recall() {
        let s = Store::open_in_memory().unwrap();
        let a = s.add_fact("b", "the deploy key rotates monthly", None, 1).unwrap().unwrap();
        s.add_fact("b", "the deploy runs on fridays", None, 1).unwrap().unwrap();
        assert_eq!(s.recall("b", "deploy key", 5).unwrap()[0].memory.id, a);
        assert!(s.forget(a).unwrap());
        assert!(!s.forget(a).unwrap());
        assert!(s.recall("b", "rotates monthly", 5).unwrap().is_empty());
        assert_eq!(s.recall("b", "deploy", 5).unwrap().len(), 1);
        assert_eq!(s.matching_all("b", "deploy fridays").unwrap().len(), 1);
        assert!(s.matching_all("b", "deploy key").unwrap().is_empty());
    }

    fn vector_rows(s: &Store) -> (i64, i64) {
        let codes = s.conn.query_row("SELECT count(*) FROM vectors WHERE length(code) > 0", [], |r| r.get(0)).unwrap();
        let signs = s.conn.query_row("SELECT coalesce(sum(n), 0) FROM vector_blocks", [], |r| r.get(0)).unwrap();
        (codes, signs)
    }

    #[test]
    fn vectors_are_written_with_their_memory_and_removed_with_it() {
        let s = Store::open_in_memory().unwrap();
        let a = s.add_fact("b", "deploys go through Jenkins on ci.internal:8080", None, 1).unwrap().unwrap();
        let b = s.add_fact("b", "the staging database listens on port 5433", None, 2).unwrap().unwrap();
        assert_eq!(vector_rows(&s), (2, 2));
        let hits = s.recall("b", "Where does continuous integration push things to production?", 1).unwrap();
        assert_eq!(hits[0].memory.id, a, "found by its meaning alone");
        assert!(s.forget(a).unwrap());
        assert_eq!(vector_rows(&s), (1, 1));
        let hits = s.recall("b", "Where does continuous integration push things to production?", 5).unwrap();
        assert!(hits.iter().all(|h| h.memory.id != a), "a forgotten memory is not found by its meaning");
        assert!(s.forget(b).unwrap());
        assert_eq!(vector_rows(&s), (0, 0));
        assert_eq!(s.conn.query_row("SELECT count(*) FROM vector_blocks", [], |r| r.get::<_, i64>(0)).unwrap(), 0);
    }

    /// The queue of memories without vectors follows every way a memory or its vectors come and
    /// go, and agrees with the anti-join over the whole bank it stands for.
    #[test]
    fn memories_without_vectors_are_queued_and_leave_the_queue_when_embedded_or_forgotten() {
        let s = Store::open_in_memory().unwrap();
        let by_join = |s: &Store| -> i64 {
            s.conn
                .query_row(
                    "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id)",
                    [],
                    |r| r.get(0),
                )
                .unwrap()
        };
        let a = s.add_fact("b", "deploys go through Jenkins on ci.internal:8080", None, 1).unwrap().unwrap();
        let b = s.add_fact("b", "the staging database listens on port 5433", None, 2).unwrap().unwrap();
        assert_eq!((s.missing_vectors().unwrap(), by_join(&s)), (0, 0), "embedded as they were written");
        // Vectors dropped (a schema step that recomputes them), then forgotten, then embedded.
        s.conn.execute_batch("DELETE FROM vectors; DELETE FROM vector_blocks;").unwrap();
        assert_eq!((s.missing_vectors().unwrap(), by_join(&s)), (2, 2));
        assert!(s.forget(b).unwrap());
        assert_eq!((s.missing_vectors().unwrap(), by_join(&s)), (1, 1));
        let todo = vectors::todo(&s.conn, 10).unwrap();
        assert_eq!(todo.iter().map(|t| t.0).collect::<Vec<_>>(), [a]);
        assert_eq!(s.backfill(Duration::from_secs(5)).unwrap().embedded, 1);
        assert_eq!((s.missing_vectors().unwrap(), by_join(&s)), (0, 0));
        // An import writes no vectors: all of it is queued, newest first.
        let ms = (0..3).map(|i| {
            Ok(Memory {
                bank: "b".into(),
                kind: Kind::Fact,
                prompt: format!("imported fact number {i}"),
                created_at: 10 + i as i64,
                ..Default::default()
            })
        });
        s.import(ms, 100).unwrap();
        assert_eq!((s.missing_vectors().unwrap(), by_join(&s)), (3, 3));
        let todo = vectors::todo(&s.conn, 2).unwrap();
        assert!(todo[0].0 > todo[1].0, "newest first");
    }

    #[test]
    fn a_fact_said_in_passing_in_a_long_message_is_found_by_its_passage() {
        let s = Store::open_in_memory().unwrap();
        let long = "My monstera keeps dropping leaves and the new ones come out small and pale. I water it every \
                    Sunday with filtered water and it sits next to the east window. We're on the fourth floor, so \
                    there is plenty of light in the morning. Should I repot it or feed it?";
        let id = s.add_fact("b", long, None, 1).unwrap().unwrap();
        for (i, other) in [
            "The bathroom fan rattles at night; the landlord says a new one comes next week.",
            "Book club meets on Thursdays at the library, this month's novel is long.",
            "The car needs new tyres before the winter trip to the mountains.",
        ]
        .iter()
        .enumerate()
        {
            s.add_fact("b", other, None, 2 + i as i64).unwrap();
        }
        // The first vector and one per passage, all of them in one block.
        let (codes, signs) = vector_rows(&s);
        assert_eq!(codes, 4);
        assert!(signs - 3 >= 3, "the long message has two passages or more of its own: {signs} entries");
        // First vectors and passages in blocks apart.
        let by_kind: Vec<(i64, i64)> = s
            .conn
            .prepare("SELECT passages, n FROM vector_blocks ORDER BY passages")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(by_kind, vec![(0, 4), (1, signs - 4)]);
        let code_len: i64 =
            s.conn.query_row("SELECT length(code) FROM vectors WHERE memory_id = ?1", [id], |r| r.get(0)).unwrap();
        assert_eq!(code_len as usize % crate::embed::CODE_BYTES, 0);
        let q = crate::embed::Model::get().question("What level of the building do we live on?").unwrap();
        let bank = Store::bank_id(&s.conn, "b", false).unwrap().unwrap();
        let near = vectors::search(&s.conn, bank, &q, 4).unwrap();
        assert_eq!(near[0].0, id, "{near:?}");
        // Its nearness is its nearest passage's, above its first vector's.
        let head = crate::embed::dot(&q, &vectors::vectors(&s.conn, &[id]).unwrap()[&id]);
        assert!(near[0].1 > head + 0.05, "{} vs {head}", near[0].1);
        // Forgotten, every entry of it goes.
        s.forget(id).unwrap();
        assert_eq!(vector_rows(&s), (3, 3));
    }

    #[test]
    fn blocks_fill_and_split_across_an_import() {
        let s = Store::open_in_memory().unwrap();
        let n = vectors::BLOCK * 2 + 7;
        let ms = (0..n).map(|i| {
            Ok(Memory {
                bank: "b".into(),
                kind: Kind::Fact,
                prompt: format!("fact number {i} about service s{i}"),
                created_at: i as i64,
                ..Default::default()
            })
        });
        s.import(ms, 300).unwrap();
        // An import leaves the vectors to the backfill.
        assert_eq!(vector_rows(&s), (0, 0));
        assert_eq!(s.missing_vectors().unwrap(), n as i64);
        assert_eq!(s.backfill(Duration::from_secs(600)).unwrap().embedded, n);
        assert_eq!(vector_rows(&s), (n as i64, n as i64));
        let blocks: i64 = s.conn.query_row("SELECT count(*) FROM vector_blocks", [], |r| r.get(0)).unwrap();
        assert_eq!(blocks, 3);
        let hit = &s.recall("b", "service s700", 1).unwrap()[0];
        assert_eq!(hit.memory.prompt, "fact number 700 about service s700");
    }

    #[test]
    fn an_older_store_gets_its_vectors_backfilled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        {
            // A store of schema version 3, before vectors: its memories and postings only.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(&format!("{SCHEMA}\n{OUTBOX}")).unwrap();
            c.pragma_update(None, "user_version", 3).unwrap();
            let store = Store::with_connection(c, Duration::from_secs(1)).unwrap();
            store
                .write(|c| {
                    let mut w = Writes::default();
                    for (i, text) in
                        ["deploys go through Jenkins on ci.internal:8080", "we use tabs"].iter().enumerate()
                    {
                        let m = NewMemory {
                            bank: "b",
                            kind: Kind::Fact,
                            prompt: text,
                            created_at: i as i64,
                            ..Default::default()
                        };
                        let terms = doc_terms(m.prompt, "", "");
                        Store::insert_analysed(c, &m, &terms, &content_hash(m.kind, m.prompt, ""), &mut w)?;
                    }
                    w.postings.flush(c)?;
                    Ok(())
                })
                .unwrap();
        }
        let s = Store::open(&path, Duration::from_secs(1)).unwrap();
        assert_eq!(s.stats().unwrap().schema_version, VERSION);
        assert_eq!(s.missing_vectors().unwrap(), 2);
        assert!(s.recall("b", "Where does continuous integration push things to production?", 5).unwrap().is_empty());
        assert_eq!(
            s.backfill(Duration::from_secs(5)).unwrap(),
            Backfilled { embedded: 2, checked: 2, partitioned: 0, reindexed: 1 }
        );
        assert_eq!(s.missing_vectors().unwrap(), 0);
        let hits = s.recall("b", "Where does continuous integration push things to production?", 5).unwrap();
        assert!(hits[0].memory.prompt.contains("Jenkins"), "{hits:?}");
    }

    /// Plain BM25 (k1 1.2, b 0.75, the index's field weights) over the whole bank, written out
    /// here independently of the ranker: the memory it ranks first, unless tied.
    fn plain_bm25_first(docs: &[(i64, String)], query: &str) -> Option<i64> {
        let bags: Vec<(i64, index::DocTerms)> = docs.iter().map(|(id, t)| (*id, doc_terms(t, "", ""))).collect();
        let n = bags.len() as f32;
        let avgdl = bags.iter().map(|(_, b)| b.len as f32).sum::<f32>() / n / index::UNIT;
        let mut terms: Vec<String> = text::analyse(query).into_iter().map(|t| t.text).collect();
        terms.sort();
        terms.dedup();
        let mut scores: Vec<(f32, i64)> = bags
            .iter()
            .map(|(id, bag)| {
                let dl = bag.len as f32 / index::UNIT;
                let s = terms
                    .iter()
                    .filter_map(|t| {
                        let tf = bag.terms.iter().find(|(x, _)| x == t)?.1 as f32 / index::UNIT;
                        let df = bags.iter().filter(|(_, b)| b.terms.iter().any(|(x, _)| x == t)).count() as f32;
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        Some(idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl)))
                    })
                    .sum();
                (s, *id)
            })
            .collect();
        scores.sort_by(|a, b| b.0.total_cmp(&a.0));
        (scores[0].0 > 0.0 && (scores.len() < 2 || scores[0].0 > scores[1].0 * 1.001)).then_some(scores[0].1)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]
        #[test]
        fn what_plain_bm25_ranks_first_is_always_recalled(
            bank in proptest::collection::vec(proptest::collection::vec(0usize..40, 2..14), 6..40),
            query in proptest::collection::vec(0usize..40, 1..5),
        ) {
            const WORDS: [&str; 40] = [
                "deploy", "server", "database", "cache", "token", "queue", "retry", "timeout", "build",
                "release", "branch", "merge", "review", "test", "flaky", "docker", "image", "secret",
                "config", "schema", "index", "query", "latency", "memory", "thread", "lock", "socket",
                "proxy", "certificate", "domain", "invoice", "payment", "refund", "customer", "account",
                "session", "cookie", "login", "password", "email",
            ];
            let s = Store::open_in_memory().unwrap();
            let mut docs = Vec::new();
            for (i, words) in bank.iter().enumerate() {
                let text = words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
                if let Some(id) = s.add_fact("b", &text, None, i as i64 * 86_400).unwrap() {
                    // What is stored: "password query" reads as a password given, and is redacted.
                    docs.push((id, scrub(&text).into_owned()));
                }
            }
            let q = query.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
            if let Some(first) = plain_bm25_first(&docs, &q) {
                let hits = s.recall("b", &q, 5).unwrap();
                proptest::prop_assert!(
                    hits.iter().any(|h| h.memory.id == first),
                    "plain BM25's first {first} is not among {:?}",
                    hits.iter().map(|h| h.memory.id).collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn version_1_databases_are_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(include_str!("migrations/0001_init.sql")).unwrap();
            c.execute(
                "INSERT INTO memories (bank, content, hash, bank_key, harness, session, created_at)
                 VALUES ('project:/p/', 'User: which port?\nAssistant: 5433', 'h', 'k', 'codex', 's', 100),
                        ('project:/p', 'Releases are cut on Tuesdays', 'h2', 'k', 'cli', NULL, 200)",
                [],
            )
            .unwrap();
            c.execute("INSERT INTO session_prompts (session, bank, harness, prompt, created_at) VALUES ('s9', 'b', 'codex', 'pending', 5)", []).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
        }
        let s = Store::open(&path, Duration::from_secs(1)).unwrap();
        let all = s.list(None, None).unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|m| m.bank == "project:/p"), "banks follow today's rule: {all:?}");
        assert_eq!((all[1].prompt.as_str(), all[1].reply.as_str()), ("which port?", "5433"));
        assert_eq!(all[0].kind, Kind::Fact);
        assert_eq!(s.recall("project:/p", "port", 5).unwrap().len(), 1);
        assert_eq!(s.stats().unwrap().pending_prompts, 1);
    }

    /// A Chinese question in other words than its answer shares single characters with it, no
    /// pair of them: found by the characters. A bank indexed before characters were indexed alone
    /// is asked without them until the backfill indexes it anew, and then finds it too.
    #[test]
    fn han_characters_alone_find_a_paraphrase_once_the_bank_is_indexed_anew() {
        let s = Store::open_in_memory().unwrap();
        s.add(&turn("p", "部署脚本放在运维仓库里", "", 100)).unwrap();
        s.add(&turn("p", "午饭吃了面条", "", 200)).unwrap();
        let q = "脚注运行在哪";
        let found = |s: &Store| s.recall("p", q, 5).unwrap().into_iter().map(|h| h.memory.prompt).collect::<Vec<_>>();
        assert_eq!(found(&s), ["部署脚本放在运维仓库里"]);
        s.conn.execute("UPDATE banks SET analysis = 0", []).unwrap();
        assert!(found(&s).is_empty(), "an older index is not asked for lone characters");
        assert_eq!(s.backfill(Duration::from_millis(200)).unwrap().reindexed, 1);
        let analysis: i64 = s.conn.query_row("SELECT analysis FROM banks", [], |r| r.get(0)).unwrap();
        assert_eq!(analysis, text::ANALYSIS);
        assert_eq!(found(&s), ["部署脚本放在运维仓库里"]);
        assert_eq!(s.backfill(Duration::from_millis(200)).unwrap().reindexed, 0, "once");
    }

    /// A question about a flag of one letter finds the memory that uses it, not the one about the
    /// same letter in the other case; a bank indexed before flags were terms is asked by the
    /// question's other words until the backfill indexes it anew.
    #[test]
    fn a_question_about_a_flag_of_one_letter_finds_the_memory_that_uses_it() {
        let s = Store::open_in_memory().unwrap();
        s.add(&turn("p", "#410: `fd -X rm` on a huge tree dies with argument list too long", "", 100)).unwrap();
        s.add(&turn("p", "with -x the command runs once per result, in parallel", "", 200)).unwrap();
        s.add(&turn("p", "the release notes should say what changed and link the issues", "", 300)).unwrap();
        let found =
            |s: &Store, q: &str| s.recall("p", q, 1).unwrap().into_iter().map(|h| h.memory.prompt).collect::<Vec<_>>();
        assert!(found(&s, "what does -X do?")[0].contains("`fd -X rm`"), "{:?}", found(&s, "what does -X do?"));
        assert!(found(&s, "what does -x do?")[0].contains("once per result"));
        s.conn.execute("UPDATE banks SET analysis = 2", []).unwrap();
        assert!(found(&s, "what does -X do?").is_empty(), "an older index is not asked for flags");
        assert_eq!(s.backfill(Duration::from_millis(200)).unwrap().reindexed, 1);
        assert!(found(&s, "what does -X do?")[0].contains("`fd -X rm`"));
    }

    /// A language named by a letter and a sign is a word of the question: C++ and C# are told
    /// apart from each other and from Go.
    #[test]
    fn a_question_about_c_plus_plus_finds_the_memory_about_it() {
        let s = Store::open_in_memory().unwrap();
        s.add(&turn("p", "the game client's protobuf code is generated for C++ by buf", "", 100)).unwrap();
        s.add(&turn("p", "the matchmaker's protobuf code is generated for Go by buf", "", 200)).unwrap();
        s.add(&turn("p", "the admin tool's protobuf code is generated for C# by buf", "", 300)).unwrap();
        let first = |q: &str| s.recall("p", q, 1).unwrap().into_iter().next().map(|h| h.memory.prompt).unwrap();
        assert!(first("where does our C++ code come from?").contains("game client"));
        assert!(first("where does our C# code come from?").contains("admin tool"));
    }

    /// A German memory is found by another form of its words (Gaszählern / Gaszähler) and by a
    /// compound of two of them (Bestandsdatei); a bank indexed before languages were told apart
    /// is asked as it was written until the backfill indexes it anew.
    #[test]
    fn a_german_question_meets_its_memory_on_stems_and_compound_parts() {
        let s = Store::open_in_memory().unwrap();
        s.add(&turn("p", "Frau Berger sagt, die Stadtwerke haben grob 12.000 Gaszähler im Netz.", "", 100)).unwrap();
        s.add(&turn("p", "Die nächtliche Datei mit dem Bestand aller Kunden ist in ISO-8859-15.", "", 200)).unwrap();
        s.add(&turn("p", "Wir brauchen noch einen Cronjob für die Erinnerungsmails an die Kunden.", "", 300)).unwrap();
        let first = |s: &Store, q: &str| s.recall("p", q, 1).unwrap().into_iter().next().map(|h| h.memory.prompt);
        let q = "Wie viele Gaszählern betreiben die?";
        assert!(first(&s, q).unwrap().contains("12.000"));
        assert!(first(&s, "Welche Kodierung hat die Bestandsdatei?").unwrap().contains("ISO-8859-15"));
        s.conn.execute("UPDATE banks SET analysis = 1", []).unwrap();
        assert!(first(&s, q).is_none_or(|p| !p.contains("12.000")), "an older index is asked in English");
        assert_eq!(s.backfill(Duration::from_millis(200)).unwrap().reindexed, 1);
        assert!(first(&s, q).unwrap().contains("12.000"));
    }

    /// Schema step 15 leaves a bank with memories to be indexed anew, and an empty one current.
    #[test]
    fn banks_indexed_before_step_15_are_marked_for_a_new_index() {
        let s = Store::open_in_memory().unwrap();
        s.add(&turn("full", "数据库端口", "", 100)).unwrap();
        s.conn.execute("INSERT INTO banks (name) VALUES ('empty')", []).unwrap();
        s.conn.execute_batch("ALTER TABLE banks DROP COLUMN analysis; PRAGMA user_version = 14;").unwrap();
        s.migrate().unwrap();
        let marks: Vec<(String, i64)> = {
            let mut stmt = s.conn.prepare("SELECT name, analysis FROM banks ORDER BY name").unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
        };
        assert_eq!(marks, [("empty".to_string(), text::ANALYSIS), ("full".to_string(), 0)]);
    }

    /// Schema step 18 renames the banks an older ovmem named with a remote's token or a password
    /// holding `/`, merging one into the bank of its safe name when that exists already.
    #[test]
    fn step_18_takes_secrets_out_of_bank_names() {
        let s = Store::open_in_memory().unwrap();
        let leaky = "project:h.example/acme/app.git?private_token=glpat-xr4mk9pq2st7vw1yz3bn";
        s.add(&turn(leaky, "the invoices are sent at 6 am", "", 100)).unwrap();
        s.add(&turn("project:h.example/acme/app", "the ledger closes at midnight", "", 200)).unwrap();
        let slash = "project:bob/7vl3wr8nt4by6ch1jf5gd0sa2eu7io9p@git.example.com/v1/repos/tool";
        s.add(&turn(slash, "the tool's config lives in /etc/tool", "", 300)).unwrap();
        s.conn.execute_batch("PRAGMA user_version = 17;").unwrap();
        s.migrate().unwrap();
        let names: Vec<String> = s.banks().unwrap().into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["project:h.example/acme/app", "project:git.example.com/v1/repos/tool"]);
        let hits = s.recall("project:h.example/acme/app", "when are the invoices sent", 5).unwrap();
        assert!(hits.iter().any(|h| h.memory.prompt.contains("6 am")), "merged and indexed");
    }
}

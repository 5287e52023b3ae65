-- Banks: one per project (or agent, session, user), with the statistics BM25 needs.
CREATE TABLE banks (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    docs INTEGER NOT NULL DEFAULT 0,
    len  INTEGER NOT NULL DEFAULT 0
);

-- Memories: a captured turn (prompt and reply, whole) or a fact.
CREATE TABLE memories (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    bank_id     INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    prompt      TEXT NOT NULL,
    reply       TEXT NOT NULL,
    topic       TEXT NOT NULL,
    harness     TEXT,
    session     TEXT,
    created_at  INTEGER NOT NULL,
    captured_at INTEGER NOT NULL,
    hash        BLOB NOT NULL,
    turn_id     TEXT UNIQUE,
    len         INTEGER NOT NULL,
    UNIQUE (bank_id, hash)
);
CREATE INDEX memories_bank_time ON memories (bank_id, created_at DESC);

-- The inverted index (see src/store/index.rs): terms, per-bank document frequencies, and
-- posting blocks.
CREATE TABLE vocab (
    id   INTEGER PRIMARY KEY,
    term TEXT NOT NULL UNIQUE
);
CREATE TABLE terms (
    bank_id INTEGER NOT NULL,
    term_id INTEGER NOT NULL,
    df      INTEGER NOT NULL,
    last    INTEGER NOT NULL,
    PRIMARY KEY (bank_id, term_id)
) WITHOUT ROWID;
CREATE TABLE postings (
    bank_id INTEGER NOT NULL,
    term_id INTEGER NOT NULL,
    block   INTEGER NOT NULL,
    data    BLOB NOT NULL,
    PRIMARY KEY (bank_id, term_id, block)
) WITHOUT ROWID;

-- Prompts seen in a session, waiting for the reply that completes the turn.
CREATE TABLE session_prompts (
    id         INTEGER PRIMARY KEY,
    session    TEXT NOT NULL,
    bank       TEXT NOT NULL,
    harness    TEXT NOT NULL,
    prompt     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    item_id    TEXT UNIQUE
);
CREATE INDEX session_prompts_session ON session_prompts (session);

-- What a session is about (its first substantial prompt) and its latest prompt, so a short
-- follow-up turn is stored with its context.
CREATE TABLE sessions (
    session     TEXT NOT NULL,
    bank        TEXT NOT NULL,
    topic       TEXT NOT NULL,
    last_prompt TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (session, bank)
) WITHOUT ROWID;

-- Sessions that already had memory injected (Cline injects once per task, at its first tool).
CREATE TABLE session_flags (
    session    TEXT NOT NULL,
    flag       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session, flag)
);

-- Memories, one row per captured turn or added fact, scoped by bank.
CREATE TABLE memories (
    id         INTEGER PRIMARY KEY,
    bank       TEXT NOT NULL,
    content    TEXT NOT NULL,
    hash       TEXT NOT NULL,
    bank_key   TEXT NOT NULL,
    harness    TEXT,
    session    TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (bank, hash)
);
CREATE INDEX memories_bank_time ON memories (bank, created_at DESC);

-- Full-text index over the content, plus the bank as a token (`bank_key`, a hash) so that
-- FTS5 itself restricts a query to one bank.
CREATE VIRTUAL TABLE memories_fts USING fts5(content, bank_key, tokenize = 'porter unicode61');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, bank_key) VALUES (new.id, new.content, new.bank_key);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    DELETE FROM memories_fts WHERE rowid = old.id;
END;

-- Prompts seen in a session, waiting for the reply that completes the turn.
CREATE TABLE session_prompts (
    id         INTEGER PRIMARY KEY,
    session    TEXT NOT NULL,
    bank       TEXT NOT NULL,
    harness    TEXT NOT NULL,
    prompt     TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX session_prompts_session ON session_prompts (session);

-- Sessions that already had memory injected (Cline injects once per task, at its first tool).
CREATE TABLE session_flags (
    session    TEXT NOT NULL,
    flag       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session, flag)
);

-- Memories, one row per captured turn or added fact, scoped by bank.
CREATE TABLE memories (
    id         INTEGER PRIMARY KEY,
    bank       TEXT NOT NULL,
    content    TEXT NOT NULL,
    hash       TEXT NOT NULL,
    harness    TEXT,
    session    TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (bank, hash)
);
CREATE INDEX memories_bank_time ON memories (bank, created_at DESC);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, content = 'memories', content_rowid = 'id', tokenize = 'porter unicode61'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
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

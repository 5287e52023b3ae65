-- Memories still to be sent to the remote backend (Hindsight, OpenViking): written in the same
-- transaction as the memory, removed once the server has it. `bank` is the server's bank and
-- `project` the project's identity, as they were when the memory was captured.
CREATE TABLE outbox (
    memory_id  INTEGER PRIMARY KEY,
    bank       TEXT NOT NULL,
    project    TEXT NOT NULL,
    status     TEXT NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at INTEGER NOT NULL
);

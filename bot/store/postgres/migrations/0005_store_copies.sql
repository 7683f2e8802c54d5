-- `python -m bot migrate-store`: which SQLite deployment this database was copied from, and how far each table's
-- copy has come (the last key copied, committed with its batch), so an interrupted copy resumes where it stopped.
CREATE TABLE store_copies (
    source      TEXT   PRIMARY KEY,  -- the SQLite deployment, named by when its first migration ran
    started_at  BIGINT NOT NULL,
    finished_at BIGINT
);

CREATE TABLE store_copy_positions (
    source     TEXT   NOT NULL REFERENCES store_copies (source) ON DELETE CASCADE,
    table_name TEXT   NOT NULL,
    last_key   TEXT   NOT NULL,  -- the JSON array of the last copied row's key, in the SQLite table's key order
    copied     BIGINT NOT NULL,
    PRIMARY KEY (source, table_name)
);

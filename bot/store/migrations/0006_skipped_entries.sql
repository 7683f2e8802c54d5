-- Sources keep at most the first 500 authors of a paper (bot/sources/limits.py); how many more it listed.
ALTER TABLE papers ADD COLUMN authors_omitted INTEGER NOT NULL DEFAULT 0;

-- Entries a source served that hold no usable paper (malformed, an absurd date or version, outside the window
-- asked for), once per (source, entry): /status counts them, and each is logged only when first seen, however
-- many polls serve it again.
CREATE TABLE skipped_entries (
    source     TEXT    NOT NULL,
    entry      TEXT    NOT NULL,  -- the entry's id as served (shortened), or a mark when it has none
    reason     TEXT    NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    PRIMARY KEY (source, entry)
) WITHOUT ROWID;
CREATE INDEX skipped_entries_by_first_seen ON skipped_entries (source, first_seen);

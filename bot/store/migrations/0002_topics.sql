-- Topics: the catalog (guild_id 0) and each server's custom topics. A name is unique within a server.
CREATE TABLE topics (
    id          INTEGER PRIMARY KEY,
    guild_id    INTEGER NOT NULL DEFAULT 0,  -- 0: the shared catalog
    slug        TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    query       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (guild_id, slug)
);
CREATE UNIQUE INDEX topics_by_name ON topics (guild_id, name COLLATE NOCASE);

-- Materialised matches; `published` is copied from the paper so window counts need only this table.
CREATE TABLE topic_matches (
    topic_id   INTEGER NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    published  INTEGER NOT NULL,
    paper_pk   INTEGER NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    matched_at INTEGER NOT NULL,
    PRIMARY KEY (topic_id, published, paper_pk)
) WITHOUT ROWID;
CREATE INDEX topic_matches_by_paper ON topic_matches (paper_pk);

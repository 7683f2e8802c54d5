-- The SQLite store's migrations 0011 (card actions) and 0012 (history still to match), on PostgreSQL.

-- A member's rating of a paper for one topic of one server: 1 (belongs) or -1 (does not), one row per
-- (server, topic, paper, member), so a changed mind replaces the vote and a repeated click writes nothing new.
CREATE TABLE ratings (
    guild_id  BIGINT  NOT NULL,
    topic_id  BIGINT  NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    paper_pk  BIGINT  NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    member_id BIGINT  NOT NULL,
    vote      INTEGER NOT NULL CHECK (vote IN (-1, 1)),
    rated_at  BIGINT  NOT NULL,
    PRIMARY KEY (guild_id, topic_id, paper_pk, member_id)
);
CREATE INDEX ratings_by_topic ON ratings (topic_id, guild_id);
CREATE INDEX ratings_by_paper ON ratings (paper_pk);  -- a paper's deletion cascades without a scan

-- A member's reading list: papers saved from a card, personal (not per server), newest first.
CREATE TABLE saved_papers (
    id        BIGSERIAL PRIMARY KEY,  -- orders saves made within the same second
    member_id BIGINT NOT NULL,
    paper_pk  BIGINT NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    saved_at  BIGINT NOT NULL,
    UNIQUE (member_id, paper_pk)
);
CREATE INDEX saved_papers_newest ON saved_papers (member_id, saved_at DESC, id DESC);
CREATE INDEX saved_papers_by_paper ON saved_papers (paper_pk);

-- Topics whose stored history is still to be matched (catalog topics a release added or changed): matched in
-- the background once the bot answers commands; a restart midway resumes them.
CREATE TABLE topic_history_pending (
    topic_id  BIGINT PRIMARY KEY REFERENCES topics (id) ON DELETE CASCADE,
    queued_at BIGINT NOT NULL
);

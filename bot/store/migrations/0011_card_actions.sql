-- Card actions (issue 9). A member's rating of a paper for one topic of one server: 1 (belongs) or -1 (does
-- not). One row per (server, topic, paper, member), so a changed mind replaces the vote and a repeated click
-- writes nothing new. A server's ratings feed only that server's view of the topic (bot/topics/scorer_ratings.py).
CREATE TABLE ratings (
    guild_id  INTEGER NOT NULL,
    topic_id  INTEGER NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    paper_pk  INTEGER NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    member_id INTEGER NOT NULL,
    vote      INTEGER NOT NULL CHECK (vote IN (-1, 1)),
    rated_at  INTEGER NOT NULL,
    PRIMARY KEY (guild_id, topic_id, paper_pk, member_id)
) WITHOUT ROWID;
CREATE INDEX ratings_by_topic ON ratings (topic_id, guild_id);

-- A member's reading list: papers saved from a card, personal (not per server), newest first.
CREATE TABLE saved_papers (
    id        INTEGER PRIMARY KEY,  -- orders saves made within the same second
    member_id INTEGER NOT NULL,
    paper_pk  INTEGER NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    saved_at  INTEGER NOT NULL,
    UNIQUE (member_id, paper_pk)
);
CREATE INDEX saved_papers_newest ON saved_papers (member_id, saved_at DESC, id DESC);

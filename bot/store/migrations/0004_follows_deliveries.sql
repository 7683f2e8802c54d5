-- A channel following a topic. Posting starts with papers that reach the store after `created_at`.
CREATE TABLE follows (
    id            INTEGER PRIMARY KEY,
    guild_id      INTEGER NOT NULL,
    channel_id    INTEGER NOT NULL,
    topic_id      INTEGER NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    mode          TEXT    NOT NULL CHECK (mode IN ('each', 'digest')),
    digest_hour   INTEGER NOT NULL DEFAULT 8 CHECK (digest_hour BETWEEN 0 AND 23),
    created_by    INTEGER,
    created_at    INTEGER NOT NULL,
    last_post_at  INTEGER,
    broken_at     INTEGER,  -- set when Discord refuses the channel (403/404): shown in /status, not retried
    broken_reason TEXT,
    UNIQUE (channel_id, topic_id)
);
CREATE INDEX follows_by_topic ON follows (topic_id);
CREATE INDEX follows_by_guild ON follows (guild_id);

-- The outbox: one row per (channel, paper), written in the same transaction as the paper, before any send.
CREATE TABLE deliveries (
    id              INTEGER PRIMARY KEY,
    guild_id        INTEGER NOT NULL,
    channel_id      INTEGER NOT NULL,
    paper_pk        INTEGER NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    mode            TEXT    NOT NULL CHECK (mode IN ('each', 'digest')),
    status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'sending', 'sent', 'summarised', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    sent_at         INTEGER,
    message_id      INTEGER,
    error           TEXT,
    UNIQUE (channel_id, paper_pk)
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_by_guild ON deliveries (guild_id, status);

-- Which followed topics a delivery stands for: one post names them all.
CREATE TABLE delivery_topics (
    delivery_id INTEGER NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    topic_id    INTEGER NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    PRIMARY KEY (delivery_id, topic_id)
) WITHOUT ROWID;

-- The PostgreSQL store's schema: the SQLite store's tables after its migrations 0001-0010 (bot/store/migrations),
-- in one step. Times are unix seconds UTC, as there; text compares by code point (COLLATE "C"), as SQLite's
-- BINARY does, so every ORDER BY gives the same order on both back ends.

CREATE TABLE papers (
    pk               BIGSERIAL PRIMARY KEY,
    arxiv_id         TEXT COLLATE "C" NOT NULL UNIQUE,
    version          INTEGER NOT NULL,
    title            TEXT    NOT NULL,
    abstract         TEXT    NOT NULL,
    authors          TEXT    NOT NULL,  -- names joined with ", "
    authors_json     TEXT    NOT NULL,  -- [[name, [affiliation, ...]], ...] in author order
    primary_category TEXT COLLATE "C" NOT NULL,
    categories       TEXT COLLATE "C" NOT NULL,  -- space-joined, primary first
    published        BIGINT  NOT NULL,  -- v1 submission time
    updated          BIGINT  NOT NULL,  -- time of the stored version
    comment          TEXT,
    journal_ref      TEXT,
    doi              TEXT,
    authors_omitted  INTEGER NOT NULL DEFAULT 0,
    provisional      INTEGER NOT NULL DEFAULT 0,
    first_seen       BIGINT  NOT NULL,  -- kept across new versions
    last_changed     BIGINT  NOT NULL,
    -- The words SQLite's FTS5 index would hold for each column (its tokenizer's output, space-joined; see
    -- bot/store/postgres/tokens.py), so the topic queries' FTS5 prefilter translates to a tsquery exactly.
    title_words      TEXT    NOT NULL,
    abstract_words   TEXT    NOT NULL,
    authors_words    TEXT    NOT NULL,
    words            TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('simple'::regconfig, title_words), 'A')
        || setweight(to_tsvector('simple'::regconfig, abstract_words), 'B')
        || setweight(to_tsvector('simple'::regconfig, authors_words), 'C')
    ) STORED
);
CREATE INDEX papers_by_published ON papers (published);
CREATE INDEX papers_words ON papers USING GIN (words);
CREATE INDEX papers_provisional ON papers (last_changed) WHERE provisional = 1;

CREATE TABLE paper_categories (
    category  TEXT COLLATE "C" NOT NULL,
    published BIGINT NOT NULL,
    paper_pk  BIGINT NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    PRIMARY KEY (category, published, paper_pk)
);
CREATE INDEX paper_categories_by_paper ON paper_categories (paper_pk);

CREATE TABLE source_state (
    source               TEXT COLLATE "C" PRIMARY KEY,
    watermark            BIGINT,
    etag                 TEXT,
    last_modified        TEXT,
    last_attempt         BIGINT,
    last_success         BIGINT,
    last_error           TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    papers_stored        BIGINT  NOT NULL DEFAULT 0
);

CREATE TABLE backfill_windows (
    job           TEXT COLLATE "C" NOT NULL,
    window_start  BIGINT  NOT NULL,
    window_end    BIGINT  NOT NULL,
    done          INTEGER NOT NULL DEFAULT 0,
    papers        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, window_start, window_end)
);

CREATE TABLE skipped_entries (
    source     TEXT COLLATE "C" NOT NULL,
    entry      TEXT COLLATE "C" NOT NULL,
    reason     TEXT   NOT NULL,
    first_seen BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL,
    PRIMARY KEY (source, entry)
);
CREATE INDEX skipped_entries_by_first_seen ON skipped_entries (source, first_seen);

CREATE TABLE topics (
    id          BIGSERIAL PRIMARY KEY,
    guild_id    BIGINT NOT NULL DEFAULT 0,  -- 0: the shared catalog
    slug        TEXT COLLATE "C" NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    description TEXT   NOT NULL DEFAULT '',
    query       TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    parent_id   BIGINT REFERENCES topics (id) ON DELETE SET NULL,
    UNIQUE (guild_id, slug)
);
-- SQLite's NOCASE folds ASCII letters only: so does this index.
CREATE UNIQUE INDEX topics_by_name ON topics (
    guild_id, translate(name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
);
CREATE INDEX topics_by_parent ON topics (parent_id);

-- Keyed by (topic, paper): a paper's `published` (copied here for window counts) moves with it.
CREATE TABLE topic_matches (
    topic_id   BIGINT  NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    paper_pk   BIGINT  NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    published  BIGINT  NOT NULL,
    matched_at BIGINT  NOT NULL,
    direct     INTEGER NOT NULL DEFAULT 1,
    kind       TEXT COLLATE "C" NOT NULL DEFAULT 'exact' CHECK (kind IN ('exact', 'suggested')),
    PRIMARY KEY (topic_id, paper_pk)
);
CREATE INDEX topic_matches_by_published ON topic_matches (topic_id, published);
CREATE INDEX topic_matches_by_paper ON topic_matches (paper_pk);

CREATE TABLE follows (
    id            BIGSERIAL PRIMARY KEY,
    guild_id      BIGINT  NOT NULL,
    channel_id    BIGINT  NOT NULL,
    topic_id      BIGINT  NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    mode          TEXT COLLATE "C" NOT NULL CHECK (mode IN ('each', 'digest')),
    digest_hour   INTEGER NOT NULL DEFAULT 8 CHECK (digest_hour BETWEEN 0 AND 23),
    created_by    BIGINT,
    created_at    BIGINT  NOT NULL,
    last_post_at  BIGINT,
    broken_at     BIGINT,
    broken_reason TEXT,
    match         TEXT COLLATE "C" NOT NULL DEFAULT 'exact' CHECK (match IN ('exact', 'suggested')),
    UNIQUE (channel_id, topic_id)
);
CREATE INDEX follows_by_topic ON follows (topic_id);
CREATE INDEX follows_by_guild ON follows (guild_id);

CREATE TABLE deliveries (
    id              BIGSERIAL PRIMARY KEY,
    guild_id        BIGINT  NOT NULL,
    channel_id      BIGINT  NOT NULL,
    paper_pk        BIGINT  NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    mode            TEXT COLLATE "C" NOT NULL CHECK (mode IN ('each', 'digest')),
    status          TEXT COLLATE "C" NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'sending', 'sent', 'summarised', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT  NOT NULL,
    created_at      BIGINT  NOT NULL,
    sent_at         BIGINT,
    message_id      BIGINT,
    error           TEXT,
    UNIQUE (channel_id, paper_pk)
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_by_guild ON deliveries (guild_id, status);

CREATE TABLE delivery_topics (
    delivery_id BIGINT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    topic_id    BIGINT NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    PRIMARY KEY (delivery_id, topic_id)
);
CREATE INDEX delivery_topics_by_topic ON delivery_topics (topic_id);

CREATE TABLE category_day_counts (
    categories TEXT COLLATE "C" NOT NULL,
    day        BIGINT NOT NULL,
    papers     BIGINT NOT NULL,
    PRIMARY KEY (categories, day)
);
CREATE INDEX category_day_counts_by_day ON category_day_counts (day);

CREATE TABLE announcements (
    paper_pk BIGINT  NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    category TEXT COLLATE "C" NOT NULL,
    kind     TEXT COLLATE "C" NOT NULL CHECK (kind IN ('new', 'cross', 'replace', 'replace-cross')),
    version  INTEGER NOT NULL,
    day      TEXT COLLATE "C" NOT NULL,  -- YYYY-MM-DD, UTC
    seen_at  BIGINT  NOT NULL,
    PRIMARY KEY (paper_pk, category)
);

-- A day's cached counts are forgotten as soon as a paper of that day is added, changed or removed.
CREATE FUNCTION forget_day_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        DELETE FROM category_day_counts WHERE day = div(NEW.published, 86400);
    ELSE
        DELETE FROM category_day_counts WHERE day = div(OLD.published, 86400);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER paper_categories_changed AFTER INSERT OR DELETE ON paper_categories
    FOR EACH ROW EXECUTE FUNCTION forget_day_counts();

-- A paper whose date moves (a provisional date replaced by the v1 submission time) moves its matches too.
CREATE FUNCTION move_matches() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE topic_matches SET published = NEW.published WHERE paper_pk = NEW.pk;
    RETURN NULL;
END $$;
CREATE TRIGGER papers_published_moved AFTER UPDATE OF published ON papers
    FOR EACH ROW WHEN (NEW.published <> OLD.published) EXECUTE FUNCTION move_matches();

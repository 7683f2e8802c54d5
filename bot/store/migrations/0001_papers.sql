-- Papers, unique by base arXiv id; times are unix seconds UTC.
CREATE TABLE papers (
    pk               INTEGER PRIMARY KEY,
    arxiv_id         TEXT    NOT NULL UNIQUE,
    version          INTEGER NOT NULL,
    title            TEXT    NOT NULL,
    abstract         TEXT    NOT NULL,
    authors          TEXT    NOT NULL,  -- names joined with ", ": what FTS indexes
    authors_json     TEXT    NOT NULL,  -- [[name, [affiliation, ...]], ...] in author order
    primary_category TEXT    NOT NULL,
    categories       TEXT    NOT NULL,  -- space-joined, primary first
    published        INTEGER NOT NULL,  -- v1 submission time
    updated          INTEGER NOT NULL,  -- time of the stored version
    comment          TEXT,
    journal_ref      TEXT,
    doi              TEXT,
    first_seen       INTEGER NOT NULL,  -- when this store first saw the paper; kept across new versions
    last_changed     INTEGER NOT NULL
);
CREATE INDEX papers_by_published ON papers (published);

-- One row per (category, paper): counts per category and window without scanning every paper.
CREATE TABLE paper_categories (
    category  TEXT    NOT NULL,
    published INTEGER NOT NULL,
    paper_pk  INTEGER NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    PRIMARY KEY (category, published, paper_pk)
) WITHOUT ROWID;
CREATE INDEX paper_categories_by_paper ON paper_categories (paper_pk);

-- Full-text index over title, abstract and authors, kept in sync with papers by the triggers below.
CREATE VIRTUAL TABLE papers_fts USING fts5 (
    title, abstract, authors,
    content = 'papers', content_rowid = 'pk',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER papers_fts_insert AFTER INSERT ON papers BEGIN
    INSERT INTO papers_fts (rowid, title, abstract, authors) VALUES (new.pk, new.title, new.abstract, new.authors);
END;
CREATE TRIGGER papers_fts_delete AFTER DELETE ON papers BEGIN
    INSERT INTO papers_fts (papers_fts, rowid, title, abstract, authors)
    VALUES ('delete', old.pk, old.title, old.abstract, old.authors);
END;
CREATE TRIGGER papers_fts_update AFTER UPDATE OF title, abstract, authors ON papers BEGIN
    INSERT INTO papers_fts (papers_fts, rowid, title, abstract, authors)
    VALUES ('delete', old.pk, old.title, old.abstract, old.authors);
    INSERT INTO papers_fts (rowid, title, abstract, authors) VALUES (new.pk, new.title, new.abstract, new.authors);
END;

-- Where each source stands. `watermark` is the newest v1 submission time of the last *complete* cycle.
CREATE TABLE source_state (
    source               TEXT PRIMARY KEY,
    watermark            INTEGER,
    etag                 TEXT,
    last_modified        TEXT,
    last_attempt         INTEGER,
    last_success         INTEGER,
    last_error           TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    papers_stored        INTEGER NOT NULL DEFAULT 0
);

-- Backfill progress: submission-date windows of a job, each done once its papers are committed.
CREATE TABLE backfill_windows (
    job           TEXT    NOT NULL,
    window_start  INTEGER NOT NULL,
    window_end    INTEGER NOT NULL,  -- inclusive, minute precision
    done          INTEGER NOT NULL DEFAULT 0,
    papers        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, window_start, window_end)
);

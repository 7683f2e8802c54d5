-- The newest papers' own full-text index: the same columns and tokenizer as papers_fts, over a window of the
-- newest row ids only (10,000). /search ranks a common word's newest candidates here (bot/store/search.py):
-- bm25() counts the papers holding the word to weigh it, reading every entry of the word in the index it runs
-- on, 33 ms for a word in nearly every paper of a million, and the window holds 10,000 at most.
-- Every row id from `low` to `high` is in the window, and no other. New papers are not added by a trigger (a
-- second index of every paper stored made ingest 2-3x slower): the store brings the window up to date after
-- new papers came, once a search finds it behind (SearchRepo.refresh_recent), at most `span` papers however
-- many came; until then a search ranks over the whole index, as before. Changes to papers within the window
-- are applied by the triggers below, so the text it indexed is always the text stored.
CREATE TABLE papers_recent_window (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    low  INTEGER NOT NULL,  -- the first row id in the window
    high INTEGER NOT NULL,  -- the last
    span INTEGER NOT NULL   -- row ids it holds once up to date
);
INSERT INTO papers_recent_window (id, low, high, span)
SELECT 1, COALESCE(MAX(pk), 0) - 9999, COALESCE(MAX(pk), 0), 10000 FROM papers;

-- Its content: FTS5 reads a paper's text from here (a 'rebuild' indexes exactly the window).
CREATE VIEW papers_recent AS
    SELECT pk, title, abstract, authors FROM papers
    WHERE pk BETWEEN (SELECT low FROM papers_recent_window) AND (SELECT high FROM papers_recent_window);

CREATE VIRTUAL TABLE papers_recent_fts USING fts5 (
    title, abstract, authors,
    content = 'papers_recent', content_rowid = 'pk',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO papers_recent_fts (rowid, title, abstract, authors) SELECT pk, title, abstract, authors FROM papers_recent;

CREATE TRIGGER papers_recent_delete AFTER DELETE ON papers
WHEN old.pk BETWEEN (SELECT low FROM papers_recent_window) AND (SELECT high FROM papers_recent_window) BEGIN
    INSERT INTO papers_recent_fts (papers_recent_fts, rowid, title, abstract, authors)
    VALUES ('delete', old.pk, old.title, old.abstract, old.authors);
END;
CREATE TRIGGER papers_recent_update AFTER UPDATE OF title, abstract, authors ON papers
WHEN old.pk BETWEEN (SELECT low FROM papers_recent_window) AND (SELECT high FROM papers_recent_window) BEGIN
    INSERT INTO papers_recent_fts (papers_recent_fts, rowid, title, abstract, authors)
    VALUES ('delete', old.pk, old.title, old.abstract, old.authors);
    INSERT INTO papers_recent_fts (rowid, title, abstract, authors)
    VALUES (new.pk, new.title, new.abstract, new.authors);
END;

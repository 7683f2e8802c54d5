-- The newest papers' own full-text index: the same columns and tokenizer as papers_fts, over a window of the
-- newest row ids only (about 10,000), kept by the triggers below. /search ranks a common word's newest
-- candidates here (bot/store/search.py): bm25() counts the papers holding the word to weigh it, reading every
-- entry of the word in the index it runs on, 44 ms for a word in nearly every paper of a million, and the
-- window holds 10,000 at most. Every row id from `low` on is in the window, and no other: so when the window
-- yields as many candidates as asked for, they are the whole index's newest ones.
CREATE TABLE papers_recent_window (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    low  INTEGER NOT NULL,  -- the first row id in the window
    span INTEGER NOT NULL   -- row ids kept when it moves on, which it does every span / 10 new ones
);
INSERT INTO papers_recent_window (id, low, span) SELECT 1, COALESCE(MAX(pk), 0) - 9999, 10000 FROM papers;

-- Its content: FTS5 reads a paper's text from here (a 'rebuild' indexes exactly the window).
CREATE VIEW papers_recent AS
    SELECT pk, title, abstract, authors FROM papers WHERE pk >= (SELECT low FROM papers_recent_window);

CREATE VIRTUAL TABLE papers_recent_fts USING fts5 (
    title, abstract, authors,
    content = 'papers_recent', content_rowid = 'pk',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO papers_recent_fts (rowid, title, abstract, authors) SELECT pk, title, abstract, authors FROM papers_recent;

CREATE TRIGGER papers_recent_insert AFTER INSERT ON papers
WHEN new.pk >= (SELECT low FROM papers_recent_window) BEGIN
    INSERT INTO papers_recent_fts (rowid, title, abstract, authors)
    VALUES (new.pk, new.title, new.abstract, new.authors);
END;
CREATE TRIGGER papers_recent_delete AFTER DELETE ON papers
WHEN old.pk >= (SELECT low FROM papers_recent_window) BEGIN
    INSERT INTO papers_recent_fts (papers_recent_fts, rowid, title, abstract, authors)
    VALUES ('delete', old.pk, old.title, old.abstract, old.authors);
END;
CREATE TRIGGER papers_recent_update AFTER UPDATE OF title, abstract, authors ON papers
WHEN old.pk >= (SELECT low FROM papers_recent_window) BEGIN
    INSERT INTO papers_recent_fts (papers_recent_fts, rowid, title, abstract, authors)
    VALUES ('delete', old.pk, old.title, old.abstract, old.authors);
    INSERT INTO papers_recent_fts (rowid, title, abstract, authors)
    VALUES (new.pk, new.title, new.abstract, new.authors);
END;
-- The window moves on in steps of a tenth of its span (a batch of deletes every 1,000 new papers, not one
-- with each), the papers left behind taken out with the text they were indexed with (still theirs: an update
-- within the window re-indexes it).
CREATE TRIGGER papers_recent_trim AFTER INSERT ON papers
WHEN new.pk >= (SELECT low + span + span / 10 FROM papers_recent_window) BEGIN
    INSERT INTO papers_recent_fts (papers_recent_fts, rowid, title, abstract, authors)
    SELECT 'delete', pk, title, abstract, authors FROM papers
    WHERE pk >= (SELECT low FROM papers_recent_window) AND pk <= new.pk - (SELECT span FROM papers_recent_window);
    UPDATE papers_recent_window SET low = new.pk - span + 1;
END;

-- A paper stored from arXiv's announcement feed (RSS) before any full copy: `published` holds the announcement
-- time until the API's copy of the same version brings the v1 submission time (bot/announcements.py asks for it).
ALTER TABLE papers ADD COLUMN provisional INTEGER NOT NULL DEFAULT 0;
CREATE INDEX papers_provisional ON papers (last_changed) WHERE provisional = 1;

-- How arXiv announced each paper in each watched category, from its RSS feed: the first sighting of the newest
-- version announced, so a feed serving an old batch again neither moves the day nor turns a version back.
CREATE TABLE announcements (
    paper_pk INTEGER NOT NULL REFERENCES papers (pk) ON DELETE CASCADE,
    category TEXT    NOT NULL,
    kind     TEXT    NOT NULL CHECK (kind IN ('new', 'cross', 'replace', 'replace-cross')),
    version  INTEGER NOT NULL,
    day      TEXT    NOT NULL,  -- YYYY-MM-DD, UTC
    seen_at  INTEGER NOT NULL,
    PRIMARY KEY (paper_pk, category)
) WITHOUT ROWID;

-- topic_matches copies a paper's `published` (window counts read only that table): when a correction moves a
-- paper's date (a provisional date replaced by the v1 submission time), its matches move with it, once each.
CREATE TRIGGER papers_published_moved AFTER UPDATE OF published ON papers
WHEN new.published != old.published BEGIN
    UPDATE OR REPLACE topic_matches SET published = new.published WHERE paper_pk = new.pk;
END;

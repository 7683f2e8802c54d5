-- A topic's title-only words (`ti:`) are looked up in an index of the titles' lexemes alone. The GIN index of
-- `words` keeps lexemes without their weights, so a title-only term there found every paper holding the words
-- anywhere (at a million papers, ~120,000 for two common words) and PostgreSQL re-read each one's tsvector to
-- check the weight. The index is on an expression, the title part (weight A) of `words`, so there is no column to
-- fill (no rewrite of a million rows and of their `words` index entries) and no text to parse again as rows are
-- written, by this code or older. bot/store/postgres/fts_query.py writes the same expression (TITLE_VECTOR).
CREATE INDEX papers_title_words ON papers USING GIN ((ts_filter(words, '{a}')))
    WITH (gin_pending_list_limit = 16384);

-- Ingest: new entries of the `words` index wait in its pending list until it is full, then are merged into the
-- index in one sorted pass (walking the index once for all of them). With the default 4 MB the list filled every
-- page or two of 1,000 papers and a page's insert paid a merge each time; at 64 MB (about 20,000 papers) the
-- merge is rarer and larger, and the ingest sorts it with 64 MB of work_mem (bot/store/postgres/papers.py), so
-- that it is one pass, not many. VACUUM also merges it. A search reads the pending list too: at its fullest that
-- costs tens of milliseconds.
ALTER INDEX papers_words SET (gin_pending_list_limit = 65536);

-- Ingest: a paper's row (~5 kB) is stored compressed and partly out of line. The tsvector barely compresses,
-- so it goes out of line without trying; the texts are compressed with lz4 rather than pglz (several times
-- faster to compress, as fast to read). A server built without lz4 keeps pglz. Rows written before keep theirs.
ALTER TABLE papers ALTER COLUMN words SET STORAGE EXTERNAL;
DO $$ BEGIN
    ALTER TABLE papers
        ALTER COLUMN title SET COMPRESSION lz4,
        ALTER COLUMN abstract SET COMPRESSION lz4,
        ALTER COLUMN authors SET COMPRESSION lz4,
        ALTER COLUMN authors_json SET COMPRESSION lz4,
        ALTER COLUMN comment SET COMPRESSION lz4,
        ALTER COLUMN title_words SET COMPRESSION lz4,
        ALTER COLUMN abstract_words SET COMPRESSION lz4,
        ALTER COLUMN authors_words SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END $$;

-- A topic's matches are written a statement at a time (its history: thousands of rows): the counts of their days
-- are forgotten once per statement, as paper_categories' are (0005), not once per row (half the cost of writing
-- a new topic's 6,500 matches).
DROP TRIGGER topic_matches_day_changed ON topic_matches;
DROP FUNCTION forget_topic_day_counts();
CREATE FUNCTION forget_topic_day_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM topic_day_counts c USING (SELECT DISTINCT topic_id, div(published, 86400) AS day FROM changed_rows) r
     WHERE c.topic_id = r.topic_id AND c.day = r.day;
    RETURN NULL;
END $$;
CREATE TRIGGER topic_matches_added AFTER INSERT ON topic_matches
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION forget_topic_day_counts();
CREATE TRIGGER topic_matches_removed AFTER DELETE ON topic_matches
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION forget_topic_day_counts();
CREATE TRIGGER topic_matches_changed_from AFTER UPDATE ON topic_matches
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION forget_topic_day_counts();
CREATE TRIGGER topic_matches_changed_to AFTER UPDATE ON topic_matches
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION forget_topic_day_counts();

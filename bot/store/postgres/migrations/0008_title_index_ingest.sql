-- A topic's title-only words (`ti:`) are looked up in an index of the titles alone. The GIN index of `words`
-- keeps lexemes without their weights, so a title-only term there found every paper holding the words anywhere
-- (at a million papers, ~120,000 for two common words) and PostgreSQL re-read each one's tsvector to check the
-- weight. An index on an expression needs no new column to fill (no rewrite of a million rows and of their
-- `words` index entries): PostgreSQL computes it from `title_words` as rows are written, old and new code alike.
-- bot/store/postgres/fts_query.py writes the same expression (TITLE_VECTOR) so that the planner uses it.
CREATE INDEX papers_title_words ON papers USING GIN ((to_tsvector('simple'::regconfig, title_words)))
    WITH (gin_pending_list_limit = 16384);

-- Ingest: new entries of the `words` index wait in its pending list and are merged into the index in one
-- sorted pass when the list is full (or by VACUUM). With the default 4 MB the list filled every page or two of
-- 1,000 papers, and each merge walked the index for few entries: 64 MB merges ~20,000 papers' words at once,
-- about 4 times cheaper per paper. A search reads the pending list too; at 64 MB that costs tens of ms.
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

-- `python -m bot migrate-store`: which SQLite deployment this database was copied from, and how far each table's
-- copy has come (the last key copied, committed with its batch), so an interrupted copy resumes where it stopped.
CREATE TABLE store_copies (
    source      TEXT   PRIMARY KEY,  -- the SQLite deployment, named by when its first migration ran
    started_at  BIGINT NOT NULL,
    finished_at BIGINT
);

CREATE TABLE store_copy_positions (
    source     TEXT   NOT NULL REFERENCES store_copies (source) ON DELETE CASCADE,
    table_name TEXT   NOT NULL,
    last_key   TEXT   NOT NULL,  -- the JSON array of the last copied row's key, in the SQLite table's key order
    copied     BIGINT NOT NULL,
    PRIMARY KEY (source, table_name)
);

-- Ingest: a paper's tsvector is built by the store (bot/store/postgres/tokens.py `tsvector`, equal to the
-- expression it replaces) and sent in binary; PostgreSQL's text parser was most of the cost of storing a paper.
-- The column keeps its values and its GIN index.
ALTER TABLE papers ALTER COLUMN words DROP EXPRESSION;

-- A batch of papers forgets the cached counts of its days once per statement, not once per category row.
DROP TRIGGER paper_categories_changed ON paper_categories;
DROP FUNCTION forget_day_counts();
CREATE FUNCTION forget_day_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM category_day_counts WHERE day IN (SELECT DISTINCT div(published, 86400) FROM changed_rows);
    RETURN NULL;
END $$;
CREATE TRIGGER paper_categories_added AFTER INSERT ON paper_categories
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION forget_day_counts();
CREATE TRIGGER paper_categories_removed AFTER DELETE ON paper_categories
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION forget_day_counts();

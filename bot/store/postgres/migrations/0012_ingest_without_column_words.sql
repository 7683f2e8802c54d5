-- Ingest: each paper's FTS5 words per column (title_words, abstract_words, authors_words: migration 0001 generated
-- `words` from them) are read by nothing since the store builds `words` itself (0005, bot/store/postgres/tokens.py).
-- Written for every paper, they were a third of a row's bytes to send, compress and store. Dropping them is
-- immediate; their space in rows already written is reused as those rows are rewritten (VACUUM FULL: at once).
ALTER TABLE papers DROP COLUMN title_words, DROP COLUMN abstract_words, DROP COLUMN authors_words;

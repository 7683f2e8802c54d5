-- How many papers hold each indexed term (Porter stems, as papers_fts stores them): /ask leaves out the words
-- of a question so common that ranking their papers would read a large part of the index (bot/ask/retrieval.py).
CREATE VIRTUAL TABLE papers_fts_terms USING fts5vocab (papers_fts, row);

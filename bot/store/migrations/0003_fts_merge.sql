-- Merge FTS5 segments in larger steps (default 4): batched ingest of 100,000 papers ran ~30% faster in
-- bench/bench_ingest.py, and searches still read few enough segments.
INSERT INTO papers_fts (papers_fts, rank) VALUES ('automerge', 16);

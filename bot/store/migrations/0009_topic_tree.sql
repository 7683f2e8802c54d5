-- Topics form a tree (bot/topic_tree.py): a paper matching a topic matches every ancestor. A catalog
-- topic's parent is another catalog topic; a server's own topic may sit under a catalog topic or one of its own.
ALTER TABLE topics ADD COLUMN parent_id INTEGER REFERENCES topics (id) ON DELETE SET NULL;
CREATE INDEX topics_by_parent ON topics (parent_id);

-- The matches are stored for the closure, so every reader (posts, /latest, /search, /momentum) stays a plain
-- query: a topic holds a row for each paper its own query matches (direct = 1) and for each paper a descendant
-- of the same owner matches (direct = 0). Rows from before the tree are all direct. The flag lets a changed
-- descendant's rows be recomputed without evaluating any query again (TopicRepo.rebuild_inherited).
ALTER TABLE topic_matches ADD COLUMN direct INTEGER NOT NULL DEFAULT 1;

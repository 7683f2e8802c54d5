-- The learned scorer (bot/topics/scorer.py) suggests papers a topic's query misses. They are stored beside the
-- query's matches, marked: kind 'exact' (the query, or a descendant's, matched it) or 'suggested' (the scorer
-- put it above the topic's calibrated threshold). Every reader that counts or trains keeps to 'exact'; /latest
-- and the posts of follows that ask for suggestions read both, and say which is which.
ALTER TABLE topic_matches ADD COLUMN kind TEXT NOT NULL DEFAULT 'exact' CHECK (kind IN ('exact', 'suggested'));

-- What a follow receives: the query's matches only ('exact', the default), or also the scorer's suggestions.
ALTER TABLE follows ADD COLUMN match TEXT NOT NULL DEFAULT 'exact' CHECK (match IN ('exact', 'suggested'));

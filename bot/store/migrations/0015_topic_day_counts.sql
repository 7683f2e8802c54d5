-- Each topic's exact matches per day (momentum's counts: /momentum's ranking read every match of its topics'
-- 12 weeks, which grows with the history), counted once per (topic, day) and forgotten by the triggers below as
-- soon as a match of that day is added, changed or removed.
CREATE TABLE topic_day_counts (
    topic_id INTEGER NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    day      INTEGER NOT NULL,  -- unix day: published / 86400
    papers   INTEGER NOT NULL,
    PRIMARY KEY (topic_id, day)
) WITHOUT ROWID;

CREATE TRIGGER topic_matches_added_day AFTER INSERT ON topic_matches BEGIN
    DELETE FROM topic_day_counts WHERE topic_id = new.topic_id AND day = new.published / 86400;
END;
CREATE TRIGGER topic_matches_removed_day AFTER DELETE ON topic_matches BEGIN
    DELETE FROM topic_day_counts WHERE topic_id = old.topic_id AND day = old.published / 86400;
END;
CREATE TRIGGER topic_matches_changed_day AFTER UPDATE OF kind, published, topic_id ON topic_matches BEGIN
    DELETE FROM topic_day_counts WHERE topic_id = old.topic_id AND day = old.published / 86400;
    DELETE FROM topic_day_counts WHERE topic_id = new.topic_id AND day = new.published / 86400;
END;

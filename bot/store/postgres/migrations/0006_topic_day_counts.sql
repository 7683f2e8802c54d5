-- Each topic's exact matches per day (momentum's counts: /momentum's ranking read every match of its topics'
-- 12 weeks, which grows with the history), counted once per (topic, day) and forgotten by the trigger below as
-- soon as a match of that day is added, changed or removed.
CREATE TABLE topic_day_counts (
    topic_id BIGINT NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    day      BIGINT NOT NULL,
    papers   BIGINT NOT NULL,
    PRIMARY KEY (topic_id, day)
);

CREATE FUNCTION forget_topic_day_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM topic_day_counts WHERE topic_id = OLD.topic_id AND day = div(OLD.published, 86400);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        DELETE FROM topic_day_counts WHERE topic_id = NEW.topic_id AND day = div(NEW.published, 86400);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER topic_matches_day_changed AFTER INSERT OR UPDATE OR DELETE ON topic_matches
    FOR EACH ROW EXECUTE FUNCTION forget_topic_day_counts();

-- The outbox's topics move onto its rows: a poll's fan-out writes one row per (channel, paper) with the ids of
-- the followed topics it stands for (a JSON array), instead of as many rows again in a link table with two
-- foreign keys and its index. `delivery_topics` stays as a view of the same rows, (delivery_id, topic_id), for
-- what reads them (card topics, ratings, unfollow); deleting from it takes the topic off the row.
ALTER TABLE deliveries ADD COLUMN topic_ids TEXT NOT NULL DEFAULT '[]';
UPDATE deliveries SET topic_ids = (
    SELECT json_group_array(topic_id) FROM (
        SELECT topic_id FROM delivery_topics WHERE delivery_id = deliveries.id ORDER BY topic_id
    )
) WHERE id IN (SELECT delivery_id FROM delivery_topics);
DROP TABLE delivery_topics;

CREATE VIEW delivery_topics (delivery_id, topic_id) AS
    SELECT d.id, j.value FROM deliveries d, json_each(d.topic_ids) j;

CREATE TRIGGER delivery_topics_deleted INSTEAD OF DELETE ON delivery_topics BEGIN
    UPDATE deliveries SET topic_ids = (
        SELECT json_group_array(value) FROM json_each(deliveries.topic_ids) WHERE value <> old.topic_id
    ) WHERE id = old.delivery_id;
END;

-- A deleted topic leaves the rows of its server (a server's own topic is only ever in that server's rows), as
-- the link table's ON DELETE CASCADE did: a later topic given the same id must not inherit them.
CREATE TRIGGER topics_deleted_leave_deliveries AFTER DELETE ON topics BEGIN
    UPDATE deliveries SET topic_ids = (
        SELECT json_group_array(value) FROM json_each(deliveries.topic_ids) WHERE value <> old.id
    ) WHERE guild_id = old.guild_id AND EXISTS (SELECT 1 FROM json_each(deliveries.topic_ids) WHERE value = old.id);
END;

-- Rows left 'sending' by a worker that stopped are looked up by this index; (status, next_attempt_at) was in the
-- way of every row the fan-out writes and served no read the channel's own index (channel_id, paper_pk) does not.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_sending ON deliveries (channel_id) WHERE status = 'sending';

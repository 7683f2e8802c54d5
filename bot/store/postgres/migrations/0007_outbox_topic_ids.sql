-- The SQLite store's migration 0016: the outbox's topics move onto its rows (an array of topic ids), so a poll's
-- fan-out writes one row per (channel, paper) instead of as many rows again in a link table with two foreign keys
-- and two indexes. `delivery_topics` stays as a view of the same rows for what reads them (card topics, ratings,
-- unfollow); deleting from it takes the topic off the row.
ALTER TABLE deliveries ADD COLUMN topic_ids BIGINT[] NOT NULL DEFAULT '{}';
UPDATE deliveries d SET topic_ids = l.ids
  FROM (SELECT delivery_id, array_agg(topic_id ORDER BY topic_id) AS ids FROM delivery_topics GROUP BY delivery_id) l
 WHERE l.delivery_id = d.id;
DROP TABLE delivery_topics;

CREATE VIEW delivery_topics AS
    SELECT d.id AS delivery_id, t.topic_id FROM deliveries d CROSS JOIN LATERAL unnest(d.topic_ids) AS t (topic_id);

CREATE FUNCTION delivery_topics_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE deliveries SET topic_ids = array_remove(topic_ids, OLD.topic_id) WHERE id = OLD.delivery_id;
    RETURN OLD;
END $$;
CREATE TRIGGER delivery_topics_deleted INSTEAD OF DELETE ON delivery_topics
    FOR EACH ROW EXECUTE FUNCTION delivery_topics_deleted();

-- A deleted topic leaves the rows of its server (a server's own topic is only ever in that server's rows), as
-- the link table's ON DELETE CASCADE did.
CREATE FUNCTION topic_leaves_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE deliveries SET topic_ids = array_remove(topic_ids, OLD.id)
     WHERE guild_id = OLD.guild_id AND OLD.id = ANY (topic_ids);
    RETURN NULL;
END $$;
CREATE TRIGGER topics_deleted_leave_deliveries AFTER DELETE ON topics
    FOR EACH ROW EXECUTE FUNCTION topic_leaves_deliveries();

-- The outbox's rows no longer check their paper one by one (a per-row foreign-key check was a third of the
-- fan-out's time): the fan-out joins the papers table itself, and the bot never deletes a paper. One deleted by
-- hand still takes its rows with it, as ON DELETE CASCADE did, a statement at a time.
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_paper_pk_fkey;
CREATE FUNCTION papers_leave_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM deliveries WHERE paper_pk IN (SELECT pk FROM gone);
    RETURN NULL;
END $$;
CREATE TRIGGER papers_deleted_leave_deliveries AFTER DELETE ON papers
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION papers_leave_deliveries();

-- Rows left 'sending' by a worker that stopped are looked up by this index; (status, next_attempt_at) was in the
-- way of every row the fan-out writes and served no read the channel's own index (channel_id, paper_pk) does not.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_sending ON deliveries (channel_id) WHERE status = 'sending';

-- A server's own topic is keyed by its name's letters and digits in any script (bot/store/topics.py
-- topic_key), stored as its slug. The old slug kept ASCII only, so "量子" and "機械学習" both became "topic".
-- SQL cannot fold Unicode case, so this only queues the topics whose key may differ from their old slug
-- (a name with a character outside printable ASCII, or with no ASCII letter or digit); the topic service
-- gives them their key at its next start (TopicRepo.rekey_legacy) and empties the queue.
CREATE TABLE topic_rekeys (
    topic_id INTEGER PRIMARY KEY REFERENCES topics (id) ON DELETE CASCADE
);
INSERT INTO topic_rekeys (topic_id)
SELECT id FROM topics
WHERE guild_id != 0 AND (name GLOB '*[^ -~]*' OR name NOT GLOB '*[A-Za-z0-9]*');

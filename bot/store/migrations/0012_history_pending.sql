-- Topics whose stored history is still to be matched (catalog topics a release added or changed): the bot matches
-- them in the background once it answers commands, and a restart midway resumes them instead of forgetting them.
CREATE TABLE topic_history_pending (
    topic_id  INTEGER PRIMARY KEY REFERENCES topics (id) ON DELETE CASCADE,
    queued_at INTEGER NOT NULL
);

-- A followed channel's kind (Discord's channel type: 0 text, 5 announcement, 15 forum, 11 a thread, ...), recorded by
-- /follow (the gateway knows it) so that a deliver process, which has no gateway cache, posts without asking Discord
-- for the channel first. NULL: not known (follows made before): fetched once, then recorded.
ALTER TABLE follows ADD COLUMN channel_type INTEGER;

-- The deliver workers in a round now (claiming, posting, or watching channels other workers hold), until when: a
-- worker claims at most its share of the channels with work, counted from these (bot/store/deliveries.py `share`).
CREATE TABLE delivery_workers (
    worker_id   TEXT    PRIMARY KEY,
    round_until INTEGER NOT NULL
);

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

-- When a row was last marked 'sending' (NULL: before this column): a worker taking over a channel whose worker died
-- seconds ago posts such rows again with their nonce, which Discord answers with the message already made (it checks
-- a nonce for some minutes), instead of first reading the channel's history (bot/delivery.py `_recover_channel`).
ALTER TABLE deliveries ADD COLUMN sending_at INTEGER;

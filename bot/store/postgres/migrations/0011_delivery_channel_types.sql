-- The SQLite store's migration 0018: a followed channel's kind (Discord's channel type), recorded by /follow so that
-- a deliver process posts without asking Discord for the channel first (NULL: not known, fetched once); and the
-- deliver workers in a round now, from which each counts its share of the channels with work.
ALTER TABLE follows ADD COLUMN channel_type INTEGER;

CREATE TABLE delivery_workers (
    worker_id   TEXT COLLATE "C" PRIMARY KEY,
    round_until BIGINT NOT NULL
);

-- When a row was last marked 'sending' (NULL: before this column): see the SQLite store's migration 0018.
ALTER TABLE deliveries ADD COLUMN sending_at BIGINT;

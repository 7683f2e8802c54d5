-- The SQLite store's migration 0014: which deliver worker holds a channel of the outbox, and until when.
CREATE TABLE delivery_leases (
    channel_id  BIGINT PRIMARY KEY,
    claimed_by  TEXT COLLATE "C" NOT NULL DEFAULT '',
    lease_until BIGINT NOT NULL DEFAULT 0
);
INSERT INTO delivery_leases (channel_id)
    SELECT DISTINCT channel_id FROM deliveries WHERE status IN ('pending', 'sending');

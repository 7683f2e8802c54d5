-- Which deliver worker holds a channel of the outbox, and until when. A worker claims a channel (its order and
-- its rate limit stay in one worker), renews the lease while posting and frees it when done; a lease that
-- expired (its worker was killed) is taken over by another worker, which first checks the rows left 'sending'.
-- enqueue adds a channel's row the first time the channel gets a delivery.
CREATE TABLE delivery_leases (
    channel_id  INTEGER PRIMARY KEY,
    claimed_by  TEXT    NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0
);
INSERT INTO delivery_leases (channel_id)
    SELECT DISTINCT channel_id FROM deliveries WHERE status IN ('pending', 'sending');

-- The bot token's requests to Discord, counted for every deliver process at once (bot/pacing.py): the window of
-- Discord's global rate limit the turns now go in (its start, in microseconds since the epoch, and how many turns
-- it gave), in one row (id 1) that the first turn writes.
CREATE TABLE discord_turns (
    id           SMALLINT PRIMARY KEY CHECK (id = 1),
    window_start BIGINT NOT NULL,
    turns        INTEGER NOT NULL
);

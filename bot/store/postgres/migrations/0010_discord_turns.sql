-- The bot token's requests to Discord, counted for every deliver process at once (bot/pacing.py): the window of
-- Discord's global rate limit the turns now go in (its start, in microseconds since the epoch, and how many turns
-- it gave), one row, so that the processes together stay within the limit.
CREATE TABLE discord_turns (
    id           SMALLINT PRIMARY KEY CHECK (id = 1),
    window_start BIGINT NOT NULL DEFAULT 0,
    turns        INTEGER NOT NULL DEFAULT 0
);
INSERT INTO discord_turns (id) VALUES (1);

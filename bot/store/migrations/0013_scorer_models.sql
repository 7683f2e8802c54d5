-- The learned scorer's trained model (issue 12): in the database, so that every process of a deployment, on any
-- machine, reads the one model the last training wrote. One row per model name; the blob is the model archive
-- (bot/topics/scorer_store.py) of format `format`: another format is trained again, never read.
CREATE TABLE scorer_models (
    name       TEXT    PRIMARY KEY,
    format     INTEGER NOT NULL,
    model      BLOB    NOT NULL,
    trained_at INTEGER NOT NULL
);

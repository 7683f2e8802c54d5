-- The SQLite store's migration 0013 (the learned scorer's model in the database), on PostgreSQL.
CREATE TABLE scorer_models (
    name       TEXT    PRIMARY KEY,
    format     INTEGER NOT NULL,
    model      BYTEA   NOT NULL,
    trained_at BIGINT  NOT NULL
);

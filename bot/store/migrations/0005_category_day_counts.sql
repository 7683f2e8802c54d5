-- Papers per day for a set of categories (the denominator of every momentum share), computed once per day and
-- set, and forgotten by the triggers below as soon as a paper of that day is added, changed or removed.
CREATE TABLE category_day_counts (
    categories TEXT    NOT NULL,  -- the sorted category set, space-joined
    day        INTEGER NOT NULL,  -- unix day: published / 86400
    papers     INTEGER NOT NULL,
    PRIMARY KEY (categories, day)
) WITHOUT ROWID;
CREATE INDEX category_day_counts_by_day ON category_day_counts (day);

CREATE TRIGGER paper_categories_added AFTER INSERT ON paper_categories BEGIN
    DELETE FROM category_day_counts WHERE day = new.published / 86400;
END;
CREATE TRIGGER paper_categories_removed AFTER DELETE ON paper_categories BEGIN
    DELETE FROM category_day_counts WHERE day = old.published / 86400;
END;

-- Schema v17 (both engines): what the listing capability (loan:reporting@1.2.0) pages over.
--
-- * `listing_state` is one row: the snapshot's generation, which every import that writes
--   loans bumps inside its transaction, and the key that seals the cursors hosts issue
--   (32 random bytes as hex, written by the first host that needs it; every host sharing the
--   database opens every other's cursors). A page's statement reads the generation with its
--   rows, so a cursor names the snapshot it was cut from and a later page from another one is
--   refused rather than skipping or repeating rows (docs/design.md, "Listing").
-- * Lists by amount and by commission read an index in that order (by status date, update and
--   closing date, the snapshot's own indexes serve); the loan's key breaks ties.

CREATE TABLE listing_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL,
    cursor_key TEXT
);
INSERT INTO listing_state (id, generation) VALUES (1, 0);

CREATE INDEX loans_list_amount ON loans (loan_amount, key);
CREATE INDEX loans_list_commission ON loans (locked_compensation, key);

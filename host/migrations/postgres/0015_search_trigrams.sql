-- Schema v14 (PostgreSQL): a trigram index for `searchText` (docs/decisions.md, "Schema v14:
-- `searchText` through a trigram index"). A search is `search_key LIKE '%token%'` for each
-- token, which no B-tree serves: at 1M loans an organisation's search read every loan (a
-- parallel scan, 300-340 ms for "smith", over the Admin's 300 ms bound), its time spent
-- testing each row's search key rather than reading pages. pg_trgm's GIN index finds the
-- loans holding the token's trigrams (62k of 1M for "smith": 160 ms with the grouping; a
-- company's 20k loans searched 29 -> 13-18 ms). A person's few hundred loans keep off it
-- (the compiler writes their search as an expression, `Compiler::search_column`): AND-ing
-- their index with the trigrams of a common token cost 12 ms where their own 150 loans take
-- 0.5.
--
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: the database's owner
-- may create it. Where it cannot be created (a server without contrib, a role without the
-- right), the schema is complete without the index: searches read every loan as before and
-- the host says so when it starts. `CREATE EXTENSION pg_trgm;` and the index below, run
-- later by hand, restore it; nothing else depends on it. Converts in place: built here
-- (12 s at 1M loans, 64 MB).

DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm could not be created (%): searchText reads every loan', SQLERRM;
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX IF NOT EXISTS loans_search_trigrams ON loans USING gin (search_key gin_trgm_ops);
    END IF;
END
$$;

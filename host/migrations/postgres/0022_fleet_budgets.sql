-- Schema v22 (PostgreSQL only; issue #74, decision 0048): the fleet's per-caller budgets. One
-- row per caller and budget (0 calls, 1 seconds of plugin time, 2 MiB of results): a token
-- bucket's level when it was last `updated`, refilled by whoever reads it next. Hosts on one
-- database lease small slices of it (`fleet_budget_lease`), so a caller's budget holds across
-- the fleet; SQLite serves one host and keeps its budgets in memory. Nothing personal: the
-- caller is the directory's user id.

CREATE TABLE fleet_budgets (
    caller   TEXT NOT NULL,
    budget   SMALLINT NOT NULL,
    level    DOUBLE PRECISION NOT NULL,
    updated  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (caller, budget)
);

-- Charges `debt` (what a host's calls spent beyond their leases) to one bucket, then leases up
-- to `want` of what is left: the bucket refilled at `per_second` since it was last read, up to
-- `burst`; the debt may take it below zero, as one host's bucket may go; the grant never does,
-- and is whole when `whole` (calls). Returns the grant. The row is locked while it is read and
-- written, so hosts' leases are serialised and nothing is granted twice; the instant is taken
-- after the lock, by the database's clock, so hosts' clocks do not matter.
CREATE FUNCTION fleet_budget_lease(
    p_caller TEXT,
    p_budget SMALLINT,
    p_burst DOUBLE PRECISION,
    p_per_second DOUBLE PRECISION,
    p_want DOUBLE PRECISION,
    p_debt DOUBLE PRECISION,
    p_whole BOOLEAN
) RETURNS DOUBLE PRECISION LANGUAGE plpgsql AS $$
DECLARE
    v_level DOUBLE PRECISION;
    v_updated TIMESTAMPTZ;
    v_now TIMESTAMPTZ;
    v_grant DOUBLE PRECISION;
BEGIN
    IF p_want <= 0 AND p_debt <= 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO fleet_budgets (caller, budget, level, updated)
    VALUES (p_caller, p_budget, p_burst, clock_timestamp())
    ON CONFLICT (caller, budget) DO NOTHING;
    SELECT level, updated INTO v_level, v_updated
    FROM fleet_budgets WHERE caller = p_caller AND budget = p_budget FOR UPDATE;
    v_now := clock_timestamp();
    v_level := LEAST(p_burst, v_level
        + GREATEST(0, EXTRACT(EPOCH FROM (v_now - v_updated))) * p_per_second) - GREATEST(p_debt, 0);
    v_grant := GREATEST(0, LEAST(GREATEST(p_want, 0), v_level));
    IF p_whole THEN
        v_grant := floor(v_grant);
    END IF;
    UPDATE fleet_budgets SET level = v_level - v_grant, updated = GREATEST(v_now, v_updated)
    WHERE caller = p_caller AND budget = p_budget;
    RETURN v_grant;
END
$$;

-- The hosts of the fleet, each seen when it last said so (every few seconds): a host that
-- loses the database shares each caller's budget with the hosts seen lately, so the fleet
-- grants no more than its budget while the ledger cannot be read.
CREATE TABLE fleet_hosts (
    host  TEXT PRIMARY KEY,
    seen  TIMESTAMPTZ NOT NULL
);

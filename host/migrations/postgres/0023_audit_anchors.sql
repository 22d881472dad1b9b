-- Schema v23 (PostgreSQL only; issue #74, decision 0047): anchors of the hosts' audit chains.
-- Every few seconds a host records its audit log's last line (its number and seal) under the
-- chain's name (the seal of its first line), so `loanhost audit verify --anchors` finds a
-- log cut at its end, or rewound with its head, and a chain written again by whoever holds
-- the audit key. Nothing personal: numbers and seals. Rows are only ever added: an update or
-- a delete is refused (give the hosts' role INSERT and SELECT on it, nothing more).

CREATE TABLE audit_anchors (
    chain     TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    seal      TEXT NOT NULL,
    anchored  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (chain, seq)
);

CREATE FUNCTION audit_anchors_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit anchors are only ever added';
END
$$;

CREATE TRIGGER audit_anchors_append_only BEFORE UPDATE OR DELETE ON audit_anchors
    FOR EACH ROW EXECUTE FUNCTION audit_anchors_append_only();

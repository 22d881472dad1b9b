-- Agents can be deactivated (`active: false` in agents.jsonl): a deactivated agent no longer
-- signs in. Portable: an INTEGER 0/1 on both engines.
ALTER TABLE agents ADD COLUMN active INTEGER NOT NULL DEFAULT 1;

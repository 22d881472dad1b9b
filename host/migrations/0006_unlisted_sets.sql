-- Schema v5: the period sets that hold the unlisted status bit (1 << 62, history_keys.rs),
-- found without reading the others. A milestone report keyed by the raw status (not a label
-- map) takes each listed status from the sets and reads history rows only for the (period,
-- loan) sets that hold the unlisted bit: usually none, so these indexes are nearly empty.
-- Both engines take the same words (partial indexes over an integer expression).
CREATE INDEX los_history_months_unlisted ON los_history_months (period_index)
    WHERE (status_bits & 4611686018427387904) <> 0;
CREATE INDEX los_history_weeks_unlisted ON los_history_weeks (period_index)
    WHERE (status_bits & 4611686018427387904) <> 0;

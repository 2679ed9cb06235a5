"""The progress core, pure: numerator/denominator progress, states, history (rates, ETA, stall),
KIP-179 statuses and the one-shot report, on snapshot tables. No I/O; imports only streaming.vocabulary."""

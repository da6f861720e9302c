"""Lambda handlers of the benchmark (one asset): the baseline's key function and the user chain's
large-result step. Imported by Lambda as top-level modules."""

"""Benchmarks of idempotent_constructs: per-execution overhead, cost, stack growth, synth time and key
hashing, side by side with a baseline built like the aws-samples idempotent workflow.

    python -m bench            full run (a few minutes), writes bench/results.json
    python -m bench --smoke    fast run of every section (CI), writes to a temporary file
"""

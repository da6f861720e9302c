"""Private: the synth plumbing the constructs share (options' kinds and checks, where definitions live,
roles, names, metrics, the quota check, the shared Lambda functions). Nothing here is public API."""

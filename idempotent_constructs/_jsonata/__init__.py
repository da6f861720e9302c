"""Private: the JSONata toolkit. The builders of the canonical key's expressions, the check of what
Step Functions refuses in an expression, and the engine that evaluates JSONata as Step Functions does.
Nothing here is public API."""

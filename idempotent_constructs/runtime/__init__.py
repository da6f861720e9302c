"""The run-time code that calls AWS with boto3: operating on records (``operations``), starting
executions idempotently by name (``executions``), and finding a deployed stack's table
(``stack_table``). ``idempotent_constructs.runtime.operations`` and ``idempotent_constructs.runtime.executions`` are
their public names."""

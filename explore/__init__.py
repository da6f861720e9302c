"""The protocol explorer: every interleaving of executions of one key within stated bounds, checked against
the contract's promises, from the definitions the library generates (issue 51; docs/project/explorer.md).

The definition is the model: ``configurations`` synthesizes the guard in each configuration that changes
the protocol, ``machine`` runs its states as Step Functions does (JSONata by the project's engine), and
``services`` answers their calls as AWS does (DynamoDB by moto, the library's own functions as deployed).
``transitions`` says what may happen next (each call taking effect and replying, failing before its effect,
or taking effect with its reply lost; the clock; crashes; redrives; the release function's events; TTL),
``search`` explores every state once and ``invariants`` judges each transition. ``./dev explore`` runs it.
"""

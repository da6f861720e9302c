"""Lambda handler code of idempotent_constructs, shipped in the wheel as ``idempotent_constructs.lambda_src``.

At run time Lambda loads these modules from the asset root as top-level modules (``compute_key``,
``canonical``, ``key_selection``, ``schema``); the library imports them as this package.
"""

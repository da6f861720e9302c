"""The example app: an order workflow made idempotent as a whole, with its charge step guarded too."""

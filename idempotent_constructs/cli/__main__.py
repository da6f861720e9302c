"""python -m idempotent_constructs.cli: the command-line tool."""

from . import main

main()

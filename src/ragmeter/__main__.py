"""``python -m ragmeter`` runs the command line."""

from ragmeter.cli import main

main()

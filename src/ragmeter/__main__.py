"""``python -m ragmeter`` runs the command line."""

from ragmeter.cli import main

if __name__ == "__main__":  # not when a spawned process (an xlsx download's) imports it
    main()

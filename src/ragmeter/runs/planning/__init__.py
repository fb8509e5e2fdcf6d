"""What an evaluation is and what it will do: its config (from the command line, the Python API
or a request), its metrics, target and rows, and its lineage."""

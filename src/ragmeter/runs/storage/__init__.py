"""Where runs are kept: datasets and their versions, run records, results; answers store
records."""

"""Review queues: rows of a run picked for people to label, and who labels each."""

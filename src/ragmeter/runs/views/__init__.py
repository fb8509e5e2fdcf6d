"""What a stored run shows: the run as the API shows it, its rows, distributions, comparisons
and report."""

"""The reference implementations' own test cases (``shared/peer_suites/`` beside the checkout),
run through ragmeter's Python API, command line and service."""

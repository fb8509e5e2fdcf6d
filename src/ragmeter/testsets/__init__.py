"""Test sets from a knowledge space: questions and reference answers written by the judge
from the space's chunks, gated (grounded, standalone, not answering themselves, deduplicated,
language-locked), with the source chunk ids as ``reference_ids``."""

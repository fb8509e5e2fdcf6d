"""Whether a run passes: gate rules, the results they read, their outcome and its outputs."""

"""How an evaluation runs: the executor, the service's queue of runs, where finished rows go,
repeated judgements."""

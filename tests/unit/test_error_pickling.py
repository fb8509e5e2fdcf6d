"""An error raised in another process (an xlsx download's, a Ray worker's) comes back whole:
its type, message and the attributes its keyword arguments set."""

from __future__ import annotations

import pickle

from ragmeter.errors import DatasetError, LimitError, NotFoundError, TraceError


def test_errors_with_keyword_arguments_cross_processes_whole() -> None:
    limit = pickle.loads(pickle.dumps(LimitError("too wide", setting="[server] x", status=413)))
    assert type(limit) is LimitError and str(limit) == "too wide ([server] x)"
    assert (limit.setting, limit.status) == ("[server] x", 413)
    row = pickle.loads(pickle.dumps(DatasetError("no query", row=3, field="query", line=4)))
    assert (row.row, row.field, row.line, str(row)) == (
        3,
        "query",
        4,
        str(DatasetError("no query", row=3, field="query", line=4)),
    )
    trace = pickle.loads(pickle.dumps(TraceError("bad span", status=415)))
    assert trace.status == 415 and str(trace) == "bad span"
    plain = pickle.loads(pickle.dumps(NotFoundError("run 'x' not found")))
    assert type(plain) is NotFoundError and plain.args == ("run 'x' not found",)

"""Run owners name a process by host, pid and start time, so a reused pid is not taken for
the server that died (a real child process stands in for a server)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from ragmeter.runs.storage._owner import alive, process_owner, process_start, this_process


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times come from /proc")
def test_a_live_child_is_alive_and_a_wrong_start_time_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = process_owner(child.pid)
        start = process_start(child.pid)
        assert start is not None and owner == f"{socket.gethostname()}:{child.pid}@{start}"
        assert alive(owner)
        assert alive(f"{socket.gethostname()}:{child.pid}")  # an old owner: by pid alone
        reused = f"{socket.gethostname()}:{child.pid}@{int(start) + 1}"
        assert not alive(reused)  # same pid, another process: the owner is gone
    finally:
        child.kill()
        child.wait(timeout=10)
    deadline = time.monotonic() + 10
    while alive(owner) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(owner)


def test_owners_of_this_process_other_hosts_and_garbage() -> None:
    assert this_process().startswith(f"{socket.gethostname()}:")
    assert not alive(this_process())  # a process starting up owns nothing running yet
    assert alive("another-machine:1@5")  # another host's runs are not ours to judge
    for owner in (None, "", "host", f"{socket.gethostname()}:x", f"{socket.gethostname()}:²"):
        assert not alive(owner)

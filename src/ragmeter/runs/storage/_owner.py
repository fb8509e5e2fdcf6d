"""Which process owns a run: ``host:pid@start``, so a dead server's runs are told from live
ones even when the system has given its pid to another process since."""

from __future__ import annotations

import os
import socket

__all__ = ["alive", "process_owner", "process_start", "this_process"]


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (field 22 of Linux's
    ``/proc/<pid>/stat``); None where the system does not say or the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # the name may hold spaces and parentheses
    if len(fields) < 20 or not fields[19].isdigit():
        return None
    return fields[19].decode()  # fields[0] is field 3 (state), so field 22 is fields[19]


def process_owner(pid: int) -> str:
    """``host:pid@start`` naming process ``pid`` (``host:pid`` where the start is unknown)."""
    start = process_start(pid)
    owner = f"{socket.gethostname()}:{pid}"
    return owner if start is None else f"{owner}@{start}"


_mine: tuple[int, str] | None = None


def this_process() -> str:
    """The owner string of this process (read from the system once per process: every
    commit of a run's results checks it)."""
    global _mine
    pid = os.getpid()
    if _mine is None or _mine[0] != pid:  # a forked child is another process
        _mine = (pid, process_owner(pid))
    return _mine[1]


def alive(owner: str | None) -> bool:
    """Whether ``host:pid@start`` names a running process: the pid exists and, where the start
    time is known, started then (a reused pid is another process). Another host's counts as
    alive; this process's own runs (it is starting up) as dead."""
    head, _, start = (owner or "").partition("@")
    host, _, pid = head.rpartition(":")
    if not pid.isascii() or not pid.isdigit():
        return False
    if host != socket.gethostname():
        return True
    if int(pid) == os.getpid():
        return False  # this process is starting up: nothing of its own runs yet
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive, if it is the one that started then
    actual = process_start(int(pid))
    return not start or actual is None or actual == start

"""The cycle collector paused during bulk writes: off inside, back as it was after the last
thread inside leaves, and never turned on in a process that turned it off itself."""

from __future__ import annotations

import gc
import threading

from ragmeter.store.bulk import collector_paused


def test_the_collector_is_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_stays_off_until_the_last_thread_leaves() -> None:
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with collector_paused():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(10)
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread is still writing
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_process_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_inside_gives_the_collector_back() -> None:
    try:
        with collector_paused():
            raise ValueError("a write failed")
    except ValueError:
        pass
    assert gc.isenabled()

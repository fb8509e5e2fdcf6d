"""The judge's HTTP transport import, shared by every run of a process, survives a cancelled
waiter."""

from __future__ import annotations

import subprocess
import sys

# in a fresh interpreter, so that the import is really under way when the waiter is cancelled
SCRIPT = """
import asyncio, sys
from ragmeter.judge.engine import import_transport

async def main():
    waiter = asyncio.ensure_future(asyncio.wrap_future(import_transport()))
    await asyncio.sleep(0)
    assert "ragmeter.judge.chat" not in sys.modules or not import_transport().done()
    waiter.cancel()  # a run cancelled while the transport loads
    try:
        await waiter
    except asyncio.CancelledError:
        pass
    module = await asyncio.wrap_future(import_transport())  # the next run
    print(module.__name__, import_transport().cancelled())

asyncio.run(main())
"""


def test_a_run_cancelled_while_the_transport_loads_leaves_it_loading_for_the_next() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ragmeter.judge.chat", "False"]

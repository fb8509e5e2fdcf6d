"""The local model in a helper process of its own (``ragmeter eval`` with a judge): encoding
holds the GIL for much of its work, so in a thread it slows the event loop that serves the
judge's requests; in its own process it runs on another core beside them. Same model, same
vectors, same name as ``LocalEmbedder``.

The helper (``python -m ragmeter.embeddings.process``) reads one JSON list of texts per line
on stdin and answers each with ``rows dim`` and the float32 vectors, or ``error <json>``. It
ends when its stdin closes (also when this process dies) and ignores Ctrl-C, which its parent
handles."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ragmeter.embeddings.local import DEFAULT_MODEL_NAME, LocalEmbedder
from ragmeter.errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ProcessEmbedder"]

#: how long ``close`` waits for the helper to end before killing it
_CLOSE_WAIT_S = 5.0


class ProcessEmbedder:
    """``LocalEmbedder``'s model run by a helper process, started at once (it loads while the
    caller goes on). Calls from any thread or loop are answered one at a time; ``close`` (or
    ``aclose``) ends the helper."""

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, path]))}
        # what the helper says if it crashes; open as long as the helper lives
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._helper = subprocess.Popen(
                [sys.executable, "-m", "ragmeter.embeddings.process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                env=env,
            )
        except BaseException:
            self._errors.close()
            raise
        self._lock = threading.Lock()
        # one thread of its own talks to the helper: calls wait in its queue, not in the
        # event loop's default executor (which the run's store commits use)
        self._io = ThreadPoolExecutor(1, thread_name_prefix="ragmeter-embed")

    @property
    def name(self) -> str:
        return DEFAULT_MODEL_NAME

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._io, self.embed_sync, list(texts))

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors from the helper (EmbeddingError when it failed or is gone)."""
        import numpy as np

        helper = self._helper
        assert helper.stdin is not None
        assert helper.stdout is not None
        with self._lock:
            try:
                helper.stdin.write(json.dumps(list(texts)).encode() + b"\n")
                helper.stdin.flush()
                header = helper.stdout.readline().decode()
                if header.startswith("error "):
                    raise EmbeddingError(json.loads(header[6:]))
                rows, dim = (int(n) for n in header.split())
                data = _read_exactly(helper.stdout, rows * dim * 4)
            except (OSError, ValueError) as exc:
                raise EmbeddingError(self._gone(exc)) from None
        return np.frombuffer(data, dtype=np.float32).reshape(rows, dim)

    def _gone(self, exc: Exception) -> str:
        """Why the helper stopped answering: the last line of its error output."""
        reason = str(exc) or type(exc).__name__
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._helper.wait(1.0)
        if self._helper.returncode is not None:
            self._errors.seek(0)
            lines = self._errors.read().decode(errors="replace").strip().splitlines()
            reason = lines[-1] if lines else f"exit code {self._helper.returncode}"
        return f"the local embedding process stopped: {reason}"

    def close(self) -> None:
        """End the helper (its stdin closed, then killed if it does not end)."""
        helper = self._helper
        with self._lock:  # after a call under way
            for stream in (helper.stdin, helper.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):  # a helper gone: nothing to flush to
                        stream.close()
        try:
            helper.wait(_CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()
        self._io.shutdown(wait=True, cancel_futures=True)
        self._errors.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise ValueError(f"the answer ended after {len(data)} of {size} bytes")
    return data


def _serve(embedder: LocalEmbedder, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """Answer each line of texts until stdin closes."""
    for line in stdin:
        try:
            texts = json.loads(line)
            vectors = embedder.embed_sync(texts).astype("float32", copy=False)
        except Exception as exc:  # the caller gets the reason; the helper goes on
            stdout.write(b"error " + json.dumps(str(exc) or type(exc).__name__).encode() + b"\n")
        else:
            rows, dim = vectors.shape
            stdout.write(f"{rows} {dim}\n".encode() + vectors.tobytes())
        stdout.flush()


def main() -> None:
    """The helper: load the model at once (the parent goes on meanwhile), then serve."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and closes us
    from ragmeter.embeddings.local import load_model

    embedder = LocalEmbedder(workers=1)  # one core: the parent and the judge have the others
    with contextlib.suppress(Exception):  # a model that cannot load: each call says why
        load_model(embedder.path)
    _serve(embedder, sys.stdin.buffer, sys.stdout.buffer)
    # stdin closed: nothing is left to keep or flush, and tearing the model's runtime down
    # (torch and its modules) would hold the parent's close for ~0.1-0.2 s
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

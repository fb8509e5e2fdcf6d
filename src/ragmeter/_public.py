"""What of a message a caller of the service may read, and how an internal failure is told.

A message loses the ``user:password@`` of every URL and names the server's data folder
``$RAGMETER_HOME`` instead of its path. An internal failure is logged in full under a short
reference, and the caller gets only that reference.
"""

from __future__ import annotations

import logging
import secrets
import traceback

from ragmeter.config import ragmeter_home
from ragmeter.errors import redact

__all__ = ["internal_reference", "public_text"]

log = logging.getLogger("ragmeter")


def public_text(message: str) -> str:
    """``message`` without URL credentials and with the data folder as ``$RAGMETER_HOME``."""
    return redact(message).replace(str(ragmeter_home()), "$RAGMETER_HOME")


def internal_reference(exc: BaseException, context: str = "") -> str:
    """Log ``exc`` with its traceback under a new reference; the public message naming it."""
    reference = secrets.token_hex(4)
    details = redact("".join(traceback.format_exception(exc))).rstrip()
    log.error("internal error%s, reference %s:\n%s", context, reference, details)
    return f"internal error; reference {reference}, see the server log"

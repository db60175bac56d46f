"""One-line notices for the person, said from below the terminal layers.

An MCP server that did not start, a provider's retry, a conversation that could not be saved, a
hook that failed: the layers under ``cli/``, ``repl/`` and ``serve/`` say such a line with
:func:`notice` and never print. The terminal layer that owns the process chooses where the
lines go (:func:`notices_to`): ``butler``'s entry sends them to stderr, so ``--json`` and
``--output stream-json`` keep stdout to JSON alone. With no destination set (the butler used
as a library) a notice goes nowhere.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

#: Where a notice goes: one line, without the ``butler:`` prefix.
Notice = Callable[[str], None]

_destination: list[Notice] = []


def notice(message: str) -> None:
    """Tell the person ``message`` (one line) where the terminal layer chose. Never raises:
    a notice is never worth a task."""
    if not _destination:
        return
    with contextlib.suppress(Exception):  # a closed stderr, a console gone: the task goes on
        _destination[-1](message)


def notices_to(destination: Notice | None) -> None:
    """Send every later notice to ``destination`` (None: nowhere). Set once, by the layer
    that owns the process; process-wide, so the chat's build thread and the server's
    scheduler thread are heard too."""
    _destination[:] = [destination] if destination is not None else []

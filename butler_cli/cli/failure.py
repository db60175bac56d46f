"""What the butler says about itself when a command fails or a layer below has a notice: one
line on stderr, masked and neutralised (it may quote a server's, a hook's or a model's words),
and with ``--json`` the same error as one JSON object on stdout.

Loaded only when there is something to say (the entry point's one lazy edge for it), so a
command that succeeds quietly — `--help`, `pending` — never loads the masking and the events.
"""

from __future__ import annotations

import sys
import time

from butler_cli.app.run.events import error_event, json_line
from butler_cli.app.run.masking import masked
from butler_cli.core.errors import ButlerError
from butler_cli.ui.text import visible


def say(line: str) -> None:
    """A notice (:mod:`butler_cli.core.notices`) as one line on stderr, so stdout keeps to
    answers and JSON."""
    sys.stderr.write(f"butler: {visible(line)}\n")
    sys.stderr.flush()


def butler_error(exc: ButlerError, as_json: bool, started: float) -> None:
    """A ButlerError: its JSON object when JSON was asked, then its line on stderr."""
    if as_json:
        json_error(exc.code, masked(exc.message), int(exc.exit_code), started)
    print(f"butler: {visible(exc.message)}", file=sys.stderr)
    for line in exc.directions:
        print(visible(line), file=sys.stderr)


def storage_error(exc: OSError) -> None:
    """A full disk or a permission met outside the careful writers: still one line."""
    where = f" ({exc.filename})" if exc.filename else ""
    print(f"butler: {visible(f'{exc.strerror or exc}{where}')}", file=sys.stderr)


def json_error(code: str, message: str, exit_code: int, started: float) -> None:
    """The error object of docs/output.md on stdout, so a script reading it is never left
    empty."""
    elapsed = (time.perf_counter() - started) * 1000
    sys.stdout.write(json_line(error_event(code, message, exit_code, None, elapsed)))
    sys.stdout.flush()

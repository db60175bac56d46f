"""The `butler` entry point, and the one place a ButlerError is turned into a line and a code.

Plain `butler`, `butler chat` and `butler demo`, with the options :mod:`.fast_chat` reads,
start the chat directly: typer is not imported on that path, so the first prompt appears
sooner. Everything else (a line it leaves, every error in one) goes through the typer app
(:mod:`butler_cli.cli.main`). Both are lazy edges named in
tests/test_imports.py, as is :mod:`butler_cli.cli.failure`, which words a failure.
"""

from __future__ import annotations

import errno
import gc
import os
import sys
import time

from butler_cli import __version__
from butler_cli.cli.fast_chat import FastStart, read
from butler_cli.core.errors import ButlerError, ExitCode
from butler_cli.core.notices import notices_to

_STARTED = time.perf_counter()
#: Set by a shell's completion script: the request goes to the typer app, never the chat.
COMPLETE_VAR = "_BUTLER_COMPLETE"

_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def main() -> None:
    notices_to(say)  # what the layers below have to tell the person: stderr, never stdout
    argv = tuple(sys.argv[1:])
    as_json = _wants_json(argv)
    try:
        if argv in (("--version",), ("-V",)):
            print(f"butler {__version__}")
        elif COMPLETE_VAR not in os.environ and (start := read(argv)) is not None:
            _chat(start)
        else:
            from butler_cli.cli.main import run_app

            run_app(as_json, _STARTED)
    except ButlerError as exc:
        from butler_cli.cli.failure import butler_error

        butler_error(exc, as_json, _STARTED)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        print("butler: interrupted", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    except OSError as exc:
        if exc.errno not in _STORAGE_ERRNOS:
            raise
        from butler_cli.cli.failure import storage_error

        storage_error(exc)
        sys.exit(ExitCode.FAILED)


def say(line: str) -> None:
    """A notice from the layers below: :func:`butler_cli.cli.failure.say` words it."""
    from butler_cli.cli.failure import say as say_line

    say_line(line)


def _chat(start: FastStart) -> None:
    # No collection until the first prompt is drawn (the session turns it back on then): the
    # start makes many objects and frees few, so the collector's passes were wasted time.
    gc.disable()
    from butler_cli.repl.start import start_chat

    continuing = (start.continue_last or start.conversation is not None, start.conversation)
    start_chat(start.options or None, demo=start.demo, continuing=continuing)


def _wants_json(argv: tuple[str, ...]) -> bool:
    """Whether the command line asks for JSON (``--json``, ``--output json|stream-json``): then
    an error is also one JSON object on stdout, so a script reading it is never left empty."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return False
        if arg == "--json" or arg in ("--output=json", "--output=stream-json"):
            return True
        if arg == "--output" and argv[i + 1 : i + 2] in (("json",), ("stream-json",)):
            return True
    return False

"""The `butler` entry point, and the one place a ButlerError is turned into a line and a code.

Plain `butler`, `butler chat` and `butler demo` (without options) start the chat directly:
typer is not imported on that path, so the first prompt appears sooner. Everything else goes
through the typer app.
"""

from __future__ import annotations

import errno
import os
import sys
import time

_STARTED = time.perf_counter()
#: Set by a shell's completion script: the request goes to the typer app, never the chat.
COMPLETE_VAR = "_BUTLER_COMPLETE"

_FAST = {(): None, ("chat",): None, ("demo",): "demo"}
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def main() -> None:
    from butler_cli.core.errors import ButlerError, ExitCode
    from butler_cli.core.notices import notices_to

    notices_to(say)  # what the layers below have to tell the person: stderr, never stdout
    argv = tuple(sys.argv[1:])
    as_json = _wants_json(argv)
    try:
        if argv in (("--version",), ("-V",)):
            from butler_cli import __version__

            print(f"butler {__version__}")
        elif argv in _FAST and COMPLETE_VAR not in os.environ:
            _chat(_FAST[argv])
        elif as_json:
            _app_reporting_usage_as_json()
        else:
            from butler_cli.cli.main import app

            app()
    except ButlerError as exc:
        from butler_cli.app.run.masking import masked
        from butler_cli.ui.text import visible

        if as_json:
            _json_error(exc.code, masked(exc.message), int(exc.exit_code))
        print(f"butler: {visible(exc.message)}", file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        print("butler: interrupted", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    except OSError as exc:
        if exc.errno not in _STORAGE_ERRNOS:
            raise
        # A full disk or a permission met outside the careful writers: still one line.
        from butler_cli.ui.text import visible

        where = f" ({exc.filename})" if exc.filename else ""
        print(f"butler: {visible(f'{exc.strerror or exc}{where}')}", file=sys.stderr)
        sys.exit(ExitCode.FAILED)


def say(line: str) -> None:
    """A notice (:mod:`butler_cli.core.notices`) as one line on stderr, masked and neutralised
    as an error line is (it may quote a server's, a hook's or a model's words), so stdout
    keeps to answers and JSON."""
    from butler_cli.ui.text import visible

    sys.stderr.write(f"butler: {visible(line)}\n")
    sys.stderr.flush()


def _chat(kind: str | None) -> None:
    import gc

    # No collection until the first prompt is drawn (the session turns it back on then): the
    # start makes many objects and frees few, so the collector's passes were wasted time.
    gc.disable()
    from butler_cli.repl.start import DEMO_BANNER, demo_model, start_chat

    if kind == "demo":
        start_chat(demo_model(), banner=DEMO_BANNER)
    else:
        start_chat(None)


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


def _json_error(code: str, message: str, exit_code: int) -> None:
    from butler_cli.app.run.events import error_event, json_line

    elapsed = (time.perf_counter() - _STARTED) * 1000
    sys.stdout.write(json_line(error_event(code, message, exit_code, None, elapsed)))
    sys.stdout.flush()


def _app_reporting_usage_as_json() -> None:
    """The typer app, with click's own usage errors (an unknown option, a bad value) turned
    into the same JSON error object as the butler's."""
    import click

    from butler_cli.cli.main import app

    try:
        code = app(standalone_mode=False)
    except click.ClickException as exc:
        _json_error("usage", exc.format_message(), exc.exit_code)
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        from butler_cli.core.errors import ExitCode

        print("butler: aborted", file=sys.stderr)
        sys.exit(ExitCode.FAILED)
    sys.exit(code if isinstance(code, int) else 0)  # a command's own ExitCode, else OK

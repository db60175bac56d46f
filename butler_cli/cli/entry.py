"""The `butler` entry point, and the one place a ButlerError is turned into a line and a code.

Plain `butler`, `butler chat` and `butler demo` (without options) start the chat directly:
typer is not imported on that path, so the first prompt appears sooner. Everything else goes
through the typer app.
"""

from __future__ import annotations

import sys

_FAST = {(): None, ("chat",): None, ("demo",): "demo"}


def main() -> None:
    from butler_cli.core.errors import ButlerError

    try:
        argv = tuple(sys.argv[1:])
        if argv in _FAST:
            _chat(_FAST[argv])
        else:
            from butler_cli.cli.main import app

            app()
    except ButlerError as exc:
        print(f"butler: {exc.message}", file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        print("butler: interrupted", file=sys.stderr)
        sys.exit(130)


def _chat(kind: str | None) -> None:
    from butler_cli.repl.start import DEMO_BANNER, demo_model, start_chat

    if kind == "demo":
        start_chat(demo_model(), banner=DEMO_BANNER)
    else:
        start_chat(None)

"""The `butler` entry point, and the one place a ButlerError is turned into a line and a code.

Plain `butler`, `butler chat` and `butler demo` (without options) start the chat directly:
typer is not imported on that path, so the first prompt appears sooner. Everything else goes
through the typer app.
"""

from __future__ import annotations

import errno
import sys

_FAST = {(): None, ("chat",): None, ("demo",): "demo"}
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


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
        from butler_cli.tools.redact import mask_text
        from butler_cli.ui.text import visible

        print(f"butler: {visible(mask_text(exc.message))}", file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        print("butler: interrupted", file=sys.stderr)
        sys.exit(130)
    except OSError as exc:
        if exc.errno not in _STORAGE_ERRNOS:
            raise
        # A full disk or a permission met outside the careful writers: still one line.
        from butler_cli.ui.text import visible

        where = f" ({exc.filename})" if exc.filename else ""
        print(f"butler: {visible(f'{exc.strerror or exc}{where}')}", file=sys.stderr)
        sys.exit(1)


def _chat(kind: str | None) -> None:
    from butler_cli.repl.start import DEMO_BANNER, demo_model, start_chat

    if kind == "demo":
        start_chat(demo_model(), banner=DEMO_BANNER)
    else:
        start_chat(None)

"""Whether standard input may hold something piped or redirected in: asked before
:mod:`butler_cli.app.chat.attach` is imported, so a run with nothing attached never loads it."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO


def may_be_piped(stdin: BinaryIO | None) -> bool:
    """A pipe, a regular file or a socket: never a terminal (reading would wait for typing), a
    closed stream or a device such as ``/dev/null``."""
    if stdin is None:
        return False
    try:
        fd = stdin.fileno()
        if os.isatty(fd):
            return False
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)

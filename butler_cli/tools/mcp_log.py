"""An MCP server's stderr log, capped while it is written.

A stdio server's stderr is a pipe, never the log file itself: a thread copies what comes
through into ``mcp-logs/NAME.log`` up to :data:`LOG_CAP_BYTES` for one start, writes one line
saying the rest was dropped, and keeps draining (a server that goes on talking never blocks
on a full pipe). Without the cap a chatty server filled the home: 12 MB from two calls of a
real server within one session. A log past :data:`LOG_KEEP_BYTES` is moved aside
(``NAME.log.1``) at the next start, so one server keeps at most about three caps on disk.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TextIO

#: A server's log is moved aside (``NAME.log.1``) when it passes this size at a start.
LOG_KEEP_BYTES = 1 << 20
#: At most this much of a server's stderr is kept for one start; the rest is dropped.
LOG_CAP_BYTES = 1 << 20
_CHUNK = 65536


def open_capped_log(path: Path, header: str) -> TextIO:
    """A writable end to give a server as its stderr: ``header`` then what the server says,
    appended to ``path`` (never through a link) up to :data:`LOG_CAP_BYTES`. Closing it (and
    the server ending) ends the copying."""
    try:
        if path.stat().st_size > LOG_KEEP_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    except OSError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    os.write(fd, (header + "\n").encode("utf-8", "replace"))
    read_end, write_end = os.pipe()
    threading.Thread(target=_copy, args=(read_end, fd), name="butler-mcp-log", daemon=True).start()
    return os.fdopen(write_end, "w", encoding="utf-8", errors="replace")


def _copy(read_end: int, log: int) -> None:
    """Copy the pipe into the log up to the cap, then drain it to its end."""
    kept = 0
    try:
        while chunk := os.read(read_end, _CHUNK):
            room = LOG_CAP_BYTES - kept
            if room > 0:
                os.write(log, chunk[:room])
                kept += min(room, len(chunk))
                if kept >= LOG_CAP_BYTES:
                    note = f"\n[butler: log capped at {LOG_CAP_BYTES} bytes; the rest dropped]\n"
                    os.write(log, note.encode("ascii"))
    except OSError:
        pass
    finally:
        os.close(read_end)
        os.close(log)

"""Which boot of the machine this is: what tells a process kill from a power cut.

A write that is not fsynced is still exact for every reader while the machine runs: the
kernel keeps it, and a killed process (SIGKILL, an OOM kill, a crash) loses nothing of it.
Only a power cut or a kernel crash — a new boot — can lose it. So a decided park records the
boot it was decided in (``ParkState.boot``, written durably with the decision) and the round's
later writes are not fsynced: read in the same boot, the park is exact; read in another, any
call the decision let run and that has no result may have run, and is "outcome unknown"
(``store/journal.py``), never run again. Where the boot cannot be read (not Linux), there is
no such record and every write stays durable.
"""

from __future__ import annotations

import functools

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


@functools.cache
def boot_id() -> str | None:
    """This boot's id (Linux: a random UUID made at boot), or None where there is none."""
    try:
        with open(BOOT_ID_FILE, encoding="ascii") as fh:
            found = fh.read().strip()
    except OSError:
        return None
    return found or None

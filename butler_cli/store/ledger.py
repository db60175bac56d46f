"""The decided-park ledger: an append-only record of every park id that was decided.

A park file is not its own only record. A copy of a park put back from a backup (or by anyone
who can write the home) would otherwise be decided and run a second time. Before a decision is
written into the park, its id is appended here and fsynced; when the round finishes, a second
line says so. A pending park whose id is here, or any park whose round finished, is refused
(exit 5) whatever its file says. Lines hold ids, events and times: never arguments.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from butler_cli.core.errors import ParkError
from butler_cli.store.files import append_line, read_no_follow

LEDGER_FILE = "decided.jsonl"
LedgerEvent = Literal["decided", "resolved"]


class DecisionLedger:
    """``<home>/decided.jsonl``: one JSON line per decision and per finished round."""

    def __init__(self, home: Path) -> None:
        self.path = home / LEDGER_FILE

    def events_for(self, park_id: str) -> set[str]:
        """What the ledger holds for this park; unreadable → ParkError (fail closed)."""
        try:
            data = read_no_follow(self.path)
        except FileNotFoundError:
            return set()
        except OSError as exc:
            raise ParkError(
                f"the decided-park ledger {self.path} cannot be read ({exc.strerror or exc}); "
                "no park is decided until it can"
            ) from exc
        needle = f'"park":"{park_id}"'.encode()
        found: set[str] = set()
        for line in data.splitlines():
            if needle not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line from a crash: its id was never acted on
            if entry.get("park") == park_id and isinstance(entry.get("event"), str):
                found.add(entry["event"])
        return found

    def record(self, park_id: str, event: LedgerEvent, *, durable: bool = True) -> None:
        """Append one line and fsync it before returning (``durable``: a ``decided`` line
        must outlive any action; a ``resolved`` one follows the round's writes, which
        ``store/boot.py`` explains). A torn last line (a crash mid-append) is closed off
        first, or this one would be unreadable."""
        entry = {
            "park": park_id,
            "event": event,
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        }
        line = json.dumps(entry, separators=(",", ":"))
        append_line(self.path, line, durable=durable, what="the decided-park ledger")

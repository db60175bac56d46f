"""The append-only audit log: one JSON line per verdict and per human decision. No secrets."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from butler_cli.core.gate import compact_json
from butler_cli.store.files import append_line

AUDIT_FILE = "audit.jsonl"


def args_digest(args: dict[str, Any]) -> str:
    """SHA-256 of the canonical (sorted, compact) JSON of a call's arguments."""
    import hashlib  # here: a command that judges no call needs no OpenSSL

    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class AuditLog:
    def __init__(self, home: Path) -> None:
        self.path = home / AUDIT_FILE

    def _write(
        self, event: str, park: str | None, tool: str, args: dict[str, Any], **fields: object
    ) -> None:
        """One line: time, event, park, tool, the arguments' hash (never their values), and
        the event's own fields."""
        line = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "event": event,
            "park": park,
            "tool": tool,
            "args_sha256": args_digest(args),
            **fields,
        }
        append_line(self.path, compact_json(line))

    def record(
        self,
        event: str,
        *,
        park: str | None,
        tool: str,
        args: dict[str, Any],
        outcome: str,
        text: str | None = None,
    ) -> None:
        """A verdict (``verdict`` + ``reason``) or a person's decision (``decision`` + ``note``)."""
        fields = {event: outcome, "reason" if event == "verdict" else "note": text}
        self._write(event, park, tool, args, **fields)

    def record_judged(
        self,
        *,
        park: str | None,
        tool: str,
        args: dict[str, Any],
        verdict: str | None,
        reason: str | None,
        outcome: str,
    ) -> None:
        """A governed call of a resumed park, judged again: the verdict that held and what
        came of it (ran, refused, declined, needs its own approval, …)."""
        self._write("resume", park, tool, args, verdict=verdict, reason=reason, outcome=outcome)

    def record_grant(
        self, *, number: int, tool: str, scope: str, args: dict[str, Any], kept: bool = False
    ) -> None:
        """A person granted an approval for the rest of a chat session (``kept``: kept for a
        folder, ``butler grants``). ``scope`` is "exact" or the argument names a widened grant
        covers — never their values."""
        if kept:
            self._write("kept", None, tool, args, kept=number, scope=scope)
        else:
            self._write("grant", None, tool, args, grant=number, scope=scope)

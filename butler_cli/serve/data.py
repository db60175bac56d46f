"""What the inbox shows, read from the home: parks waiting (with every argument), recent
outcomes, schedules, and one park's audit trail. Pure reading; nothing here decides.

Every model-chosen value leaves here already neutralised with the terminal's neutraliser
(``ui.text.visible``) and masked (``redact``); the page HTML-escapes it on top.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler_cli.core.errors import ParkError, ParkNotFound
from butler_cli.schedule.store import Job, Run, ScheduleStore
from butler_cli.store.audit import AUDIT_FILE
from butler_cli.store.ledger import DecisionLedger
from butler_cli.store.parks import ID_ALPHABET, ID_LENGTH, ParkStore
from butler_cli.tools.redact import redact
from butler_cli.ui.text import pretty_json, visible

_ALPHABET = set(ID_ALPHABET)


@dataclass(frozen=True)
class Waiting:
    """One park waiting for a decision, as a person must see it before deciding."""

    id: str
    created_at: str
    task: str
    tool: str
    title: str
    reason: str
    arguments: str  # pretty JSON, masked and neutralised, whole
    #: "Always allow here" is offered (the policy does not ask about this call every time)
    keepable: bool = False


@dataclass(frozen=True)
class Problem:
    path: str
    problem: str


def _active_ids(store: ParkStore) -> list[str]:
    folder = store.dir
    if not folder.is_dir():
        return []
    with os.scandir(folder) as it:
        names = [e.name[:-5] for e in it if e.name.endswith(".json")]
    return sorted(n for n in names if len(n) == ID_LENGTH and set(n) <= _ALPHABET)


#: A park file read once is not read again while its inode, size and time stay the same (a
#: park file is replaced whole, by a rename, on every change): the page refreshes cheaply.
_seen: dict[tuple[str, int, int, int], Waiting | None] = {}


def waiting(home: Path) -> tuple[list[Waiting], list[Problem]]:
    """Pending parks, newest first, and the park files that could not be read (named)."""
    store = ParkStore(home)
    rows: list[Waiting] = []
    problems: list[Problem] = []
    for pid in _active_ids(store):
        path = store.active_path(pid)
        try:
            st = path.lstat()
        except OSError:
            continue  # decided and moved away meanwhile
        key = (str(path), st.st_ino, st.st_mtime_ns, st.st_size)
        if key in _seen:
            row = _seen[key]
        else:
            try:
                row = _read(store, pid)
            except (ParkError, ParkNotFound) as exc:
                problems.append(Problem(str(path), exc.message))
                continue
            except (KeyError, TypeError) as exc:
                problems.append(Problem(str(path), f"corrupt (missing {exc})"))
                continue
            if len(_seen) > 20_000:
                _seen.clear()
            _seen[key] = row
        if row is not None:
            rows.append(row)
    rows.sort(key=lambda w: (w.created_at, w.id), reverse=True)
    return rows, problems


def _read(store: ParkStore, pid: str) -> Waiting | None:
    """The park as the page shows it (verified, masked, neutralised); None unless pending."""
    raw = store.read_raw(pid)
    if raw["status"] != "pending":
        return None
    asked = raw.get("approvals") or [raw["approval"]]
    args_of = {call["id"]: dict(call["input"]) for call in raw["calls"]}
    first = asked[0]
    if len(asked) == 1:
        title, tool, reason = first["title"], first["tool"], first["reason"]
        arguments = pretty_json(redact(args_of.get(first["call_id"], {})))
    else:  # a round decided whole: every action it waits on is on the card (issue 22)
        title = f"{len(asked)} actions: " + " · ".join(a["title"] for a in asked)
        tool = ", ".join(a["tool"] for a in asked)
        reason = " · ".join(a["reason"] for a in asked)
        each = [{"tool": a["tool"], "arguments": args_of.get(a["call_id"], {})} for a in asked]
        arguments = pretty_json(redact(each))
    return Waiting(
        id=pid,
        created_at=raw["created_at"],
        task=visible(raw["context"]["task"]),
        tool=visible(tool),
        title=visible(title),
        reason=visible(reason),
        arguments=arguments,
        keepable=len(asked) == 1 and _keepable(raw, first["call_id"]),
    )


def _keepable(raw: dict[str, Any], call_id: str) -> bool:
    verdict = raw.get("verdicts", {}).get(call_id)
    return (
        isinstance(verdict, dict)
        and verdict.get("decision") == "approve"
        and verdict.get("ask_always") is not True
    )


def signature(home: Path) -> str:
    """Changes whenever anything the page shows may have changed: cheap (names and times)."""
    parts: list[str] = []
    folder = home / "parks"
    if folder.is_dir():
        with os.scandir(folder) as it:
            parts.extend(f"{e.name}:{e.stat().st_mtime_ns}" for e in it if e.name.endswith(".json"))
    for name in ("schedule.db", "schedule.db-wal"):
        try:
            st = (home / name).stat()
            parts.append(f"{name}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            pass
    return str(hash("|".join(sorted(parts))) & 0xFFFFFFFFFFFF)


def outcomes(home: Path, limit: int = 20) -> list[Run]:
    return ScheduleStore(home).runs(limit)


def schedules(home: Path) -> list[tuple[Job, Run | None]]:
    store = ScheduleStore(home)
    last = store.last_runs()
    return [(job, last.get(job.id)) for job in store.jobs()]


def audit_trail(home: Path, park_id: str) -> list[dict[str, Any]]:
    """Every audit line about this park, oldest first, and the ledger's events for it."""
    lines: list[dict[str, Any]] = []
    try:
        data = (home / AUDIT_FILE).read_bytes()
    except OSError:
        data = b""
    needle = f'"park":"{park_id}"'.encode()
    for line in data.splitlines():
        if needle in line:
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    return lines


def ledger_events(home: Path, park_id: str) -> list[str]:
    try:
        return sorted(DecisionLedger(home).events_for(park_id))
    except ParkError as exc:
        return [exc.message]

"""Decisions from the page, through the one door every surface takes.

:meth:`Decider._decide` is the only place the inbox reaches ``app/parks/door.decide``, which
holds the park (its lock, one verified read, one ledger check), records the decision on each
call and what the person chose to keep, and continues the task on a session the server keeps
for the park's recorded context (``app/session.Sessions``), in the server's own home. The
decision and the continuation run on a thread of their own; the page is answered once the
outcome is known or, for a long task, after a short wait, and the outcome joins the page when
the task ends: kept through ``app.views.inbox.record_outcome`` (``inbox-outcomes.jsonl``), in
the same step that takes the park off the list of what is still running, so a page never
lists it twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler_cli.app.parks.decisions import load_park
from butler_cli.app.parks.door import Answer, decide
from butler_cli.app.run.report import TaskReport
from butler_cli.app.run.session import Sessions
from butler_cli.app.views.inbox import now_stamp, record_outcome
from butler_cli.core.errors import DECIDED, TAMPERED, ButlerError, ParkError
from butler_cli.core.notices import notice
from butler_cli.core.park import Decision

#: How long a request waits for the task to end before answering "continuing".
ANSWER_WITHIN = 3.0


def each_call(fields: Iterable[tuple[str, Any]], note: str | None) -> dict[str, Decision]:
    """The card's per-call marks (``call:<id>`` = approve | deny) as decisions; the note
    goes with each denial. Anything else marked is a denial too (fail closed)."""
    marks = {}
    for name, value in fields:
        if name.startswith("call:"):
            approved = value == "approve"
            marks[name[5:]] = Decision(approved=approved, note=None if approved else note)
    return marks


@dataclass
class Told:
    """What the page is told of a decision: whether it was taken, in one line."""

    ok: bool
    message: str
    status: str | None = None  # the task's outcome when it is known


class Decider:
    """Runs decisions on threads, records each outcome, and knows what is still running."""

    def __init__(
        self,
        home: Path,
        sessions: Sessions | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        #: The sessions decisions run on (the server's, shared with its scheduler).
        self.sessions = sessions if sessions is not None else Sessions(home)
        #: The server's log: each decision's outcome gets a line there, as a schedule's run.
        self.say = say
        self.home = home
        self._lock = threading.Lock()
        self._running: dict[threading.Thread, str] = {}

    def running(self) -> list[str]:
        """Parks whose decision is being carried out here now."""
        with self._lock:
            return sorted(set(self._running.values()))

    def submit(self, park_id: str, answer: Answer) -> Told:
        """Start the decision; wait a little for its outcome; say what happened."""
        said: list[Told] = []
        finished = threading.Event()

        def work() -> None:
            ended: _Ended | None = None
            try:
                told, ended = self._decide(park_id, answer)
                said.append(told)
                if self.say is not None:
                    self.say(f"decision: {told.message}")
            finally:
                with self._lock:  # kept and no longer running in one step (see the module)
                    if ended is not None:
                        self._record(ended)
                    self._running.pop(threading.current_thread(), None)
                finished.set()

        thread = threading.Thread(target=work, name=f"decide-{park_id}")
        with self._lock:
            self._running[thread] = park_id
        thread.start()
        if finished.wait(ANSWER_WITHIN) and said:
            return said[0]
        word = "decided" if answer.each else "approved" if answer.approved else "denied"
        return Told(
            True,
            f"park {park_id} {word}; the task continues here and its outcome "
            "will appear under Recent outcomes",
        )

    def _decide(self, park_id: str, answer: Answer) -> tuple[Told, _Ended | None]:
        """Decide and continue: what to tell the page, and what the task came to (to be kept
        by the caller; none when nothing was decided)."""
        started = now_stamp()
        try:
            decided = decide(park_id, answer, sessions=self.sessions)
        except ParkError as exc:
            return Told(False, _refusal(park_id, exc, self.sessions.home)), None
        except ButlerError as exc:
            return Told(False, exc.message), None
        except Exception as exc:  # the server stays up; the park keeps its recorded state
            failed = _Ended(park_id, "failed", started, error=f"{type(exc).__name__}: {exc}")
            return Told(False, f"park {park_id}: the task failed: {exc}"), failed
        report = decided.report
        ended = _Ended(park_id, report.status, started, report)
        word = (
            _marked(answer.each)
            if answer.each
            else "approved"
            if answer.approved
            else "denied"
            if answer.approved is False
            else "recovered"
        )
        what = {
            "done": "is done",
            "parked": f"parked again ({report.park_id})",
            "limit": "stopped at the round limit",
        }.get(report.status, f"failed: {report.error}")
        kept = "".join(
            f"; kept approval {k.number}: {k.grant.describe()} in {k.folder}" for k in decided.kept
        )
        kept += "".join(f"; not kept — {why}" for why in decided.not_kept)
        told = f"park {park_id} {word}; the task {what}{kept}"
        return Told(True, told, report.status), ended

    def _record(self, end: _Ended) -> None:
        """Keep what the decision came to; a store that cannot take it is said in one line
        (the decision and its task stand, and the server goes on)."""
        report = end.report
        try:
            record_outcome(
                self.home,
                end.park_id,
                end.status,
                task=report.task if report is not None else None,
                started_at=end.started_at,
                next_park=report.park_id if report is not None else None,
                text=report.text if report is not None else "",
                error=report.error if report is not None else end.error,
            )
        except ButlerError as exc:
            notice(f"park {end.park_id} {end.status}, but its outcome was not kept: {exc.message}")

    def join(self) -> None:
        """Wait for every decision in flight to finish (or park): nothing is left half-done."""
        while True:
            with self._lock:
                threads = list(self._running)
            if not threads:
                return
            for t in threads:
                t.join()


@dataclass(frozen=True)
class _Ended:
    """What a decision's task came to, to be kept."""

    park_id: str
    status: str
    started_at: str
    report: TaskReport | None = None
    error: str | None = None


def _marked(each: Mapping[str, Decision]) -> str:
    """What a person decided call by call, in a few words."""
    yes = sum(1 for d in each.values() if d.approved)
    return f"decided ({yes} approved, {len(each) - yes} denied as marked)"


def _refusal(park_id: str, exc: ParkError, home: Path) -> str:
    """Why the park was not decided here, in the words its error code calls for: "already
    decided" only when someone did decide it; a tampered or unreadable file ran nothing."""
    if exc.kind == DECIDED:
        return _already(park_id, exc.message, home)
    if exc.kind == TAMPERED:
        return f"park {park_id}: tampered, nothing ran — {exc.message}; the file is left as it is"
    return f"park {park_id} cannot be decided, nothing ran — {exc.message}"


def _already(park_id: str, why: str, home: Path) -> str:
    """A clear "already decided": what was decided and when, if the park says; else why not
    (read from the server's own home, whatever the environment says)."""
    try:
        state = load_park(park_id, home)
    except ButlerError:
        return f"already decided — {why}"
    if state.decision is None or state.status == "pending":
        return f"already decided — {why}"
    word = "approved" if state.decision.approved else "denied"
    where = "and finished" if state.status == "resolved" else "and is being carried out"
    return (
        f"already decided — park {state.id} was {word} at {state.decided_at} {where}; "
        "it never runs twice"
    )

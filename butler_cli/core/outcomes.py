"""What a call that does not run is answered, the message that carries a round's results, and
the :class:`Journal` a resumed round records its progress in (spec L5, L7, R2, X2).

Light on purpose: the loop and the round runner need these on every round, and a round that
never parks must not load the park's pydantic models (``core/park.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from butler_cli.core.messages import Message, ToolResultBlock

REFUSED_PREFIX = "Refused (not run)"
NOT_RUN_PREFIX = "Not executed —"
NO_DECISION_NOTE = "no decision recorded — failing closed"
OUTCOME_UNKNOWN = (
    "Outcome unknown: the process stopped while this action was running; it was not run again."
)
#: What an approved action the person interrupted (Ctrl-C, SIGINT) is answered: its park is
#: finished, never continued (a process that *died* is recovered: OUTCOME_UNKNOWN).
STOPPED_BY_YOU = "Stopped by you; it may have partly run. The task was not continued."
#: A call of an interrupted round that had not started.
STOPPED_BEFORE = f"{NOT_RUN_PREFIX} the person stopped the round before it ran."
NEEDS_OWN_APPROVAL = (
    f"{NOT_RUN_PREFIX} this action needs its own approval; ask again so it can be reviewed."
)
NO_APPROVAL_ON_RECORD = f"{NOT_RUN_PREFIX} no approval on record (fail-closed)."


def refused_message(reason: str) -> str:
    return f"{REFUSED_PREFIX}: {reason.rstrip('.')}."


def declined_message(note: str | None) -> str:
    suffix = f": {note}" if note else ""
    return f"{NOT_RUN_PREFIX} you declined this action (fail-closed){suffix}."


class Journal(Protocol):
    """Durable progress of a resumed round: what started, what finished (X2)."""

    def result_for(self, call_id: str) -> ToolResultBlock | None: ...

    def was_started(self, call_id: str) -> bool: ...

    def mark_started(self, call_id: str) -> None: ...

    def record_result(self, result: ToolResultBlock) -> None: ...

    def resolved(self) -> None:
        """Every call has its result: the park is finished and never runs again."""


def results_message(results: Sequence[ToolResultBlock]) -> Message:
    return Message(role="user", content=list(results))

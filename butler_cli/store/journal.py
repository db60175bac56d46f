"""A resumed round's journal, kept in its park file (X2): what started and what finished, so
nothing runs twice; and the round's end (resolved, or interrupted by the person).

Apart from :mod:`butler_cli.store.parks` so that `pending`, which reads parks, loads neither
the messages nor the ledger: only a resume does (the LAZY entry in tests/test_imports.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from butler_cli.core.messages import ToolResultBlock, error_result
from butler_cli.core.outcomes import STOPPED_BEFORE, STOPPED_BY_YOU
from butler_cli.store.faults import crash_point
from butler_cli.store.ledger import DecisionLedger

if TYPE_CHECKING:
    from butler_cli.core.park import ParkState
    from butler_cli.store.parks import ParkStore


class ParkJournal:
    """The exactly-once record of a resumed round, kept in the park file itself (X2)."""

    def __init__(self, store: ParkStore, state: ParkState) -> None:
        self._store = store
        self.state = state

    def result_for(self, call_id: str) -> ToolResultBlock | None:
        return self.state.results.get(call_id)

    def was_started(self, call_id: str) -> bool:
        return call_id in self.state.started

    def mark_started(self, call_id: str) -> None:
        self.state.started.append(call_id)
        self._store.save(self.state)
        crash_point("action-started")

    def record_result(self, result: ToolResultBlock) -> None:
        if result.tool_use_id in self.state.started:
            crash_point("action-ran")
        self.state.results[result.tool_use_id] = result
        self._store.save(self.state)

    def interrupted(self) -> list[str]:
        """The person stopped the round (Ctrl-C, SIGINT): every call without a result is
        answered as stopped, the park is marked interrupted and finished (ledger, done/), so
        nothing — a later resume, serve's recovery — continues it. The tools of the calls
        that were running, which "may have partly run"."""
        running: list[str] = []
        for call in self.state.calls:
            if call.id in self.state.results:
                continue
            if call.id in self.state.started:
                running.append(call.name)
                result = error_result(call.id, STOPPED_BY_YOU, "unknown")
            else:
                result = error_result(call.id, STOPPED_BEFORE, "not_run")
            self.state.results[call.id] = result
        self.state.interrupted = True
        self.resolved()
        return running

    def resolved(self) -> None:
        self.state.status = "resolved"
        self._store.save(self.state)
        DecisionLedger(self._store.home).record(self.state.id, "resolved")
        crash_point("round-resolved")
        self._store.retire(self.state.id)

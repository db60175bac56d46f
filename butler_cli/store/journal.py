"""A resumed round's journal, kept in its park file (X2): what started and what finished, so
nothing runs twice; and the round's end (resolved, or interrupted by the person).

Apart from :mod:`butler_cli.store.parks` so that `pending`, which reads parks, loads neither
the messages nor the ledger: only a resume does (the LAZY entry in tests/test_imports.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from butler_cli.core.messages import ToolResultBlock, error_result
from butler_cli.core.outcomes import STOPPED_BEFORE, STOPPED_BY_YOU
from butler_cli.store.boot import boot_id
from butler_cli.store.faults import crash_point
from butler_cli.store.ledger import DecisionLedger

if TYPE_CHECKING:
    from butler_cli.core.park import ParkState
    from butler_cli.store.parks import ParkStore


class ParkJournal:
    """The exactly-once record of a resumed round, kept in the park file itself (X2).

    The decision was written durably with the boot it was made in (``ParkState.boot``); the
    journal's own writes — a call started, a result, the round resolved, the park retired —
    are not fsynced (``store/boot.py``): exact while the machine runs, and read after another
    boot, every call the decision let run that has no result counts as started ("outcome
    unknown"), never run again. A park without a boot (older, or not Linux) is written
    durably at every step, as before."""

    def __init__(self, store: ParkStore, state: ParkState) -> None:
        self._store = store
        self.state = state
        #: Whether this round's writes are fsynced: only where its decision named no boot.
        self._durable = state.boot is None
        #: Read in another boot than the decision's: writes after the decision may be lost.
        self._rebooted = state.boot is not None and state.boot != boot_id()

    def result_for(self, call_id: str) -> ToolResultBlock | None:
        return self.state.results.get(call_id)

    def was_started(self, call_id: str) -> bool:
        if call_id in self.state.started:
            return True
        return self._rebooted and not self._denied(call_id)

    def _denied(self, call_id: str) -> bool:
        """An asked call the person denied: it never runs, whatever was lost."""
        if not any(a.call_id == call_id for a in self.state.approvals):
            return False
        decision = self.state.decided_calls().get(call_id)
        return decision is not None and not decision.approved

    def mark_started(self, call_id: str) -> None:
        self.state.started.append(call_id)
        self._store.save(self.state, durable=self._durable)
        crash_point("action-started")

    def record_result(self, result: ToolResultBlock) -> None:
        if result.tool_use_id in self.state.started:
            crash_point("action-ran")
        self.state.results[result.tool_use_id] = result
        self._store.save(self.state, durable=self._durable)

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
        self._durable = True  # stopped by the person: never continued, even after a power cut
        self.resolved()
        return running

    def resolved(self) -> None:
        self.state.status = "resolved"
        self._store.save(self.state, durable=self._durable)
        # after the park's write: a ledger line never says more than the park file does
        DecisionLedger(self._store.home).record(self.state.id, "resolved", durable=self._durable)
        crash_point("round-resolved")
        self._store.retire(self.state.id)
        crash_point("park-retired")

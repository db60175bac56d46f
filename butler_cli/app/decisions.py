"""Recording a person's decision on a park: exactly once, under its lock, audited.

One step of resuming (the other is continuing the task, on a butler: ``Butler.resume``). The
decided-park ledger is checked first, so a park file put back is refused whatever it says.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from butler_cli.core.errors import DECIDED, ParkError
from butler_cli.store.audit import AuditLog
from butler_cli.store.faults import crash_point
from butler_cli.store.files import butler_home
from butler_cli.store.ledger import DecisionLedger

if TYPE_CHECKING:  # the park's models load where a park is read (the butler imports this module)
    from butler_cli.core.park import Decision, ParkState
    from butler_cli.store.parks import ParkStore


def now_iso() -> str:
    """UTC, to the millisecond: parks made in the same second still sort newest first."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def record_decision(
    store: ParkStore, audit: AuditLog, state: ParkState, approved: bool | None, note: str | None
) -> Decision:
    """Record a person's decision exactly once; call it holding the park's lock.

    The decided-park ledger is checked first (a park file put back is refused); a pending park
    becomes decided on disk, then in the ledger, then in the audit log — all before anything
    runs. A decided one (a crash mid-way) keeps its recorded decision."""
    ledger = DecisionLedger(store.home)
    events = ledger.events_for(state.id)
    check_ledger(state, events)
    decision = decision_for(state, approved, note)
    if state.status == "pending":
        state.status = "decided"
        state.decision = decision
        state.decided_at = now_iso()
        store.save(state)  # the decision is durable before anything runs
        ledger.record(state.id, "decided")  # ...and so is the ledger's line
        audit.record(
            "decision",
            park=state.id,
            tool=state.approval.tool,
            args=state.approved_arguments(),
            outcome="approve" if decision.approved else "deny",
            text=decision.note,
        )
        crash_point("decision-written")
    elif "decided" not in events:  # the ledger line was lost with a crash or a full disk
        ledger.record(state.id, "decided")
    return decision


def load_park(given_id: str) -> ParkState:
    from butler_cli.store.parks import ParkStore

    store = ParkStore(butler_home())
    return store.load(store.resolve_id(given_id))


def check_ledger(state: ParkState, events: set[str]) -> None:
    """The park file is not its own only record: a copy put back is refused (exit 5)."""
    # A finished park says so itself (decision_for); an unfinished one the ledger has seen
    # finish, or a pending one the ledger has seen decided, is a copy put back.
    restored = (state.status != "resolved" and "resolved" in events) or (
        state.status == "pending" and "decided" in events
    )
    if restored:
        raise ParkError(
            f"park {state.id} was already decided (the decided-park ledger says so); this copy "
            "of its file was restored or altered, and it never runs twice. The file is left as "
            "it is",
            kind=DECIDED,
        )


def decision_for(state: ParkState, approved: bool | None, note: str | None) -> Decision:
    from butler_cli.core.park import Decision, read_decision

    path = f"park {state.id}"
    if state.status == "resolved":
        recorded = "approved" if state.decision and state.decision.approved else "denied"
        how = "stopped by you while it ran" if state.interrupted else "finished"
        raise ParkError(
            f"{path} was already {recorded} and {how}; it never runs twice", kind=DECIDED
        )
    if state.status == "decided":
        recorded_decision = read_decision(state.decision)
        if approved is not None and approved != recorded_decision.approved:
            was = "approved" if recorded_decision.approved else "denied"
            raise ParkError(
                f"{path} was already {was}; a different decision is refused", kind=DECIDED
            )
        return recorded_decision  # recovery after a crash: no new decision needed
    if approved is None:
        return read_decision(None)
    return Decision(approved=approved, note=note or None)

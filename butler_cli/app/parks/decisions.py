"""Recording a person's decision on a park: exactly once, under its lock, audited.

One step of resuming (the other is continuing the task, on a butler: ``Butler.resume``). The
decided-park ledger is checked first, so a park file put back is refused whatever it says.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.core.errors import DECIDED, ParkError, UsageError
from butler_cli.store.audit import AuditLog
from butler_cli.store.boot import boot_id
from butler_cli.store.faults import crash_point
from butler_cli.store.files import butler_home
from butler_cli.store.ledger import DecisionLedger

if TYPE_CHECKING:  # the park's models load where a park is read (the butler imports this module)
    from butler_cli.core.grants import Grant
    from butler_cli.core.park import Decision, ParkState
    from butler_cli.store.parks import ParkStore


@dataclass(frozen=True)
class Answer:
    """A person's decision on a parked round, as every surface gives it to the one door
    (``app/parks/door.decide``).

    ``approved``/``note`` answer every asked call ``each`` does not name (``approved`` None:
    no decision — a denial for a pending park, the recorded one for a park a crash left
    decided); ``each`` wins where it names a call. ``keep`` ("always allow this here") and
    ``session`` (a chat's "for this session") name, per call id, the grant the person was
    shown; each applies only to a call this answer approves, and only once its decision is
    the one recorded."""

    approved: bool | None = None
    note: str | None = None
    each: Mapping[str, Decision] = field(default_factory=dict)
    keep: Mapping[str, Grant] = field(default_factory=dict)
    session: Mapping[str, Grant] = field(default_factory=dict)


def now_iso() -> str:
    """UTC, to the millisecond: parks made in the same second still sort newest first."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Held:
    """A park held for a decision: locked, read and verified once, its ledger read once."""

    store: ParkStore
    state: ParkState
    #: The decided-park ledger's lines for it ("decided", "resolved"), read under the lock.
    events: set[str]


@contextmanager
def hold(store: ParkStore, park_id: str) -> Iterator[Held]:
    """The one way to a park that may be decided: its lock is taken (a second decider is
    refused, exit 5), the file read and verified once and checked against the decided-park
    ledger once — before a model loads, so a finished or put-back park is refused at once."""
    with store.lock(park_id):
        state = store.load(park_id)
        events = DecisionLedger(store.home).events_for(park_id)
        check_ledger(state, events)
        yield Held(store, state, events)


def record_decision(held: Held, audit: AuditLog, decisions: Mapping[str, Decision]) -> None:
    """Record the decision on every asked call (from :func:`decision_for` on the held park)
    exactly once; call it holding the park's lock.

    The park was checked against the decided-park ledger when it was held (:func:`hold`); a
    pending park becomes decided on disk, then in the ledger, then in the audit log (one line
    per asked call) — all before anything runs. A decided one (a crash mid-way) keeps its
    recorded decisions."""
    store, state, events = held.store, held.state, held.events
    ledger = DecisionLedger(store.home)
    if state.status == "pending":
        state.status = "decided"
        state.decision = summary_of(decisions)
        state.decisions = dict(decisions) if len(state.approvals) > 1 else {}
        state.decided_at = now_iso()
        # the round's later writes are not fsynced: the boot they are exact in (store/boot.py)
        state.boot = boot_id()
        store.save(state)  # the decision is durable before anything runs
        ledger.record(state.id, "decided")  # ...and so is the ledger's line
        for asked in state.approvals:
            decision = decisions[asked.call_id]
            audit.record(
                "decision",
                park=state.id,
                tool=asked.tool,
                args=state.arguments_of(asked.call_id),
                outcome="approve" if decision.approved else "deny",
                text=decision.note,
            )
        crash_point("decision-written")
    elif "decided" not in events:  # the ledger line was lost with a crash or a full disk
        ledger.record(state.id, "decided")


def summary_of(decisions: Mapping[str, Decision]) -> Decision:
    """The round's decision in one word (lists, logs, the conversation): approved when any
    asked call was; the first note given."""
    from butler_cli.core.park import Decision

    notes = [d.note for d in decisions.values() if d.note]
    return Decision(
        approved=any(d.approved for d in decisions.values()), note=notes[0] if notes else None
    )


def park_store(home: Path) -> ParkStore:
    """The parks in ``home``: the one way ``app/`` opens them from a module every run imports
    (the store and its signing key load here, when a round parks or a park is read)."""
    from butler_cli.store.parks import ParkStore

    return ParkStore(home)


def load_park(given_id: str, home: Path | None = None) -> ParkState:
    """A park read and verified to be shown (by id or a unique prefix), from ``home`` (the
    environment's when None): deciding it goes through :func:`hold`."""
    store = park_store(home or butler_home())
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


def decision_for(state: ParkState, answer: Answer) -> dict[str, Decision]:
    """The decision on each asked call, by call id. ``answer.each`` answers the calls it names
    (a call the park did not ask about is a usage error), ``approved``/``note`` every other one; an
    asked call left without an answer is a denial (R1). A decided park keeps its recorded
    decisions (a different one is refused); a finished one is refused."""
    from butler_cli.core.park import Decision, read_decision

    path = f"park {state.id}"
    if state.status == "resolved":
        recorded = "approved" if state.decision and state.decision.approved else "denied"
        how = "stopped by you while it ran" if state.interrupted else "finished"
        raise ParkError(
            f"{path} was already {recorded} and {how}; it never runs twice", kind=DECIDED
        )
    approved, note, given = answer.approved, answer.note, dict(answer.each)
    asked = [a.call_id for a in state.approvals]
    unknown = sorted(set(given) - set(asked))
    if unknown:
        raise UsageError(f"{path} does not ask about call {unknown[0]}")
    if state.status == "decided":
        recorded_calls = state.decided_calls()
        for cid in asked:
            wanted = given[cid].approved if cid in given else approved
            if wanted is not None and wanted != recorded_calls[cid].approved:
                was = "approved" if recorded_calls[cid].approved else "denied"
                raise ParkError(
                    f"{path} was already {was}; a different decision is refused", kind=DECIDED
                )
        return recorded_calls  # recovery after a crash: no new decision needed
    every = Decision(approved=approved, note=note or None) if approved is not None else None
    return {cid: given.get(cid) or every or read_decision(None) for cid in asked}

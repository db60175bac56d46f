"""One round runner for a fresh round and a resumed one (spec L5, L7, R2, X2, X4).

Every call of a round gets exactly one result, in order. A :data:`Judge` says, for each call,
whether it may run or which result it gets instead; a :class:`~butler_cli.core.outcomes.Journal`
records progress durably for a resumed park (each call runs at most once, across crashes) and
is a no-op for a fresh round, which runs at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from butler_cli.core.messages import ToolResultBlock, ToolUseBlock, error_result
from butler_cli.core.outcomes import (
    NEEDS_OWN_APPROVAL,
    NO_APPROVAL_ON_RECORD,
    NO_DECISION_NOTE,
    OUTCOME_UNKNOWN,
    Journal,
    declined_message,
    refused_message,
)
from butler_cli.core.together import run_together
from butler_cli.core.toolsets import Toolbox
from butler_cli.core.verdicts import Verdict

if TYPE_CHECKING:  # a resumed round's park is pydantic; a fresh round never loads it
    from butler_cli.core.park import Decision, ParkState

#: ``judge(call, was_started)``: the result a call gets instead of running, or None to run it.
Judge = Callable[[ToolUseBlock, bool], ToolResultBlock | None]
#: Told each result as it is recorded, with the seconds it took.
Finished = Callable[[ToolUseBlock, ToolResultBlock, float], None]
#: Told each call just before it runs (a display shows it running; an interrupt names it).
Started = Callable[[ToolUseBlock], None]
Classifier = Callable[[ToolUseBlock], Verdict]
#: Told, for each governed call of a resumed round, the verdict that held and what came of it
#: ("ran", "refused", "declined", "needs its own approval", "no approval on record",
#: "outcome unknown"): the audit log records every one (no values, only a hash).
Judged = Callable[[ToolUseBlock, Verdict | None, str], None]


class NoJournal:
    """The journal of a fresh round: nothing to recover and nothing to record."""

    def result_for(self, call_id: str) -> ToolResultBlock | None:
        return None

    def was_started(self, call_id: str) -> bool:
        return False

    def mark_started(self, call_id: str) -> None:
        pass

    def record_result(self, result: ToolResultBlock) -> None:
        pass

    def resolved(self) -> None:
        pass


NO_JOURNAL = NoJournal()


def run_round(
    calls: Sequence[ToolUseBlock],
    toolbox: Toolbox,
    judge: Judge,
    journal: Journal,
    finished: Finished,
    started: Started | None = None,
) -> list[ToolResultBlock]:
    """Give every call exactly one result, in the model's order, running each at most once
    (X2). The benign calls that may run side by side (``Toolbox.runs_beside``) run first, at
    once (:mod:`~butler_cli.core.together`); then, one at a time on this thread, in the
    model's order, the benign calls that may not, and last the governed calls, each exactly
    as in a round of its own."""
    kept = journal is not NO_JOURNAL  # a fresh round skips the no-op calls (a hot path)
    if len(calls) == 1:
        results = [_one(calls[0], toolbox, judge, journal, kept, finished, started)]
    else:
        beside = [c for c in calls if toolbox.runs_beside(c.name)]
        got = (
            _together(beside, toolbox, judge, journal, kept, finished, started)
            if len(beside) > 1
            else {}
        )
        rest = [c for c in calls if id(c) not in got]
        for call in sorted(rest, key=lambda c: toolbox.is_governed(c.name)):  # benign first
            got[id(call)] = _one(call, toolbox, judge, journal, kept, finished, started)
        results = [got[id(call)] for call in calls]
    if kept:
        journal.resolved()
    return results


def _one(
    call: ToolUseBlock,
    toolbox: Toolbox,
    judge: Judge,
    journal: Journal,
    kept: bool,
    finished: Finished,
    started: Started | None,
) -> ToolResultBlock:
    """One call on this thread: its recorded result, its judge's answer, or its run."""
    done = journal.result_for(call.id) if kept else None
    if done is not None:
        return done
    began = time.perf_counter()
    result = judge(call, kept and journal.was_started(call.id))
    if result is None:
        if kept:
            journal.mark_started(call.id)
        if started is not None:
            started(call)
        result = toolbox.run(call)
        toolbox.ran(call)  # may stop the task before anything is recorded
    if kept:
        journal.record_result(result)
    finished(call, result, time.perf_counter() - began)
    return result


def _together(
    calls: Sequence[ToolUseBlock],
    toolbox: Toolbox,
    judge: Judge,
    journal: Journal,
    kept: bool,
    finished: Finished,
    started: Started | None,
) -> dict[int, ToolResultBlock]:
    """Benign calls side by side; their results by ``id(call)``. Judging, the journal and
    the observers stay on this thread; only ``toolbox.run`` runs on the calls' threads."""
    got: dict[int, ToolResultBlock] = {}
    to_run: list[ToolUseBlock] = []
    for call in calls:
        done = journal.result_for(call.id) if kept else None
        if done is None:
            began = time.perf_counter()
            done = judge(call, kept and journal.was_started(call.id))
            if done is not None:
                if kept:
                    journal.record_result(done)
                finished(call, done, time.perf_counter() - began)
        if done is not None:
            got[id(call)] = done
        else:
            to_run.append(call)

    def before(i: int) -> None:
        if kept:
            journal.mark_started(to_run[i].id)
        if started is not None:
            started(to_run[i])

    def after(i: int, outcome: ToolResultBlock | BaseException, seconds: float) -> None:
        call = to_run[i]
        toolbox.ran(call)  # on this thread: may stop the task (and the calls still running)
        if isinstance(outcome, BaseException):  # the toolbox answers failures; this is a bug
            outcome = error_result(call.id, f"{call.name} failed: {type(outcome).__name__}")
        if kept:
            journal.record_result(outcome)
        finished(call, outcome, seconds)
        got[id(call)] = outcome

    run_together(to_run, toolbox.run, before, after)
    return got


def run_everything(call: ToolUseBlock, was_started: bool) -> ToolResultBlock | None:
    """The judge of a round with no verdict and no malformed call in it: every call runs."""
    return None


def fresh_judge(verdicts: dict[str, Verdict], answered: dict[str, ToolResultBlock]) -> Judge:
    """A round with no approve in it: malformed calls keep their answer, refusals never reach
    an executor (L5), everything else runs."""
    if not verdicts and not answered:
        return run_everything

    def judge(call: ToolUseBlock, was_started: bool) -> ToolResultBlock | None:
        if call.id in answered:
            return answered[call.id]
        verdict = verdicts.get(call.id)
        if verdict is not None and verdict.decision == "refuse":
            return error_result(call.id, refused_message(verdict.reason), "refused")
        return None

    return judge


def resumed_judge(
    park: ParkState,
    decisions: Mapping[str, Decision],
    toolbox: Toolbox,
    classify: Classifier,
    judged: Judged,
) -> Judge:
    """A parked round answered after a decision (R2): among the calls that asked, each runs
    only if the person approved that call (one with no decision is denied, R1); the policy is
    asked again (X4) and the stricter verdict holds; a call that may have run before a crash
    is "outcome unknown", never run again (X2). A benign sibling was only deferred by the
    park, and runs."""

    def judge(call: ToolUseBlock, was_started: bool) -> ToolResultBlock | None:
        governed = toolbox.is_governed(call.name)
        if was_started:
            if governed:
                judged(call, None, "outcome unknown")
            return error_result(call.id, OUTCOME_UNKNOWN, "unknown")
        if not governed:
            return None
        blocked, verdict, outcome = _governed(call, park, decisions, classify)
        judged(call, verdict, outcome)
        return blocked

    return judge


def _governed(
    call: ToolUseBlock, park: ParkState, decisions: Mapping[str, Decision], classify: Classifier
) -> tuple[ToolResultBlock | None, Verdict | None, str]:
    """For a governed call of a resumed round: the result if it must not run (None if it
    may), the verdict that held, and the outcome in words."""
    saved = park.verdicts.get(call.id)
    if saved is None:
        result = error_result(call.id, NO_APPROVAL_ON_RECORD, "not_run")
        return result, None, "no approval on record"
    verdict = saved.stricter(classify(call))
    if verdict.decision == "refuse":
        return error_result(call.id, refused_message(verdict.reason), "refused"), verdict, "refused"
    if any(a.call_id == call.id for a in park.approvals):
        decision = decisions.get(call.id)
        if decision is not None and decision.approved:
            return None, verdict, "ran"
        note = decision.note if decision is not None else NO_DECISION_NOTE
        declined = error_result(call.id, declined_message(note), "not_run")
        return declined, verdict, "declined"
    if verdict.decision == "approve":  # a park from before every call was asked
        result = error_result(call.id, NEEDS_OWN_APPROVAL, "not_run")
        return result, verdict, "needs its own approval"
    return None, verdict, "ran"

"""The one door a person's decision on a park comes in by, from every surface.

The chat, `butler resume`, the inbox and any later channel build one :class:`Answer` (a
verdict per asked call or one for all, a note, and what to keep: "always allow this here"
and, in a chat, "for this session"; ``app/parks/decisions.Answer``) and hand it to
:func:`decide`. It holds the park (its
lock, one verified read, the decided-park ledger: :func:`~.decisions.hold`), turns the answer
into a decision per call, records it, records what the person chose to keep **in the same
held step, only when this answer's decision was the one recorded**, continues the task and
says what happened (:class:`Decided`). A park decided elsewhere first refuses the answer
whole: nothing of it is kept, nothing is audited as kept. ``tests/test_one_door.py`` fails
if a second way in appears.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.app.config.options import RunOptions
from butler_cli.app.parks.approvals import folder_key, keepable, kept_for
from butler_cli.app.parks.decisions import Answer as Answer
from butler_cli.app.parks.decisions import decision_for, hold, park_store, record_decision
from butler_cli.app.run.butler import Butler
from butler_cli.app.run.report import TaskReport
from butler_cli.store.files import butler_home

if TYPE_CHECKING:
    from butler_cli.app.run.session import Sessions
    from butler_cli.core.grants import KeptApproval
    from butler_cli.core.loop import LoopObserver
    from butler_cli.core.park import Decision, ParkState


@dataclass(frozen=True)
class Decided:
    """What came of an answer: the task's report, whether this answer's decision is the one
    recorded (False: a decision a crash left on record was carried out), and what was kept."""

    park_id: str
    report: TaskReport
    recorded: bool
    #: The kept approvals this answer made (or found already kept: never a duplicate).
    kept: tuple[KeptApproval, ...] = ()
    #: Why a "keep" the person asked for was not kept (one line each; the decision stands).
    not_kept: tuple[str, ...] = ()


def decide(
    park_id: str,
    answer: Answer,
    *,
    opts: RunOptions | None = None,
    home: Path | None = None,
    butler: Butler | None = None,
    sessions: Sessions | None = None,
    observer: LoopObserver | None = None,
    observer_for: Callable[[ParkState], LoopObserver | None] | None = None,
) -> Decided:
    """The one way a person's decision is recorded (see the module's doc).

    The task continues on ``butler`` (a chat's own) when its session made the park, so the
    memory block, the grants and the MCP servers stay the ones in use; else on a butler built
    for the park from what it recorded (``opts`` win; with ``sessions``, `serve`'s kept
    session of that context), closed afterwards. A session grant is added to ``butler``'s.
    ``observer_for`` makes the progress display from the park as held (`butler resume`
    prints its id and task without reading the park a second time); it decides nothing."""
    if butler is not None:
        home = butler.home
    elif sessions is not None:
        home = sessions.home
    store = park_store(home or butler_home())
    pid = store.resolve_id(park_id)
    with ExitStack() as closing:
        with hold(store, pid) as held:
            state = held.state
            # Before a model loads: a finished park or a different decision is refused at once.
            decisions = decision_for(state, answer)
            recording = state.status == "pending"
            runner = butler
            if runner is None or not runner.made(state):
                runner = closing.enter_context(
                    _butler_for_park(state, opts or RunOptions(), store.home, sessions)
                )
            runner.check_reachable(state, decisions)
            record_decision(held, runner.audit, decisions)
            kept: list[KeptApproval] = []
            not_kept: list[str] = []
            if recording:  # only this answer's own decision keeps anything
                _keep(runner, state, answer, decisions, kept, not_kept)
                if butler is not None:
                    _remember(butler, state, answer, decisions)
                if kept:
                    for b in {id(runner): runner, id(butler): butler}.values():
                        if b is not None:
                            b.config = replace(b.config, kept=kept_for(b.home, b.cwd))
            if observer_for is not None:
                observer = observer_for(state)
            report = runner.continue_decided(state, decisions, observer)
        runner.told(pid, report)
    return Decided(pid, report, recording, tuple(kept), tuple(not_kept))


def _keep(
    runner: Butler,
    state: ParkState,
    answer: Answer,
    decisions: Mapping[str, Decision],
    kept: list[KeptApproval],
    not_kept: list[str],
) -> None:
    """Each "always allow this here" of an approved call the policy lets a person keep."""
    for cid, grant in answer.keep.items():
        decision = decisions.get(cid)
        if decision is None or not decision.approved:
            continue
        if not keepable(state, cid):
            not_kept.append(f"{grant.tool}: the policy asks about it every time; approved once")
            continue
        if folder_key(state.context.cwd) != folder_key(runner.cwd):
            not_kept.append(f"{grant.tool}: the park was made in another folder; approved once")
            continue
        made = runner.keep_approval(grant, state, cid)
        if made is None:
            not_kept.append(f"{grant.tool}: its files could not be resolved now; approved once")
        else:
            kept.append(made)


def _remember(
    butler: Butler, state: ParkState, answer: Answer, decisions: Mapping[str, Decision]
) -> None:
    """Each "for this session" of an approved call: a grant of the chat's session."""
    grants = butler.config.grants
    if grants is None:
        return
    for cid, grant in answer.session.items():
        decision = decisions.get(cid)
        if decision is None or not decision.approved:
            continue
        bound = butler.bind_grant(grant)
        number = grants.add(bound)
        butler.audit.record_grant(
            number=number,
            tool=bound.tool,
            scope="exact" if bound.exact is not None else bound.scope_keys(),
            args=state.arguments_of(cid),
        )


def _butler_for_park(
    state: ParkState, opts: RunOptions, home: Path, sessions: Sessions | None
) -> Butler:
    """A butler made as the park's was (its model, policy, folder, profile; flags win) that
    sends the memory block and instructions the park was sent, so the model sees the same
    system prompt. With ``sessions`` (`serve`): on a kept session of exactly that context,
    given back when the butler closes."""
    cwd = Path(state.context.cwd)
    if sessions is None:
        butler = Butler.build(opts, cwd=cwd, home=home, recorded=state.context)
    else:
        butler = Butler(sessions.lend(opts, cwd, state.context), None, sessions.give_back)
    butler.origin = state.context.origin  # a round it parks again came from the same place
    return butler

"""Tasks and resumed parks, each run on a butler: `butler run`'s batch, and `butler resume`,
the chat's decision on a park made elsewhere and the inbox's click (``resume_park``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.app.chat import conversations as convs
from butler_cli.app.config.options import RunOptions
from butler_cli.app.parks.approvals import exact_grant, keepable
from butler_cli.app.parks.decisions import RoundAnswer, decision_for, hold, park_store
from butler_cli.app.run.butler import Butler, ObserverFactory
from butler_cli.app.run.report import TaskReport
from butler_cli.app.run.session import Sessions
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import Message
from butler_cli.core.notices import notice
from butler_cli.memory.capture import Consolidated, consolidate
from butler_cli.store.files import butler_home

if TYPE_CHECKING:
    from butler_cli.core.grants import GrantBook
    from butler_cli.core.park import ParkState


def run_tasks(
    tasks: Sequence[str],
    opts: RunOptions,
    observer_for: ObserverFactory | None = None,
    prompt_for: Callable[[str], str] | None = None,
    continuing: tuple[bool, str | None] = (False, None),
) -> Iterator[TaskReport]:
    """Build once (a bad model or policy fails before any task), then run each task in order,
    each its own conversation; ``prompt_for`` turns a task into what the model is sent (the
    task with its context). ``continuing`` (`run -c` / `--conversation ID`, one task): the
    task is the next turn of that saved conversation (this folder's last one for ``(True,
    None)``), its earlier turns sent with it."""
    with Butler.build(opts) as butler:
        for i, task in enumerate(tasks):
            history: list[Message] = []
            cid: str | None = None
            if continuing[0]:
                record = convs.find(butler.conversations, continuing[1], str(butler.cwd))
                if record is None:
                    notice("no earlier conversation in this folder; this task starts a new one")
                else:
                    history = [Message.from_dict(m) for m in record.messages]
                    cid = record.summary.id
            if cid is None:
                cid = convs.begin(butler, "run", task)
            observer = observer_for(i, task, cid) if observer_for is not None else None
            prompt = prompt_for(task) if prompt_for is not None else None
            try:
                report = butler.run_task(
                    task, observer, history=history, prompt=prompt, conversation=cid
                )
            except KeyboardInterrupt:
                convs.interrupted(butler, cid)  # then the command says so and exits 130
                raise
            convs.record_turn(butler, cid, report, len(history))
            yield report


#: Called once with the park as read under its lock, before anything is decided: returns the
#: person's answer and the observer to use (`butler resume` asks the person here).
Prepare = Callable[["ParkState"], tuple[RoundAnswer, LoopObserver | None]]


def resume_park(
    given_id: str,
    answer: RoundAnswer,
    opts: RunOptions,
    observer: LoopObserver | None = None,
    *,
    keep: bool = False,
    prepare: Prepare | None = None,
    sessions: Sessions | None = None,
) -> TaskReport:
    """`butler resume`: the park is locked, read and verified once; one butler built for its
    own context records the decision and continues the task (see :meth:`Butler.decide`),
    the hooks are told once the lock is let go, then the butler is closed. ``prepare`` sees
    the park first and gives the decision (the terminal's question). ``approved``/``note``
    answer every call the round asks about, ``each`` call by call (see ``decision_for``).
    ``keep`` (the inbox's "Always allow here"): once recorded, each approved call is kept for
    the park's folder, exactly as shown — never one the policy asks about every time.

    ``sessions`` (`serve`): the butler runs on a kept session of the park's context, in
    ``sessions.home``.

    ``approved`` None with a pending park is a denial (R1). A park already ``decided`` but not
    ``resolved`` means a process died mid-way: it is recovered under its recorded decision.
    """
    home = sessions.home if sessions is not None else butler_home()
    store = park_store(home)
    park_id = store.resolve_id(given_id)
    with ExitStack() as closing:
        with hold(store, park_id) as held:
            state = held.state
            if prepare is not None:
                answer, observer = prepare(state)
            # Before a model loads: a finished park or a different decision is refused at once.
            decisions = decision_for(state, answer)
            butler = closing.enter_context(butler_for_park(state, opts, home, sessions=sessions))
            report = butler.decide(held, decisions, observer)
            if keep:
                for cid, decision in decisions.items():
                    if decision.approved and keepable(state, cid):
                        butler.keep_approval(exact_grant(state, cid), state, cid)
        butler.told(park_id, report)
        return report


def butler_for_park(
    state: ParkState,
    opts: RunOptions,
    home: Path,
    grants: GrantBook | None = None,
    sessions: Sessions | None = None,
) -> Butler:
    """A butler made as the park's was (its model, policy, folder, profile; flags win) that
    sends the memory block and instructions the park was sent, so the model sees the same
    system prompt. With ``sessions`` (`serve`): on a kept session of exactly that context,
    given back when the butler closes."""
    cwd = Path(state.context.cwd)
    if sessions is None:
        return Butler.build(opts, cwd=cwd, home=home, grants=grants, recorded=state.context)
    session = sessions.lend(opts, cwd, state.context)
    return Butler(session, grants, release=sessions.give_back)


def consolidate_memory(model: str | None, profile: str | None) -> Consolidated | None:
    """`butler memory consolidate`: older captured turns folded into one remembered profile,
    summarized by the model on a butler of its own; None when there is nothing to fold."""
    with Butler.build(RunOptions(model=model, profile=profile)) as butler:
        return consolidate(butler.memory, butler.summarize)

"""The approval prompt: what the person sees before a governed action runs, and their answer.

``y`` approve once · ``n`` deny (with an optional note the model sees) · ``l`` later (leave it
parked) · ``d`` details (every argument in full) · ``s``/``w`` approve for this session · ``a``
always allow this here (a kept approval, ``butler grants``; never offered for a call the policy
asks about every time) · ``?`` what each does (``ui.choices``: one grammar for every approval
question). Any other answer, Enter alone too, is explained and asked again; Ctrl-C or end of
input means "later": nothing runs, nothing is lost.

Every call is shown from the park's one view (``app.parks.pending_approval``, built once per
question); what the panel shows can be neither spoofed nor cut (``butler_cli.ui.approval``),
and a panel taller than the screen is paged (``butler_cli.ui.pager``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console

from butler_cli.app.parks.approvals import exact_grant, kept_grant
from butler_cli.app.parks.door import Answer
from butler_cli.app.parks.parks import PendingApproval, pending_approval
from butler_cli.core.grants import Grant
from butler_cli.ui import choices
from butler_cli.ui.approval import fold, panel
from butler_cli.ui.console import lines_wrapped
from butler_cli.ui.pager import page
from butler_cli.ui.text import visible

if TYPE_CHECKING:  # a park's pydantic models: a chat whose turns never park loads none
    from butler_cli.core.park import Decision, ParkState

__all__ = ["ask", "fold", "panel", "show"]

ReadLine = Callable[[str], str]


def show(
    console: Console,
    read_line: ReadLine,
    view: PendingApproval,
    *,
    whole: bool = False,
    call_id: str | None = None,
) -> None:
    """One asked call's panel (the first when none is named), a screenful at a time when it
    is taller than the screen."""
    page(console, read_line, panel(view, whole=whole, call_id=call_id))


def say(console: Console, text: str) -> None:
    """A line of ours (model-chosen parts neutralised already), wrapped between words."""
    lines_wrapped(console, visible(text))


def later(console: Console, park_id: str) -> None:
    """ "Later": the park stays, and the chat's own command decides it."""
    say(
        console,
        f"Left parked. Decide it later with /resume {park_id} "
        f"(or butler resume {park_id} outside the chat).",
    )


def ask(console: Console, read_line: ReadLine, state: ParkState) -> Answer | None:
    """Show every call the round waits on and ask until a real answer; None means "later".
    One call: its answer. Several: each is shown first, then "all of them" (every one was
    seen) or "no", or each in turn with every choice — a verdict per call, in one answer."""
    view = pending_approval(state)
    asked = [c.call_id for c in view.calls]
    if len(asked) == 1:
        return _ask_one(console, read_line, state, view, asked[0])
    menu = choices.several(len(asked))
    try:
        for cid in asked:
            show(console, read_line, view, call_id=cid)
        say(console, menu.legend)
        while True:
            answer = read_line(menu.prompt)
            choice = menu.pick(answer)
            if choice == "y":
                return Answer(approved=True)
            if choice == "n":
                note = read_line("Note for the model (optional, Enter to skip): ").strip()
                return Answer(approved=False, note=note or None)
            if choice == "l":
                break
            if choice == "e":
                each: list[Answer] = []
                for cid in asked:
                    one = _ask_one(console, read_line, state, view, cid)
                    if one is None:
                        return None
                    each.append(one)
                return Answer(
                    each={c: d for a in each for c, d in a.each.items()},
                    keep={c: g for a in each for c, g in a.keep.items()},
                    session={c: g for a in each for c, g in a.session.items()},
                )
            _explain(console, menu, answer)
    except (KeyboardInterrupt, EOFError):
        console.print()
    later(console, state.id)
    return None


def _explain(console: Console, menu: choices.Menu, answer: str) -> None:
    """``?``: what each key does; anything else: that it is no choice, and the keys."""
    said = menu.help() if answer.strip() == "?" else menu.unknown(visible(answer))
    lines_wrapped(console, said, 5 if answer.strip() == "?" else 4)


def _ask_one(
    console: Console, read_line: ReadLine, state: ParkState, view: PendingApproval, call_id: str
) -> Answer | None:
    """Show one asked call and ask until a real answer; None means "later". What is shown
    comes from ``view``; what a grant holds, from the park's exact call (``state``)."""
    asked = view.call(call_id)
    tool, widen, keepable = asked.tool, asked.widen, asked.keepable
    menu = choices.one_action(bool(widen), keepable)
    try:
        show(console, read_line, view, call_id=call_id)
        say(console, menu.legend)
        while True:
            answer = read_line(menu.prompt)
            choice = menu.pick(answer)
            if choice == "y":
                return _one(call_id, True)
            if choice == "s":
                exact = exact_grant(state, call_id)
                say(console, f"Granted for this session: {visible(exact.describe())}")
                return _one(call_id, True, session=exact)
            if choice == "w":
                wide = Grant(tool, patterns=tuple(sorted(widen.items())))
                question = (
                    f"Approve {visible(wide.describe())} for the rest of this session? [y/N] "
                )
                if read_line(question).strip().lower() in ("y", "yes"):
                    say(console, f"Granted for this session: {visible(wide.describe())}")
                    return _one(call_id, True, session=wide)
                continue
            if choice == "a":
                kept = _keep(read_line, state, widen, call_id, tool)
                if kept is not None:
                    return _one(call_id, True, keep=kept)
                continue
            if choice == "n":
                note = read_line("Note for the model (optional, Enter to skip): ").strip()
                return _one(call_id, False, note or None)
            if choice == "l":
                break
            if choice == "d":
                show(console, read_line, view, whole=True, call_id=call_id)
                say(console, menu.legend)
                continue
            _explain(console, menu, answer)
    except (KeyboardInterrupt, EOFError):
        console.print()
    later(console, state.id)
    return None


def _one(
    call_id: str,
    approved: bool,
    note: str | None = None,
    *,
    session: Grant | None = None,
    keep: Grant | None = None,
) -> Answer:
    """One call's verdict as an answer (what to keep beside it, if anything)."""
    from butler_cli.core.park import Decision

    verdict: Decision = Decision(approved=approved, note=note)
    return Answer(
        each={call_id: verdict},
        session={call_id: session} if session is not None else {},
        keep={call_id: keep} if keep is not None else {},
    )


def _keep(
    read_line: ReadLine, state: ParkState, widen: dict[str, str], call_id: str, tool: str
) -> Grant | None:
    """What the person keeps: exactly this call, or — only where the policy offered to widen
    it — the patterns shown here first. None: they thought better of it (asked again)."""
    exact = kept_grant(state, call_id)
    folder = visible(state.context.cwd)
    if widen:
        wide = Grant(tool, patterns=tuple(sorted(widen.items())))
        question = (
            f"Always allow here ({folder}): [e] {visible(exact.describe())}  "
            f"[w] {visible(wide.describe())}? [e/w/N] "
        )
        answer = read_line(question).strip().lower()
        return exact if answer == "e" else wide if answer == "w" else None
    question = f"Always allow {visible(exact.describe())} in {folder}? [y/N] "
    return exact if read_line(question).strip().lower() in ("y", "yes") else None

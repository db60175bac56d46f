"""What waits for a person, as every surface learns it: one typed view of a park.

:func:`pending_approval` turns a park (read and verified by its owner) into a
:class:`PendingApproval`: the task as typed, every call of the parked round that needs a
person — in the model's order, each with its tool, title, reason, its arguments masked
(secret-named keys and every known secret value) and a preview of its effect
(``app.preview``). ``butler pending`` and ``show``, the chat's and ``butler resume``'s
question, and the inbox card render this view and nothing else: there is one place that
decides what a call shows. The view is plain text, not yet neutralised: each surface escapes
it its own way (``ui.text.visible`` in the terminal, HTML-escaping on top in the inbox).
``--json`` keeps the park's exact arguments (``ParkState`` itself), never this masked copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.app.parks.approvals import kept_grant
from butler_cli.app.run.masking import masked, masked_value
from butler_cli.core.errors import ButlerError
from butler_cli.store.parks import ParkStore
from butler_cli.store.parks import ParkSummary as ParkSummary
from butler_cli.store.parks import Unreadable as Unreadable
from butler_cli.tools.redact import redact

if TYPE_CHECKING:
    from butler_cli.core.park import ParkState


@dataclass(frozen=True, slots=True)
class PendingCall:
    """One call of the parked round that needs a person, as it is shown."""

    call_id: str
    tool: str
    title: str
    reason: str
    #: The call's arguments with every secret masked (display only: what runs is the saved
    #: call itself, byte for byte).
    arguments: dict[str, Any]
    #: What the call would change, as plain lines (``-``/``+`` for an overwrite), masked;
    #: computed when the view is built, against the files as they are then — only while the
    #: park waits (see :data:`DECIDED_CHANGE`).
    preview: tuple[str, ...]
    #: "Always allow here" may be offered (the policy does not ask about it every time).
    keepable: bool
    #: The patterns the policy offered to widen a session approval to (may be empty).
    widen: dict[str, str]
    #: What "always allow here" would keep, in words (masked; empty when not keepable).
    keep_as: str = ""
    #: The arguments the title and the preview already show whole: the approval box shows
    #: every other one, and all of them raw on ``d``.
    shown: frozenset[str] = frozenset()

    @property
    def unshown(self) -> dict[str, Any]:
        """The arguments the title and the preview do not show: what the box and the inbox
        card list as ``key: value`` lines."""
        return {k: v for k, v in self.arguments.items() if k not in self.shown}


#: What stands in for a decided park's change (its arguments say what was decided).
DECIDED_CHANGE = (
    "not shown: the park is decided, and a diff now would compare with the file as it is "
    "today, not as it was when decided; the arguments are what was decided"
)


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A park as a person sees it before deciding: what was asked, where, and every call."""

    id: str
    created_at: str
    status: str
    task: str
    model: str
    policy: str
    folder: str
    parent: str | None
    calls: tuple[PendingCall, ...]
    #: Where the task came from (``chat``, ``run``, ``schedule ID``, ``matrix``; "": unknown).
    origin: str = ""

    def call(self, call_id: str | None = None) -> PendingCall:
        """The call named (the first when none is, or the name is not one of them)."""
        return next((c for c in self.calls if c.call_id == call_id), self.calls[0])

    def number(self, call_id: str) -> int:
        """The call's place in the round, from 1."""
        return next(i for i, c in enumerate(self.calls, 1) if c.call_id == call_id)


#: A built-in tool's own title (``tool: …``, or ``send_email to …``) shows these arguments
#: whole — the path resolved, as it is judged; the argv shell-quoted with its folder; the
#: method, URL and headers; the recipients and subject. A title of the generic form
#: ``tool({…})`` (the arguments did not check out) may cut them: it shows none for sure.
TITLE_SHOWS: dict[str, tuple[str, frozenset[str]]] = {
    "write_file": ("write_file: ", frozenset({"path"})),
    "edit_file": ("edit_file: ", frozenset({"path"})),
    "delete_file": ("delete_file: ", frozenset({"path"})),
    "move_path": ("move_path: ", frozenset({"src", "dst"})),
    "run_command": ("run_command: ", frozenset({"argv", "cwd"})),
    "http_request": ("http_request: ", frozenset({"method", "url", "headers"})),
    "send_email": ("send_email to ", frozenset({"to", "subject"})),
}


def _title_shows(tool: str, title: str) -> frozenset[str]:
    form, keys = TITLE_SHOWS.get(tool, ("", frozenset()))
    return keys if form and title.startswith(form) else frozenset()


def _preview(
    tool: str, arguments: dict[str, Any], cwd: str, decided: bool
) -> tuple[tuple[str, ...], frozenset[str]]:
    """The change's lines and the arguments they show whole (none for a decided park: its
    change is not shown, so the box shows its arguments)."""
    from butler_cli.app.parks.preview import change_preview  # difflib: not for `pending`'s list

    preview = change_preview(tool, arguments, cwd)
    lines = tuple(masked(line) for line in preview.lines)
    if decided and lines:
        return (DECIDED_CHANGE,), frozenset()
    return lines, preview.shows


def pending_approval(state: ParkState) -> PendingApproval:
    """The one view of what ``state`` waits on (see the module's doc)."""

    cwd = state.context.cwd
    # A decided park's change is not previewed: against the file as it is today (written by
    # the approved action, or changed since) the diff would not be what was decided.
    decided = state.status != "pending"
    calls = []
    for asked in state.approvals:
        arguments = state.arguments_of(asked.call_id)
        verdict = state.verdicts.get(asked.call_id)
        lines, previewed = _preview(asked.tool, arguments, cwd, decided)
        calls.append(
            PendingCall(
                call_id=asked.call_id,
                tool=asked.tool,
                title=masked(asked.title),
                reason=masked(asked.reason),
                arguments=masked_value(redact(arguments)),
                preview=lines,
                keepable=verdict is not None and verdict.keepable,
                widen=dict(verdict.widen) if verdict is not None else {},
                keep_as=masked(kept_grant(state, asked.call_id).describe())
                if verdict is not None and verdict.keepable
                else "",
                shown=_title_shows(asked.tool, asked.title) | previewed,
            )
        )
    return PendingApproval(
        id=state.id,
        created_at=state.created_at,
        status=state.status,
        task=masked(state.context.task),
        model=state.context.model,
        policy=state.context.policy,
        folder=cwd,
        parent=state.parent,
        calls=tuple(calls),
        origin=state.context.origin,
    )


def waiting_parks(home: Path) -> tuple[list[ParkSummary], list[Unreadable]]:
    """The parks waiting for a person, oldest first, as ``butler pending`` lists them (each
    asked call's tool, title and reason, no arguments), and the files that could not be read.
    Read from the verified park body without building a :class:`PendingApproval` (no
    pydantic, no preview): a list of 1,000 parks stays within its benchmark."""
    summaries, problems = ParkStore(home).scan()
    return [s for s in summaries if s.status == "pending"], problems


def decided_parks(home: Path) -> list[str]:
    """Parks decided but not finished (a server or a resume stopped mid-way, not by the
    person): what `serve` continues at start under their recorded decision."""
    summaries, _ = ParkStore(home).scan()
    return [s.id for s in summaries if s.status == "decided"]


def park_outcomes(home: Path, park_ids: list[str]) -> dict[str, str]:
    """What became of each park a run left: ``approved`` or ``denied`` once someone decided it
    (in the inbox, the chat or with `butler resume`), ``pending`` while it waits. A park that
    cannot be read is left out (the list still shows the run as it was recorded)."""
    store = ParkStore(home)
    found: dict[str, str] = {}
    for park_id in park_ids:
        try:
            raw = store.read_raw(park_id)
        except ButlerError:
            continue
        decision = raw.get("decision")
        if isinstance(decision, dict) and raw.get("status") != "pending":
            found[park_id] = "approved" if decision.get("approved") is True else "denied"
        else:
            found[park_id] = "pending"
    return found

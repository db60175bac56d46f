"""One view of a parked action, shared by the chat's approval prompt and `butler resume`.

A call is shown once: its title (the path, the argv as a shell line, the URL, the recipients),
the reason, the arguments the title and the change do not show, and the change (a new file,
a diff); its raw arguments only on ``d``. What it shows can be neither spoofed nor cut: every
model-chosen value is neutralised (``ui.text``); every line wraps at the terminal's width
(never cropped); a long string may be folded, but its head *and* tail stay and the fold counts
what it hides, and ``d`` shows every character. Shown through ``ui.pager`` when taller than
the screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from butler_cli.core.gate import compact_json
from butler_cli.ui.text import pretty_json, visible

if TYPE_CHECKING:
    from butler_cli.app.parks.parks import PendingApproval, PendingCall

FOLD_AT = 480
FOLD_HEAD = 240
FOLD_TAIL = 160


def diff_style(line: str) -> str:
    """A change's line coloured in the terminal (NO_COLOR and pipes: plain -/+ lines)."""
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return ""


def fold(value: Any) -> Any:
    """A copy with the middle of long strings folded away: head and tail stay (a dangerous
    end is seen), and the fold says how much it hides and that ``d`` shows it."""
    if isinstance(value, str) and len(value) > FOLD_AT:
        hidden = len(value) - FOLD_HEAD - FOLD_TAIL
        mark = f"⟪… {hidden} more characters here; d shows every one …⟫"
        return f"{value[:FOLD_HEAD]}{mark}{value[-FOLD_TAIL:]}"
    if isinstance(value, dict):
        return {k: fold(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fold(v) for v in value]
    return value


def _heading(asked: PendingCall) -> tuple[str, bool]:
    """The call's first line and whether it is the title: a title of the generic form
    ``tool({…})`` repeats the arguments shown below it, so the tool's name stands instead."""
    title = visible(asked.title)
    if asked.title.startswith(f"{asked.tool}("):
        return visible(asked.tool), False
    return title, True


def _argument_lines(key: str, value: Any) -> list[str]:
    """One argument as a person reads it: ``key: value``; a text of several lines below its
    key, indented, a line per line. Folded past FOLD_AT (``d`` shows it whole)."""
    value = fold(value)
    name = visible(key)
    if isinstance(value, str):
        lines = value.split("\n")
        if len(lines) == 1:
            return [f"{name}: {visible(value)}"]
        return [f"{name}:", *(f"  {visible(line)}" for line in lines)]
    return [f"{name}: {visible(compact_json(value))}"]


def panel(view: PendingApproval, *, whole: bool = False, call_id: str | None = None) -> Any:
    """One asked call of the park's view (the first when none is named) as a rich Panel, the
    call shown once: its title (what it acts on first), the tool when the title does not name
    it, the reason, every argument the title and the change do not already show, and the
    change it makes (a new file, a diff). ``whole`` (``d``): the raw arguments too, every
    character. The view is masked already; every line is neutralised here."""
    from rich.panel import Panel
    from rich.text import Text

    asked = view.call(call_id)
    heading, titled = _heading(asked)
    body = Text(overflow="fold", no_wrap=False)
    body.append(heading, style="bold")
    if titled and not asked.title.startswith((f"{asked.tool}:", f"{asked.tool} ")):
        body.append(f"\ntool: {visible(asked.tool)}")
    body.append(f"\nwhy: {visible(asked.reason)}")
    if whole:
        body.append(f"\narguments, exactly as given:\n{pretty_json(asked.arguments)}")
    else:
        for key, value in asked.unshown.items():
            body.append("".join(f"\n{line}" for line in _argument_lines(key, value)))
    for line in asked.preview:
        body.append(f"\n{visible(line)}", style=diff_style(line))
    count = len(view.calls)
    which = f" · action {view.number(asked.call_id)} of {count}" if count > 1 else ""
    return Panel(body, title=f"approval needed · park {view.id}{which}", expand=False)

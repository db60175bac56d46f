"""One view of a parked action, shared by the chat's approval prompt and `butler resume`.

What it shows can be neither spoofed nor cut: every model-chosen value is neutralised
(``ui.text``); the title names the target first; every line wraps at the terminal's width
(never cropped); a long string may be folded, but its head *and* tail stay and the fold counts
what it hides. Shown through ``ui.pager`` when taller than the screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from butler_cli.ui.text import pretty_json, visible

if TYPE_CHECKING:
    from butler_cli.app.parks.parks import PendingApproval

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


def panel(view: PendingApproval, *, whole: bool = False, call_id: str | None = None) -> Any:
    """One asked call of the park's view (the first when none is named) as a rich Panel:
    title, tool, reason, arguments (folded unless ``whole``), the change it makes. The view
    is masked already; every line is neutralised here."""
    from rich.panel import Panel
    from rich.text import Text

    asked = view.call(call_id)
    body = Text(overflow="fold", no_wrap=False)
    body.append(visible(asked.title), style="bold")
    body.append(f"\ntool: {visible(asked.tool)}")
    body.append(f"\nwhy:  {visible(asked.reason)}")
    args = asked.arguments
    body.append(f"\narguments:\n{pretty_json(args if whole else fold(args))}")
    if asked.preview:
        body.append("\nchange:")
        for line in asked.preview:
            body.append(f"\n{visible(line)}", style=diff_style(line))
    count = len(view.calls)
    which = f" · action {view.number(asked.call_id)} of {count}" if count > 1 else ""
    return Panel(body, title=f"approval needed · park {view.id}{which}", expand=False)

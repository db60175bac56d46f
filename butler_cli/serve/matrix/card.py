"""A park as a Matrix message, and a long answer folded: what the room shows.

The card carries what the inbox card carries, from the same view (``app.parks.parks``
``PendingApproval``): the task, the park's id, and every call of the round with its title,
tool, reason, arguments (secrets masked) and change (the diff). Every string is neutralised
(``ui.text.visible``: secrets masked, control and invisible characters shown) and, in the
formatted body, HTML-escaped. Nothing is cropped: a long block is folded (``<details>``) in the
formatted body and whole in the plain one, and a card too big for one event is sent as several
messages, the first of which is the one a decision answers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from butler_cli.ui.text import pretty_json, visible

if TYPE_CHECKING:
    from butler_cli.app.parks.parks import PendingApproval
    from butler_cli.core.park import ParkState

#: A block longer than this many lines is folded in the formatted body.
FOLD_LINES = 12
#: Characters of text per event: far under Matrix's 64 KiB event limit, with room for HTML.
PART_CHARS = 20_000

HOW_TO = (
    "Reply to this message with `approve` or `deny`, a note after it if you like "
    "(`deny not that folder`); react 👍 to approve, 👎 to deny."
)
HOW_TO_EACH = (
    "Several actions: reply `approve` or `deny` for all of them, or `each` and one word per "
    "action in order (`each approve deny because…`); the note goes with each denial."
)


@dataclass(frozen=True)
class Content:
    """One message: its plain body and, when there is one, its formatted (HTML) body."""

    body: str
    html: str | None = None

    def event(self, **extra: Any) -> dict[str, Any]:
        content: dict[str, Any] = {"msgtype": "m.text", "body": self.body, **extra}
        if self.html is not None:
            content["format"] = "org.matrix.custom.html"
            content["formatted_body"] = self.html
        return content


def digest(state: ParkState) -> str:
    """What a decision is bound to: the park's id, task and every asked call (tool, id, exact
    arguments). A park whose content differs from what was announced is not decided by an
    answer to that announcement."""
    calls = [[a.call_id, a.tool, state.arguments_of(a.call_id)] for a in state.approvals]
    canonical = json.dumps(
        {"id": state.id, "task": state.context.task, "calls": calls},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _block(label: str, text: str) -> str:
    """A ``<pre>`` block, folded behind its label when it is long."""
    pre = f"<pre>{escape(text)}</pre>"
    if text.count("\n") + 1 <= FOLD_LINES:
        return f"<p>{escape(label)}</p>{pre}"
    lines = text.count("\n") + 1
    return f"<details><summary>{escape(label)} ({lines} lines)</summary>{pre}</details>"


def park_card(view: PendingApproval, short: str) -> list[Content]:
    """The messages announcing ``view`` (the first is the one to answer); ``short``: the
    first characters of its digest, shown so a person can match a card to the inbox's."""
    many = len(view.calls) > 1
    titles = " · ".join(visible(c.title) for c in view.calls)
    head = f"{len(view.calls)} actions: {titles}" if many else titles
    plain = [
        f"🛎 butler: waiting for your decision — {head}",
        f"task: {visible(view.task)}",
        f"park {view.id} · in {visible(view.folder)} · content {short}",
    ]
    html = [
        f"<p>🛎 <b>butler: waiting for your decision</b> — {escape(head)}</p>",
        f"<p>task: {escape(visible(view.task))}<br>park <code>{escape(view.id)}</code> · in "
        f"<code>{escape(visible(view.folder))}</code> · content <code>{short}</code></p>",
    ]
    for n, call in enumerate(view.calls, 1):
        name = f"action {n} of {len(view.calls)}: " if many else ""
        args = pretty_json(call.arguments)
        change = "\n".join(visible(line) for line in call.preview)
        plain += [
            "",
            f"{name}{visible(call.title)}",
            f"tool: {visible(call.tool)} · why: {visible(call.reason)}",
            "arguments:",
            args,
        ]
        html += [
            f"<h4>{escape(name + visible(call.title))}</h4>",
            f"<p>tool: <code>{escape(visible(call.tool))}</code> · why: "
            f"{escape(visible(call.reason))}</p>",
            _block("arguments", args),
        ]
        if change:
            plain += ["change:", change]
            html.append(_block("change", change))
    plain += ["", HOW_TO_EACH if many else HOW_TO]
    html.append(f"<p><i>{escape(HOW_TO_EACH if many else HOW_TO)}</i></p>")
    return split(Content("\n".join(plain), "".join(html)))


def answer(text: str) -> list[Content]:
    """A chat turn's answer (neutralised), long ones folded."""
    shown = visible(text, lines=True) or "(no answer)"
    lines = shown.count("\n") + 1
    if lines <= FOLD_LINES:
        return split(Content(shown, None))
    first = shown.split("\n", 1)[0]
    html = (
        f"<p>{escape(first)}</p><details><summary>the whole answer ({lines} lines)</summary>"
        f"<pre>{escape(shown)}</pre></details>"
    )
    return split(Content(shown, html))


def split(content: Content) -> list[Content]:
    """One message when it fits in an event, else its plain text in parts (never cropped)."""
    size = len(content.body) + len(content.html or "")
    if size <= PART_CHARS * 2:
        return [content]
    text = content.body
    parts = [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)]
    return [
        Content(p if i == 0 else f"(part {i + 1} of {len(parts)})\n{p}")
        for i, p in enumerate(parts)
    ]

"""The inbox's HTML, server-rendered. Every value is HTML-escaped here (``h``), on top of the
terminal's neutraliser applied when it was read (``serve.data``). No inline script or style:
the Content-Security-Policy allows only this origin's ``/static/`` files."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from butler_cli.core.park import ParkState
from butler_cli.schedule.store import Job, Run
from butler_cli.serve.data import Problem, Waiting
from butler_cli.tools.redact import redact
from butler_cli.ui.parks import call_rows
from butler_cli.ui.text import pretty_json, visible


def h(text: object) -> str:
    """HTML-escaped text, quotes included (safe in attributes too)."""
    return html.escape(str(text), quote=True)


def v(text: str | None) -> str:
    """Model-chosen text: neutralised as in the terminal, then escaped."""
    return h(visible(text or ""))


def lines(text: str | None) -> str:
    """Like :func:`v` for an answer or an error: its line breaks kept as lines (CSS
    ``pre-wrap``), never shown as ``\\n``."""
    return h(visible(text or "", lines=True))


def when(iso: str | None) -> str:
    """A stored ISO time as a person reads it (``4 Dec 2026, 04:07 UTC``), the exact value
    kept in ``datetime`` and shown on hover."""
    if not iso:
        return ""
    from datetime import UTC, datetime

    try:
        at = datetime.fromisoformat(iso).astimezone(UTC)
    except ValueError:
        return h(iso)
    shown = f"{at.day} {at:%b %Y, %H:%M} UTC"
    return f"<time datetime='{h(iso)}' title='{h(iso)}'>{h(shown)}</time>"


def cell(label: str, content: str, cls: str = "") -> str:
    """A table cell labelled for the phone layout (each row becomes a card of lines)."""
    extra = f" class='{cls}'" if cls else ""
    return f"<td data-label='{h(label)}'{extra}>{content}</td>"


@dataclass(frozen=True)
class Keys:
    """What a page carries to go on talking to its own origin, and only to it: the token (in
    its links and as the script's ``Authorization`` header, never a cookie) and the CSRF
    token its decisions send."""

    token: str
    csrf: str

    def link(self, path: str) -> str:
        """``path`` with the token: a link (or script) that works without any cookie."""
        return h(f"{path}?token={self.token}")


def layout(title: str, keys: Keys, body: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<meta name='csrf-token' content='{h(keys.csrf)}'>"
        f"<meta name='butler-token' content='{h(keys.token)}'>"
        f"<title>{h(title)}</title><link rel='stylesheet' href='{keys.link('/static/inbox.css')}'>"
        f"<link rel='icon' type='image/svg+xml' href='{keys.link('/static/favicon.svg')}'>"
        f"<script src='{keys.link('/static/inbox.js')}' defer></script></head><body>"
        f"{body}</body></html>"
    )


def park_card(w: Waiting, keys: Keys) -> str:
    return (
        f"<article class='park' id='park-{h(w.id)}' data-id='{h(w.id)}'>"
        f"<h3 class='title'>{h(w.title)}</h3>"
        # One paragraph, its lines kept by CSS (white-space: pre-line): with 1,000 cards,
        # every element counts for the browser (a definition list cost it a third more).
        f"<p class='meta'>task: <span class='task'>{h(w.task)}</span>\n"
        f"tool: <span class='tool'>{h(w.tool)}</span>\n"
        f"why: <span class='reason'>{h(w.reason)}</span>\n"
        f"park <a href='{keys.link(f'/park/{w.id}')}'>{h(w.id)}</a>"
        f" · parked {when(w.created_at)}</p>"
        f"<pre class='arguments'>{h(w.arguments)}</pre>"
        f"<form class='decide' method='post' action='/park/{h(w.id)}/decide'>"
        "<input type='text' name='note' class='note' placeholder='note for the model (optional)'"
        " maxlength='2000'>"
        "<button type='submit' name='decision' value='approve' class='approve'>Approve</button>"
        "<button type='submit' name='decision' value='deny' class='deny'>Deny</button>"
        f"{KEEP if w.keepable else ''}</form></article>"
    )


#: "Always allow here": approves, then keeps exactly this call for the park's folder.
KEEP = (
    "<button type='submit' name='decision' value='keep' class='keep' title='Approve, and "
    "from now on run exactly this call in this folder without asking (butler grants)'>"
    "Always allow here</button>"
)


def parks_part(rows: Sequence[Waiting], problems: Sequence[Problem], keys: Keys) -> str:
    out = [park_card(w, keys) for w in rows]
    if not rows:
        out.append("<p class='empty'>No parks awaiting a decision.</p>")
    out.extend(
        f"<p class='problem'>skipped {h(p.path)}: {h(visible(p.problem))}</p>" for p in problems
    )
    return "".join(out)


def outcomes_part(runs: Sequence[Run], running: Sequence[str], keys: Keys) -> str:
    rows = [
        f"<li class='outcome running' data-park='{h(pid)}'>continuing park {h(pid)}…</li>"
        for pid in running
    ]
    for r in runs:
        link = keys.link(f"/park/{r.park_id}")
        park = f" · park <a href='{link}'>{h(r.park_id)}</a>" if r.park_id else ""
        answer = f"<div class='answer'>{lines(r.text)}</div>" if r.text else ""
        error = f"<div class='error'>{lines(r.error)}</div>" if r.error else ""
        hook = f"<div class='hook'>on-park hook: {v(r.hook)}</div>" if r.hook else ""
        rows.append(
            f"<li class='outcome {h(r.status)}' data-run='{r.id}'>"
            f"<span class='status'>{h(r.status)}</span> {v(r.task)}"
            f"<small> — {h(r.source)} · {when(r.finished_at or r.started_at)}{park}</small>"
            f"{answer}{error}{hook}</li>"
        )
    if not rows:
        return "<p class='empty'>Nothing has run yet.</p>"
    return "<ul>" + "".join(rows) + "</ul>"


def schedules_part(jobs: Sequence[tuple[Job, Run | None]]) -> str:
    if not jobs:
        return "<p class='empty'>No schedules (butler schedule add WHEN TASK).</p>"
    rows = []
    for job, last in jobs:
        nxt = "paused" if job.paused else when(job.next_due)
        outcome = h(last.status) if last else "never run"
        rows.append(
            f"<tr data-job='{h(job.id)}'>{cell('id', h(job.id))}{cell('when', v(job.cron))}"
            f"{cell('task', v(job.task))}{cell('next run', nxt, 'next')}"
            f"{cell('last', outcome)}</tr>"
        )
    head = "<tr><th>id</th><th>when</th><th>task</th><th>next run</th><th>last</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def inbox(parts: dict[str, str], keys: Keys, exposed: str | None) -> str:
    banner = f"<p class='exposed'>{h(exposed)}</p>" if exposed else ""
    body = (
        "<header><h1>butler · inbox</h1><p>Parked actions wait here for you. Approve runs "
        "exactly the action shown; deny runs nothing (the model sees your note).</p></header>"
        f"{banner}<div id='flash' role='status' aria-live='polite'></div>"
        f"<section><h2>Waiting for you</h2><div id='parks'>{parts['parks']}</div></section>"
        f"<section><h2>Recent outcomes</h2><div id='outcomes'>{parts['outcomes']}</div>"
        "</section>"
        f"<section><h2>Schedules</h2><div id='schedules'>{parts['schedules']}</div></section>"
    )
    return layout("butler · inbox", keys, body)


def park_page(
    state: ParkState, trail: Sequence[dict[str, Any]], ledger: Sequence[str], keys: Keys
) -> str:
    """What `butler show` shows, and the park's audit trail."""
    args = pretty_json(redact(state.approved_arguments()))
    rows = [
        ("status", h(state.status)),
        ("task", v(state.context.task)),
        ("tool", v(state.approval.tool)),
        ("why", v(state.approval.reason)),
        ("created", when(state.created_at)),
        ("model", v(state.context.model)),
        ("policy", v(state.context.policy)),
        ("folder", v(state.context.cwd)),
    ]
    if state.parent:
        parent = keys.link(f"/park/{state.parent}")
        rows.append(("continues", f"<a href='{parent}'>{h(state.parent)}</a>"))
    if state.decision is not None:
        word = "approved" if state.decision.approved else "denied"
        note = f" — {v(state.decision.note)}" if state.decision.note else ""
        rows.append(("decision", f"{word} at {when(state.decided_at)}{note}"))
    calls = []
    for row in call_rows(state, 400):
        calls.append(f"<li>[{h(row.verdict)}] {v(row.title)}{v(row.outcome)}</li>")
    audit = [
        f"<tr>{cell('when', when(e.get('ts')))}{cell('event', h(e.get('event')))}"
        f"{cell('tool', v(e.get('tool')))}{cell('outcome', v(str(_outcome(e))))}"
        f"{cell('note / reason', v(e.get('note') or e.get('reason') or ''))}</tr>"
        for e in trail
    ]
    dl = "".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in rows)
    body = (
        f"<header><h1>park {h(state.id)}</h1><p><a href='{keys.link('/')}'>← inbox</a></p></header>"
        f"<h2 class='title'>{v(state.approval.title)}</h2><dl>{dl}</dl>"
        f"<h3>arguments</h3><pre class='arguments'>{h(args)}</pre>"
        f"<h3>calls in the parked round</h3><ul>{''.join(calls)}</ul>"
        f"<h3>audit trail</h3><table class='audit'><tr><th>when</th><th>event</th>"
        f"<th>tool</th><th>outcome</th><th>note / reason</th></tr>{''.join(audit)}</table>"
        f"<p class='ledger'>decided-park ledger: {h(', '.join(ledger) or 'no entry')}</p>"
        f"<p>{len(state.messages)} messages in the conversation "
        f"(<code>butler show {h(state.id)} --json</code> shows them all)</p>"
    )
    return layout(f"butler · park {state.id}", keys, body)


def _outcome(entry: dict[str, Any]) -> object:
    event = entry.get("event")
    if isinstance(event, str) and event in entry:
        return entry[event]
    return entry.get("outcome", "")

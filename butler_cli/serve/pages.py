"""The inbox's HTML, server-rendered. Every value is HTML-escaped here (``h``), on top of the
terminal's neutraliser applied when it was read (``serve.data``). No inline script or style:
the Content-Security-Policy allows only this origin's ``/static/`` files."""

from __future__ import annotations

import hashlib
import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from butler_cli.app.parks.parks import PendingApproval, PendingCall, pending_approval
from butler_cli.app.views.inbox import Outcome, Problem
from butler_cli.core.gate import compact_json
from butler_cli.core.park import ParkState
from butler_cli.schedule.store import Job, Run
from butler_cli.ui.parks import call_rows
from butler_cli.ui.stamps import origin_words, readable_time
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
    return f"<time datetime='{h(iso)}' title='{h(iso)}'>{h(readable_time(iso))}</time>"


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


def change_block(preview: Sequence[str]) -> str:
    """A call's change as plain ``-``/``+`` lines, each neutralised and escaped, none cut: a
    long one scrolls in its block, which folds away (``details``) and is open to begin with."""
    if not preview:
        return ""
    rows = []
    for line in preview:
        kind = "" if line.startswith(("+++", "---")) else _DIFF_CLASS.get(line[:1], "")
        text = v(line)
        rows.append(f"<span class='{kind}'>{text}</span>" if kind else text)
    return (
        f"<details class='change' open><summary>change ({len(preview)} lines)</summary>"
        f"<pre class='change'>{chr(10).join(rows)}</pre></details>"
    )


_DIFF_CLASS = {"-": "del", "+": "add"}


def rest_part(call: PendingCall) -> str:
    """The arguments the title and the change do not already show, as ``key: value`` lines
    (the terminal's box shows the same); every one whole, neutralised and escaped."""
    rows = []
    for key, value in call.unshown.items():
        text = value if isinstance(value, str) else compact_json(value)
        rows.append(f"{v(key)}: {lines(text)}")
    return f"<pre class='rest'>{chr(10).join(rows)}</pre>" if rows else ""


def call_part(view: PendingApproval, call: PendingCall, form: str | None) -> str:
    """One call of a parked round: what it is, its arguments (masked) and its change; in a
    round of several, the person's approve/deny for it (sent with the ``form`` named)."""
    count = len(view.calls)
    choice = ""
    head = ""
    if count > 1:
        head = (
            f"<h4 class='call-title'>action {view.number(call.call_id)} of {count}: "
            f"{v(call.title)}</h4>"
        )
    if count > 1 and form is not None:
        name = h(f"call:{call.call_id}")
        choice = (
            "<p class='each'>"
            f"<label><input type='radio' form='{h(form)}' name='{name}' value='approve'> "
            f"approve</label> <label><input type='radio' form='{h(form)}' name='{name}' "
            "value='deny'>"
            " deny</label></p>"
        )
    return (
        f"<section class='call' data-call='{h(call.call_id)}'>{head}"
        f"<p class='meta'>tool: <span class='tool'>{v(call.tool)}</span>\n"
        f"why: <span class='reason'>{v(call.reason)}</span></p>"
        f"{rest_part(call)}{change_block(call.preview)}"
        "<details class='raw'><summary>arguments, exactly as given</summary>"
        f"<pre class='arguments'>{h(pretty_json(call.arguments))}</pre></details>"
        f"{choice}</section>"
    )


def park_card(w: PendingApproval, keys: Keys) -> str:
    """A waiting park, rendered from its one view: every call of the round together, each
    with its change. One call: Approve or Deny (or keep). Several: all at once, or each as
    marked (an unmarked one is denied: R1)."""
    form = f"decide-{w.id}"
    many = len(w.calls) > 1
    title = (
        f"{len(w.calls)} actions: " + " · ".join(c.title for c in w.calls)
        if many
        else w.calls[0].title
    )
    buttons = (
        "<button type='submit' name='decision' value='approve' class='approve'>"
        f"Approve all {len(w.calls)}</button>"
        "<button type='submit' name='decision' value='deny' class='deny'>Deny all</button>"
        # disabled until a call is marked: with none it would deny every action (the script
        # enables it on the first mark)
        "<button type='submit' name='decision' value='each' class='each' disabled "
        "title='Mark approve or deny on the actions first'>Decide as marked</button>"
        if many
        else "<button type='submit' name='decision' value='approve' class='approve'>Approve"
        "</button><button type='submit' name='decision' value='deny' class='deny'>Deny</button>"
        f"{keep_part(w) if w.calls[0].keepable else ''}"
    )
    body = (
        f"<h3 class='title'>{v(title)}</h3>"
        # One paragraph, its lines kept by CSS (white-space: pre-line): with 1,000 cards,
        # every element counts for the browser (a definition list cost it a third more).
        f"<p class='meta'>task: <span class='task'>{v(w.task)}</span>\n"
        f"park <a href='{keys.link(f'/park/{w.id}')}'>{h(w.id)}</a>"
        f" · parked {when(w.created_at)}{origin_part(w.origin)}</p>"
        f"{''.join(call_part(w, c, form) for c in w.calls)}"
        f"<form class='decide' id='{h(form)}' method='post' action='/park/{h(w.id)}/decide'>"
        "<input type='text' name='note' class='note' placeholder='note for the model (optional)'"
        f" maxlength='2000'>{buttons}</form>"
    )
    # The card's own version: the page's script keeps a card it shows while this holds, and
    # puts the new one in its place (the note typed carried over) once a preview changed.
    seen = hashlib.blake2b(body.encode(), digest_size=8).hexdigest()
    return (
        f"<article class='park' id='park-{h(w.id)}' data-id='{h(w.id)}' data-v='{seen}'>"
        f"{body}</article>"
    )


def origin_part(origin: str) -> str:
    words = origin_words(origin)
    return f" <span class='origin'>{v(words)}</span>" if words else ""


def keep_part(w: PendingApproval) -> str:
    """ "Always allow here": a button that only asks — showing what would be kept, for which
    folder — and the confirm that approves and keeps it (issue 33: the inbox asks first)."""
    call = w.calls[0]
    return (
        "<button type='button' class='keep' title='Approve, and from now on run this without "
        "asking in this folder (butler grants)'>Always allow here</button>"
        "<p class='keep-ask' hidden>Always allow here: "
        f"<span class='keep-what'>{v(call.keep_as)}</span> in <span class='keep-folder'>"
        f"{v(w.folder)}</span> — from now on it runs without asking there (`butler grants` "
        "shows it, `butler grants revoke N` takes it back). "
        "<button type='submit' name='decision' value='keep' class='keep-yes'>Keep and approve"
        "</button> <button type='button' class='keep-no'>Cancel</button></p>"
    )


def parks_part(rows: Sequence[PendingApproval], problems: Sequence[Problem], keys: Keys) -> str:
    out = [park_card(w, keys) for w in rows]
    if not rows:
        out.append("<p class='empty'>No parks awaiting a decision.</p>")
    out.extend(
        f"<p class='problem'>skipped {h(p.path)}: {h(visible(p.problem))}</p>" for p in problems
    )
    return "".join(out)


def _problems(problems: Sequence[str]) -> str:
    return "".join(f"<p class='problem'>{h(visible(p))}</p>" for p in problems)


def outcomes_part(
    runs: Sequence[Outcome], running: Sequence[str], keys: Keys, problems: Sequence[str] = ()
) -> str:
    """Recent outcomes: the decisions still being carried out, then what ended, newest first;
    ``problems``: a line for each store that could not be read whole."""
    trouble = _problems(problems)
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
            f"<li class='outcome {h(r.status)}' data-run='{h(r.key)}'>"
            f"<span class='status'>{h(r.status)}</span> {v(r.task)}"
            f"<small> — {h(r.source)} · {when(r.finished_at or r.started_at)}{park}</small>"
            f"{answer}{error}{hook}</li>"
        )
    if not rows:
        return f"{trouble}<p class='empty'>Nothing has run yet.</p>"
    return f"{trouble}<ul>" + "".join(rows) + "</ul>"


def schedules_part(jobs: Sequence[tuple[Job, Run | None]], problem: str | None = None) -> str:
    if problem:
        return _problems([problem])
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
        f"<section><h2>Waiting for you <span id='waiting' class='count'>"
        f"({parts['waiting']})</span></h2><div id='parks'>{parts['parks']}</div></section>"
        f"<section><h2>Recent outcomes</h2><div id='outcomes'>{parts['outcomes']}</div>"
        "</section>"
        f"<section><h2>Schedules</h2><div id='schedules'>{parts['schedules']}</div></section>"
    )
    return layout("butler · inbox", keys, body)


def park_page(
    state: ParkState, trail: Sequence[dict[str, Any]], ledger: Sequence[str], keys: Keys
) -> str:
    """What `butler show` shows — every asked call from the park's one view — and the park's
    audit trail."""
    view = pending_approval(state)
    rows = [
        ("status", h(view.status)),
        ("task", v(view.task)),
        ("created", when(view.created_at)),
        ("model", v(view.model)),
        ("policy", v(view.policy)),
        ("folder", v(view.folder)),
    ]
    if view.parent:
        parent = keys.link(f"/park/{view.parent}")
        rows.append(("continues", f"<a href='{parent}'>{h(view.parent)}</a>"))
    if state.decision is not None:
        decided = state.decided_calls()
        for call in view.calls:
            decision = decided.get(call.call_id)
            if decision is not None:
                word = "approved" if decision.approved else "denied"
                note = f" — {v(decision.note)}" if decision.note else ""
                which = f"{v(call.title)}: " if len(view.calls) > 1 else ""
                rows.append(("decision", f"{which}{word} at {when(state.decided_at)}{note}"))
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
    title = view.calls[0].title if len(view.calls) == 1 else f"{len(view.calls)} actions"
    asked = "".join(call_part(view, c, None) for c in view.calls)
    body = (
        f"<header><h1>park {h(state.id)}</h1><p><a href='{keys.link('/')}'>← inbox</a></p></header>"
        f"<h2 class='title'>{v(title)}</h2><dl>{dl}</dl>{asked}"
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

"""The inbox's only script and style sheet, served from this origin (no build step).

The script polls ``/parts`` every second (answered 204 when nothing changed), merges new park
cards in without touching the ones already shown (a note being typed survives) unless what a
card shows changed (its ``data-v``: a file its preview reads was edited), and sends
decisions with the CSRF token in a header; both send the token as ``Authorization: Bearer``,
read from the page (no cookie holds it). It never builds HTML from data: the server renders
(and escapes) every fragment."""

from __future__ import annotations

INBOX_JS = r"""
"use strict";
const csrf = document.querySelector("meta[name=csrf-token]").content;
// The token travels as a header read from this page: never a cookie, which every other
// port on this host would receive too.
const auth = "Bearer " + document.querySelector("meta[name=butler-token]").content;
let version = "";

// The flash floats at the top of the viewport (fixed, out of the page's flow, so a line
// coming moves no button): a result lands where the person is looking, however far down the
// card was. The three newest lines are kept, each for 15 s.
function setFlash(text, ok) {
  const flash = document.getElementById("flash");
  const p = document.createElement("p");
  p.className = ok ? "ok" : "refused";
  p.textContent = text;
  flash.prepend(p);
  while (flash.children.length > 3) flash.lastElementChild.remove();
  setTimeout(() => p.remove(), 15000);
}

function merge(list, html) {
  const tpl = document.createElement("template");
  tpl.innerHTML = html;
  const shown = new Map();
  for (const node of list.children) {
    if (node.dataset && node.dataset.id) shown.set(node.dataset.id, node);
  }
  let typing = null;  // the note being typed in a card that is replaced, to keep its focus
  const next = Array.from(tpl.content.children).map((n) => {
    const old = n.dataset && n.dataset.id && shown.get(n.dataset.id);
    if (!old) return n;
    if (old.dataset.v === n.dataset.v) return old;
    // What the card shows changed (a file a preview reads was edited): the new card, with
    // the note being typed carried over; the marks are the person's to make again.
    const note = old.querySelector("input.note");
    const fresh = n.querySelector("input.note");
    if (note && fresh) {
      fresh.value = note.value;
      if (document.activeElement === note) typing = [fresh, note.selectionStart, note.selectionEnd];
    }
    return n;
  });
  // Only what changed moves: a card taken out and put back loses the focus of the note typed
  // in it, and the keys that follow go nowhere.
  const keep = new Set(next);
  // A card decided while the pointer is over the list leaves a blank of its height behind,
  // so the next card's buttons do not slide under the pointer (or the finger); the blanks
  // go once the pointer leaves the list.
  const held = list.matches(":hover");
  for (const node of Array.from(list.childNodes)) {
    if (keep.has(node) || (held && isGone(node))) continue;
    if (held && node.classList && node.classList.contains("park")) {
      const gone = document.createElement("div");
      gone.className = "gone";
      gone.style.height = node.getBoundingClientRect().height + "px";
      gone.textContent = "decided";
      list.replaceChild(gone, node);
    } else node.remove();
  }
  let at = list.firstChild;
  for (const node of next) {
    while (isGone(at)) at = at.nextSibling;
    if (node === at) at = at.nextSibling;
    else list.insertBefore(node, at);
  }
  if (typing) {
    typing[0].focus();
    typing[0].setSelectionRange(typing[1], typing[2]);
  }
}

function isGone(node) {
  return !!(node && node.classList && node.classList.contains("gone"));
}

document.getElementById("parks").addEventListener("pointerleave", (event) => {
  for (const gone of Array.from(event.currentTarget.querySelectorAll(".gone"))) gone.remove();
});

// "Decide as marked" waits for a mark: with none, it would deny every action.
document.addEventListener("change", (event) => {
  const mark = event.target;
  if (!mark.name || !mark.name.startsWith("call:") || !mark.form) return;
  const each = mark.form.querySelector("button.each");
  if (each) each.disabled = false;
});

// "Always allow here" asks first, showing what would be kept; only its confirm sends.
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("button.keep, button.keep-no");
  if (!button) return;
  const ask = button.form && button.form.querySelector(".keep-ask");
  if (!ask) return;
  ask.hidden = button.classList.contains("keep-no");
  if (!ask.hidden) ask.querySelector("button.keep-yes").focus();
});

async function refresh() {
  try {
    const res = await fetch("/parts?v=" + encodeURIComponent(version), {
      credentials: "omit", cache: "no-store", headers: {"Authorization": auth},
    });
    if (res.status === 200) {
      const data = await res.json();
      version = data.version;
      merge(document.getElementById("parks"), data.parks);
      document.getElementById("waiting").textContent = "(" + data.waiting + ")";
      document.getElementById("outcomes").innerHTML = data.outcomes;
      document.getElementById("schedules").innerHTML = data.schedules;
    }
  } catch (e) {
    /* the server may be restarting: try again on the next tick */
  }
}

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.classList.contains("decide")) return;
  event.preventDefault();
  const body = new FormData(form, event.submitter);
  const card = form.closest(".park");
  const pressed = event.submitter;
  const label = pressed ? pressed.textContent : "";
  // Feedback at once: the task may run for seconds before the answer comes.
  const doing = {deny: "Denying…", each: "Deciding…", keep: "Keeping…"};
  if (pressed) pressed.textContent = doing[pressed.value] || "Approving…";
  if (card) card.setAttribute("aria-busy", "true");
  const was = Array.from(form.querySelectorAll("button"), (b) => [b, b.disabled]);
  for (const [b] of was) b.disabled = true;
  const restore = () => {
    if (pressed) pressed.textContent = label;
    if (card) card.removeAttribute("aria-busy");
    for (const [b, disabled] of was) b.disabled = disabled;
  };
  try {
    const res = await fetch(form.action, {
      method: "POST", body, credentials: "omit",
      headers: {"X-CSRF-Token": csrf, "Authorization": auth},
    });
    const data = await res.json();
    setFlash(data.message, data.ok);
    if (!data.ok) restore();
  } catch (e) {
    setFlash("the butler did not answer: " + e, false);
    restore();
  }
  refresh();
});

setInterval(refresh, 1000);
"""

INBOX_CSS = """
:root { color-scheme: light dark; --fg: #1d1d1f; --muted: #555; --bg: #fafaf7; --card: #fff;
  --line: #d8d4c8; --soft: #f3f1ea; --rule: #e5e2d8; --ok: #2f7d32; --ok-bg: #e5f3e5;
  --bad: #a32020; --bad-bg: #f8e1e1; --wait: #c98a1b; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e8e6e1; --muted: #aaa59a; --bg: #171715; --card: #22211e; --line: #3a3832;
    --soft: #2b2a26; --rule: #34322d; --ok: #5dbb63; --ok-bg: #1f3321; --bad: #ef7b7b;
    --bad-bg: #3d2020; --wait: #e0a640; }
}
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem;
  color: var(--fg); background: var(--bg); }
a { color: inherit; }
h1 { font-size: 1.4rem; margin: 0 0 .2rem; } h2 { font-size: 1.1rem; margin-top: 1.6rem; }
header p { margin: 0; color: var(--muted); }
.meta { white-space: pre-line; margin: 0 0 .5rem; overflow-wrap: anywhere; }
.park { content-visibility: auto; contain-intrinsic-size: auto 22rem;
  background: var(--card); border: 1px solid var(--line); border-left: 4px solid var(--wait);
  border-radius: 6px; padding: .7rem 1rem; margin: .8rem 0; }
.park[aria-busy=true] { opacity: .65; }
.park h3 { margin: 0 0 .4rem; font-size: 1rem; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: 5rem minmax(0, 1fr); gap: .1rem .6rem;
  margin: 0 0 .5rem; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
pre, code { overflow-wrap: anywhere; white-space: pre-wrap; }
pre.arguments, pre.change, pre.rest { background: var(--soft); padding: .5rem; border-radius: 4px;
  max-height: 30rem; overflow: auto; margin: .3rem 0; }
pre.change .del { color: var(--bad); background: var(--bad-bg); }
pre.change .add { color: var(--ok); background: var(--ok-bg); }
details.change summary, details.raw summary { cursor: pointer; color: var(--muted); }
section.call { border-top: 1px solid var(--rule); padding-top: .4rem; margin-top: .4rem; }
section.call h4 { margin: 0 0 .2rem; font-size: .95rem; overflow-wrap: anywhere; }
.each label { margin-right: 1rem; } .each input { min-width: 1.2rem; min-height: 1.2rem; }
form.decide { display: flex; flex-wrap: wrap; gap: .5rem; }
form.decide .note { flex: 1 1 12rem; min-width: 0; min-height: 44px; padding: .3rem .5rem;
  font: inherit; color: inherit; background: var(--card); border: 1px solid var(--line);
  border-radius: 4px; }
button { min-height: 44px; min-width: 6.5rem; padding: .3rem 1rem; border-radius: 4px;
  border: 1px solid #888; cursor: pointer; font: inherit; }
button:disabled { cursor: progress; }
button.approve { background: var(--ok); color: #fff; border-color: var(--ok); }
button.deny { background: var(--card); color: var(--bad); border-color: var(--bad); }
button.keep { background: var(--card); color: var(--ok); border-color: var(--ok); }
#flash { position: fixed; top: .3rem; left: 0; right: 0; margin: 0 auto; z-index: 2;
  width: min(58rem, calc(100% - 2rem)); pointer-events: none; }
.gone { border: 1px dashed var(--line); border-radius: 6px; margin: .8rem 0; padding: .7rem 1rem;
  color: var(--muted); }
.keep-ask { flex: 1 1 100%; margin: 0; padding: .5rem; background: var(--ok-bg);
  border-radius: 4px; overflow-wrap: anywhere; }
button.keep-yes { background: var(--ok); color: #fff; border-color: var(--ok); }
button.each:disabled { cursor: not-allowed; opacity: .6; }
#flash p { margin: .3rem 0; padding: .6rem .8rem; border-radius: 4px;
  box-shadow: 0 1px 3px rgba(0, 0, 0, .2); }
#flash .ok { background: var(--ok-bg); } #flash .refused { background: var(--bad-bg); }
.exposed { background: var(--bad-bg); padding: .4rem .6rem; }
ul { padding-left: 1.2rem; } .outcome { margin: .4rem 0; overflow-wrap: anywhere; }
.outcome .status { font-weight: 600; } .outcome.done .status { color: var(--ok); }
.outcome.failed .status { color: var(--bad); } .outcome.parked .status { color: var(--wait); }
.answer { white-space: pre-wrap; } .error { color: var(--bad); white-space: pre-wrap; }
small, .empty, .count, .origin { color: var(--muted); } .problem { color: var(--bad); }
table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .2rem .4rem;
  border-bottom: 1px solid var(--rule); vertical-align: top; }
td { overflow-wrap: anywhere; } th { white-space: nowrap; }
@media (max-width: 40rem) {
  /* a phone: each schedule (and audit line) is a small card of labelled lines */
  table, tbody, tr, td { display: block; width: 100%; } tr:first-child { display: none; }
  tr { padding: .4rem 0; border-bottom: 1px solid var(--rule); } td { border: 0; padding: 0; }
  td::before { content: attr(data-label) ": "; color: var(--muted); }
  form.decide button { flex: 1 1 40%; }
}
"""

#: The tab's icon (no request for /favicon.ico, which needs the token like every address).
FAVICON_SVG = """<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'>
<rect width='32' height='32' rx='7' fill='#c98a1b'/>
<path d='M9 20h14v3H9zM11 19c0-4 2-7 5-7s5 3 5 7z' fill='#fff'/>
<circle cx='16' cy='10' r='1.6' fill='#fff'/></svg>
"""

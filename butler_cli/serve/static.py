"""The inbox's only script and style sheet, served from this origin (no build step).

The script polls ``/parts`` every second (answered 204 when nothing changed), merges new park
cards in without touching the ones already shown (a note being typed survives), and sends
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

function setFlash(text, ok) {
  const flash = document.getElementById("flash");
  const p = document.createElement("p");
  p.className = ok ? "ok" : "refused";
  p.textContent = text;
  flash.prepend(p);
}

function merge(list, html) {
  const tpl = document.createElement("template");
  tpl.innerHTML = html;
  const shown = new Map();
  for (const node of list.children) {
    if (node.dataset && node.dataset.id) shown.set(node.dataset.id, node);
  }
  const next = Array.from(tpl.content.children).map(
    (n) => (n.dataset && n.dataset.id && shown.get(n.dataset.id)) || n
  );
  list.replaceChildren(...next);
}

async function refresh() {
  try {
    const res = await fetch("/parts?v=" + encodeURIComponent(version), {
      credentials: "omit", cache: "no-store", headers: {"Authorization": auth},
    });
    if (res.status === 200) {
      const data = await res.json();
      version = data.version;
      merge(document.getElementById("parks"), data.parks);
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
  for (const b of form.querySelectorAll("button")) b.disabled = true;
  try {
    const res = await fetch(form.action, {
      method: "POST", body, credentials: "omit",
      headers: {"X-CSRF-Token": csrf, "Authorization": auth},
    });
    const data = await res.json();
    setFlash(data.message, data.ok);
    if (!data.ok) for (const b of form.querySelectorAll("button")) b.disabled = false;
  } catch (e) {
    setFlash("the butler did not answer: " + e, false);
    for (const b of form.querySelectorAll("button")) b.disabled = false;
  }
  refresh();
});

setInterval(refresh, 1000);
"""

INBOX_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem;
  color: #1d1d1f; background: #fafaf7; }
h1 { font-size: 1.4rem; margin: 0 0 .2rem; } h2 { font-size: 1.1rem; margin-top: 1.6rem; }
header p { margin: 0; color: #555; }
.meta { white-space: pre-line; margin: 0 0 .5rem; overflow-wrap: anywhere; color: #333; }
.park { content-visibility: auto; contain-intrinsic-size: auto 22rem;
  background: #fff; border: 1px solid #d8d4c8; border-left: 4px solid #c98a1b;
  border-radius: 6px; padding: .7rem 1rem; margin: .8rem 0; }
.park h3 { margin: 0 0 .4rem; font-size: 1rem; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: 5rem 1fr; gap: .1rem .6rem; margin: 0 0 .5rem; }
dt { color: #666; } dd { margin: 0; overflow-wrap: anywhere; }
pre.arguments { background: #f3f1ea; padding: .5rem; border-radius: 4px; white-space: pre-wrap;
  overflow-wrap: anywhere; max-height: 30rem; overflow: auto; }
form.decide { display: flex; gap: .5rem; }
form.decide .note { flex: 1; padding: .3rem; }
button { padding: .3rem .9rem; border-radius: 4px; border: 1px solid #888; cursor: pointer; }
button.approve { background: #2f7d32; color: #fff; border-color: #2f7d32; }
button.deny { background: #fff; color: #a32020; border-color: #a32020; }
#flash p { margin: .3rem 0; padding: .4rem .6rem; border-radius: 4px; }
#flash .ok { background: #e5f3e5; } #flash .refused { background: #f8e1e1; }
.exposed { background: #f8e1e1; padding: .4rem .6rem; }
ul { padding-left: 1.2rem; } .outcome { margin: .4rem 0; }
.outcome .status { font-weight: 600; } .outcome.done .status { color: #2f7d32; }
.outcome.failed .status { color: #a32020; } .outcome.parked .status { color: #c98a1b; }
.answer { white-space: pre-wrap; color: #333; } .error { color: #a32020; }
table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .2rem .4rem;
  border-bottom: 1px solid #e5e2d8; vertical-align: top; overflow-wrap: anywhere; }
.empty { color: #777; } .problem { color: #a32020; }
"""

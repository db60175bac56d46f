"""Turn capture (C1) and consolidation (C2).

A captured turn keeps what the person asked and what was done (the tools that ran), never
the model's reply: a reply is the model's words, not a fact about the person. Consolidation
asks the configured model (an injected summarizer: the memory code never imports a
provider) for the durable facts the older turns show, each citing the turns it comes from;
only cited facts are written, each as its own semantic memory carrying its sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from butler_cli.core.errors import ButlerError
from butler_cli.core.messages import Message, TextBlock, ToolResultBlock
from butler_cli.memory.entries import Entry, new_id, now_ts
from butler_cli.memory.search import STOP_WORDS, query_terms
from butler_cli.memory.store import MemoryStore

SIDE_CAP = 1000
THRESHOLD_ENTRIES = 32
THRESHOLD_BYTES = 32 * 1024
KEEP_NEWEST = 8
#: The longest fact consolidation writes; a longer line is not a fact but a summary.
FACT_CAP = 300
#: The most facts one consolidation writes.
MAX_FACTS = 40
PROFILE_ROLE = "profile"
ASKED = "Asked: "
DONE = "Done: "
#: Memory tools are how the butler keeps notes, not something done for the person.
_NOT_DONE = frozenset({"recall", "remember", "forget"})

#: Takes a prompt, returns the model's text.
Summarizer = Callable[[str], str]


class ConsolidationError(ButlerError):
    code = "consolidation"


def _side(text: str, cap: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 1] + "…"


def actions_done(messages: Sequence[Message]) -> list[str]:
    """The tools that ran for the person in the last turn of ``messages`` (from the person's
    last words on), in order, once each: a call that failed, was refused or was not run is
    not something done."""
    starts = [
        i
        for i, m in enumerate(messages)
        if m.role == "user" and any(isinstance(b, TextBlock) for b in m.content)
    ]
    messages = messages[starts[-1] :] if starts else messages
    ran = {
        b.tool_use_id
        for m in messages
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.outcome == "ran" and not b.is_error
    }
    names = [
        c.name
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
        if c.id in ran and c.name not in _NOT_DONE
    ]
    return list(dict.fromkeys(names))


def turn_text(asked: str, done: Sequence[str] = (), cap: int = SIDE_CAP) -> str:
    """``Asked: …`` and, when tools ran, ``Done: tool, tool``, each on one line."""
    text = ASKED + _side(asked, cap)
    if done:
        text += "\n" + DONE + _side(", ".join(done), cap)
    return text


def capture_turn(
    store: MemoryStore, asked: str, done: Sequence[str] = (), cap: int = SIDE_CAP
) -> Entry | None:
    """Store what the person asked and what was done as an episodic entry; a failure never
    fails the turn."""
    if not asked.strip():
        return None
    try:
        return store.remember(turn_text(asked, done, cap), "episodic", {"source": "turn"})
    except Exception:
        return None


def due(store: MemoryStore) -> bool:
    return (
        store.count(["episodic"]) >= THRESHOLD_ENTRIES
        or store.total_chars("episodic") >= THRESHOLD_BYTES
    )


PROMPT = """You keep a personal assistant's long-term memory. Below are numbered excerpts of
what the person asked and what was done for them. Write the durable facts they show about the
person (preferences, people, places, projects, commitments), one per line, each ending with the
numbers of the excerpts it comes from in square brackets, for example:
- Ana is allergic to peanuts [3]
- Ana's sister Mei lives in Lisbon [1, 4]
Write only what the excerpts say. Skip small talk and one-off requests. If nothing is durable,
answer NONE.

Already remembered (do not repeat):
{known}

Excerpts (oldest first):
{episodes}
"""
_FACT = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*(?P<text>.+?)\s*\[(?P<cites>[\d,\s]+)\]\s*\.?\s*$")
_NONE = re.compile(r"^\W*none\W*$", re.IGNORECASE)


@dataclass(frozen=True)
class Fact:
    """One line of the model's answer that cites excerpts: its text and the cited numbers."""

    text: str
    cites: tuple[int, ...]


@dataclass(frozen=True)
class Consolidated:
    """What one consolidation did: the facts it wrote, how many turns it folded, and how many
    lines of the answer it left out (no citation, or one its excerpts do not bear out)."""

    facts: list[Entry] = field(default_factory=list)
    absorbed: int = 0
    dropped: int = 0


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _telling(text: str) -> set[str]:
    return {t for t in query_terms(text) if t not in STOP_WORDS}


def cited_facts(answer: str, excerpts: Sequence[str]) -> tuple[list[Fact], int]:
    """The answer's lines that cite only excerpts it was given and share a telling word with
    them (a citation the excerpts do not bear out is not one), once each; and how many other
    non-blank lines there were."""
    facts: list[Fact] = []
    seen: set[str] = set()
    dropped = 0
    for raw in answer.splitlines():
        if not raw.strip():
            continue
        m = _FACT.match(raw)
        cites = tuple(int(n) for n in re.findall(r"\d+", m.group("cites"))) if m else ()
        text = " ".join(m.group("text").split()) if m else ""
        ok = (
            m is not None
            and bool(cites)
            and all(1 <= n <= len(excerpts) for n in cites)
            and 0 < len(text) <= FACT_CAP
            and bool(_telling(text) & set().union(*(_telling(excerpts[n - 1]) for n in cites)))
            and _key(text) not in seen
            and len(facts) < MAX_FACTS
        )
        if not ok:
            dropped += 1
            continue
        seen.add(_key(text))
        facts.append(Fact(text, tuple(dict.fromkeys(cites))))
    return facts, dropped


def consolidate(
    store: MemoryStore, summarize: Summarizer, keep: int = KEEP_NEWEST
) -> Consolidated | None:
    """Fold all but the newest ``keep`` episodic entries into cited facts.

    An empty answer, or one with no line citing its excerpts, writes nothing and keeps every
    turn (ConsolidationError); an answer of NONE folds the turns and writes no fact. The new
    facts are written first and only then are the folded turns forgotten, so a failure at any
    point loses nothing. None when there is nothing to fold.
    """
    episodes = store.entries(["episodic"])  # M3 order; absorb the oldest by time
    episodes.sort(key=lambda e: (e.ts, e.id))
    absorb = episodes[:-keep] if keep else episodes
    if not absorb:
        return None
    known = {_key(e.text) for e in store.entries(["semantic"])}
    texts = [" ".join(e.text.split()) for e in absorb]
    prompt = PROMPT.format(
        known="\n".join(f"- {e.text}" for e in store.entries(["semantic"], 50)) or "(nothing yet)",
        episodes="\n".join(f"[{i}] {t}" for i, t in enumerate(texts, start=1)),
    )
    answer = summarize(prompt).strip()
    if not answer:
        raise ConsolidationError("the model's answer was empty; nothing was changed")
    if _NONE.match(answer):
        store.forget([e.id for e in absorb])
        return Consolidated([], len(absorb), 0)
    facts, dropped = cited_facts(answer, texts)
    if not facts:
        raise ConsolidationError(
            "the model's answer cited none of the turns it was given; nothing was changed"
        )
    fresh = [f for f in facts if _key(f.text) not in known]
    written = [
        Entry(
            new_id(),
            "semantic",
            f.text,
            now_ts(),
            {
                "role": PROFILE_ROLE,
                "source": "consolidation",
                "importance": 3,
                "cites": [
                    {"id": absorb[n - 1].id, "ts": absorb[n - 1].ts, "text": texts[n - 1]}
                    for n in f.cites
                ],
            },
        )
        for f in fresh
    ]
    store.add_entries(written)
    store.forget([e.id for e in absorb])
    return Consolidated(written, len(absorb), dropped)


def is_new_fact(entry: Entry) -> bool:
    """A fact the butler concluded itself (consolidation), not one the person gave."""
    return entry.kind == "semantic" and entry.meta.get("role") == PROFILE_ROLE


def cites(entry: Entry) -> list[str]:
    """The turns a consolidated fact cites, one line each (``[ID] (date) text``)."""
    found = entry.meta.get("cites")
    if not isinstance(found, list):
        return []
    return [
        f"[{c.get('id', '?')}] ({str(c.get('ts', ''))[:10]}) {c.get('text', '')}"
        for c in found
        if isinstance(c, dict)
    ]

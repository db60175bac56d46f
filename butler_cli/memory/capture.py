"""Turn capture (C1) and consolidation (C2).

Consolidation folds old episodic entries into one semantic *profile* with an injected
summarizer (the configured model): the memory code never imports a provider.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from butler_cli.core.errors import ButlerError
from butler_cli.memory.entries import Entry, new_id, now_ts
from butler_cli.memory.store import MemoryStore

SIDE_CAP = 1000
THRESHOLD_ENTRIES = 32
THRESHOLD_BYTES = 32 * 1024
KEEP_NEWEST = 8
PROFILE_CAP = 3000
PROFILE_ROLE = "profile"

#: Takes a prompt, returns the model's text.
Summarizer = Callable[[str], str]


class ConsolidationError(ButlerError):
    code = "consolidation"


def _side(text: str, cap: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 1] + "…"


def capture_turn(store: MemoryStore, user: str, reply: str, cap: int = SIDE_CAP) -> Entry | None:
    """Store ``User: …\\nButler: …`` as an episodic entry; a failure never fails the turn."""
    try:
        return store.remember(
            f"User: {_side(user, cap)}\nButler: {_side(reply, cap)}", "episodic", {"source": "turn"}
        )
    except Exception:
        return None


def due(store: MemoryStore) -> bool:
    return (
        store.count(["episodic"]) >= THRESHOLD_ENTRIES
        or store.total_chars("episodic") >= THRESHOLD_BYTES
    )


PROMPT = """You keep a personal assistant's long-term memory. Fold the previous profile and the
conversation excerpts below into one updated profile of the person: durable facts, preferences,
projects and commitments, as short bullet points. Drop small talk. At most {cap} characters.

Previous profile:
{previous}

Conversation excerpts (oldest first):
{episodes}
"""
COMPRESS = (
    "Shorten this profile to at most {cap} characters, keeping the most durable facts:\n\n{text}"
)


@dataclass(frozen=True)
class Consolidated:
    profile: Entry
    absorbed: int


def consolidate(
    store: MemoryStore, summarize: Summarizer, keep: int = KEEP_NEWEST, cap: int = PROFILE_CAP
) -> Consolidated | None:
    """Fold all but the newest ``keep`` episodic entries into a new profile.

    Writes the new profile first and only then forgets what it absorbed, so a failure at any
    point loses nothing. None when there is nothing to absorb.
    """
    episodes = store.entries(["episodic"])  # M3 order; absorb the oldest by time
    episodes.sort(key=lambda e: (e.ts, e.id))
    absorb = episodes[:-keep] if keep else episodes
    if not absorb:
        return None
    old_profiles = [e for e in store.entries(["semantic"]) if e.meta.get("role") == PROFILE_ROLE]
    previous = "\n".join(e.text for e in old_profiles) or "(none yet)"
    text = _summary(
        summarize,
        PROMPT.format(cap=cap, previous=previous, episodes="\n\n".join(e.text for e in absorb)),
        cap,
    )
    profile = Entry(new_id(), "semantic", text, now_ts(), {"role": PROFILE_ROLE, "importance": 4})
    store.add_entries([profile])
    store.forget([e.id for e in absorb] + [e.id for e in old_profiles])
    return Consolidated(profile, len(absorb))


def _summary(summarize: Summarizer, prompt: str, cap: int) -> str:
    text = summarize(prompt).strip()
    if not text:
        raise ConsolidationError("the summarizer returned an empty profile; nothing was changed")
    if len(text) > cap:
        text = summarize(COMPRESS.format(cap=cap, text=text)).strip()
        if not text or len(text) > cap:
            raise ConsolidationError(
                f"the summarizer's profile stayed over {cap} characters after one retry; "
                "nothing was changed"
            )
    return text

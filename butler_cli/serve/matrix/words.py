"""A person's reply or reaction to a park's card, read as a decision — or as nothing.

Only three shapes decide: ``approve`` / ``deny`` (every call, the rest of the message a note),
``each`` with one word per call in the round's order (the note goes with each denial), and a
reaction (👍 ✅ approve, 👎 ❌ deny). Nothing said here keeps an approval, widens a grant or
touches the policy: there is no word for it. Anything else is not a decision (the person is
told so), never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from butler_cli.app.parks.door import Answer
from butler_cli.core.park import Decision

YES = {"approve", "approved", "yes", "y", "ok", "👍", "✅", "✔", "✔️"}
NO = {"deny", "denied", "no", "n", "👎", "❌", "✖", "✖️"}
REACT_YES = {"👍", "👍️", "✅", "✔️", "✔"}
REACT_NO = {"👎", "👎️", "❌", "✖️", "✖"}


@dataclass(frozen=True)
class Read:
    """What a message says: an answer to the round, or why it is not one."""

    answer: Answer | None
    problem: str | None = None
    words: str = field(default="")


def reply_text(body: str) -> str:
    """The reply's own words: the quoted fallback (``> …`` lines and the blank line after
    them) that clients put before a reply is not what the person wrote."""
    lines = body.split("\n")
    while lines and lines[0].startswith(">"):
        lines.pop(0)
    if lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).strip()


def _word(token: str) -> bool | None:
    low = token.lower().strip(".,;:!")
    return True if low in YES else False if low in NO else None


def read_reply(text: str, call_ids: Sequence[str]) -> Read:
    """A reply's decision for a round asking about ``call_ids`` (in order)."""
    tokens = text.split()
    if not tokens:
        return Read(None, "an empty reply decides nothing")
    first = tokens[0].lower()
    if first == "each":
        words = tokens[1 : 1 + len(call_ids)]
        marks = [_word(w) for w in words]
        if len(words) < len(call_ids) or any(m is None for m in marks):
            return Read(
                None,
                f"`each` needs one word per action ({len(call_ids)}: approve or deny, in order)",
            )
        note = " ".join(tokens[1 + len(call_ids) :]) or None
        each = {
            cid: Decision(approved=bool(m), note=None if m else note)
            for cid, m in zip(call_ids, marks, strict=True)
        }
        return Read(Answer(False, note, each), words=" ".join(words))
    said = _word(tokens[0])
    if said is None:
        return Read(None, "a reply to a card says approve, deny or each (nothing was decided)")
    rest = re.split(r"\s+", text.strip(), maxsplit=1)[1:]
    return Read(Answer(said, rest[0] if rest else None), words=tokens[0])


def read_reaction(key: str) -> Read:
    """A reaction's decision: approve or deny, no note."""
    if key in REACT_YES:
        return Read(Answer(True, None), words=key)
    if key in REACT_NO:
        return Read(Answer(False, None), words=key)
    return Read(None, None)  # any other reaction is just a reaction

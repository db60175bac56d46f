"""Model-chosen text made safe to show: nothing it holds can move the cursor, erase a line,
set the window title, re-order or hide what a person reads — and no secret the butler knows
shows: :func:`visible` is the one step every shown line passes, masked (``app.masking``)
then neutralised.

Every such character is replaced by a visible stand-in, the same one on every surface:

- control characters (C0, DEL, C1) as JSON writes them: ``\\u001b``, ``\\r``, ``\\b``,
  ``\\n``, ``\\u009b``… — so a title, the arguments' JSON and free text agree;
- invisible formatting characters (bidi embeddings, overrides and isolates, zero-width
  characters, line and paragraph separators, private-use, unassigned and surrogate code
  points, Hangul fillers) as ``<U+XXXX>``.

Ordinary spaces of every width stay. Pure functions, no rich: ``butler pending`` stays fast.
"""

from __future__ import annotations

import json
import re
import textwrap
import unicodedata
from typing import Any

from butler_cli.app.run.masking import masked

_JSON_SHORT = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Printable to Python, yet drawn as nothing.
FILLERS = "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0"
_FILLER = re.compile(f"[{FILLERS}]")


def stand_in(ch: str) -> str:
    """The visible form of one character that must not reach the terminal as it is."""
    kind = unicodedata.category(ch)
    if kind == "Cc":
        return _JSON_SHORT.get(ch) or f"\\u{ord(ch):04x}"
    if kind == "Zs":
        return ch  # a space is a space, whatever its width
    return f"<U+{ord(ch):04X}>"


def _one_line(text: str) -> str:
    if text.isprintable() and not _FILLER.search(text):
        return text  # the common case, checked in C
    return "".join(ch if ch.isprintable() and ch not in FILLERS else stand_in(ch) for ch in text)


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` with every known secret ``****`` and every control and invisible character
    shown as its stand-in.

    With ``lines`` (answers, memory, pretty JSON), line breaks and tabs stay as they are (a
    ``\\r\\n`` counts as a line break); otherwise they are shown too (``\\n``, ``\\t``)."""
    text = masked(text)
    if not lines:
        return _one_line(text)
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return "\n".join(
        "\t".join(_one_line(part) for part in line.split("\t")) for line in text.split("\n")
    )


def pretty_json(value: Any) -> str:
    """Indented JSON for a person: JSON's own escapes, then the rest neutralised alike."""
    return visible(json.dumps(value, indent=2, ensure_ascii=False), lines=True)


def wrapped(line: str, width: int, indent: int | None = None) -> str:
    """``line`` folded between words to ``width`` columns (a word longer than a line is cut
    across lines, never dropped), its later lines indented by ``indent`` (by default two more
    than the line's own indent): a plain line fits the screen without the terminal folding it
    mid-word. Never at a hyphen: a path or a flag stays whole where it fits."""
    if len(line) <= width or width < 8:
        return line
    if indent is None:
        indent = len(line) - len(line.lstrip(" ")) + 2
    indent = min(indent, width // 2)
    return "\n".join(
        textwrap.wrap(line, width, subsequent_indent=" " * indent, break_on_hyphens=False)
    )

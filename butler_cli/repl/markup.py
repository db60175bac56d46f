"""rich's markup escaping, imported on first use: the chat draws its first prompt before rich
is loaded (rich costs ~50 ms to import here)."""

from __future__ import annotations


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)

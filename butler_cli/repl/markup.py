"""rich's markup escaping, imported on first use: the chat draws its first prompt before rich
is loaded (rich costs ~50 ms to import here). Model-chosen text is neutralised first (see
``butler_cli.ui.text``). This module itself imports nothing, so the slash-command table and
the session, made before the first prompt, can name these for free."""

from __future__ import annotations

from typing import Any


def escape(text: str, *, lines: bool = False) -> str:
    """:func:`butler_cli.ui.markup.safe`: ``text`` shown exactly inside rich markup."""
    from butler_cli.ui.markup import safe

    return safe(text, lines=lines)


def markdown(text: str) -> Any:
    """:func:`butler_cli.ui.markup.markdown`: a model's answer as rich Markdown, neutralised."""
    from butler_cli.ui.markup import markdown as answer

    return answer(text)


__all__ = ["escape", "markdown"]

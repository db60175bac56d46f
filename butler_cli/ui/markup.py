"""Model-chosen text for rich: neutralised (see ``ui.text``), then escaped so it is never read
as markup. rich is imported on first use: the chat draws its first prompt before rich loads."""

from __future__ import annotations

from typing import Any

from butler_cli.ui.text import visible


def safe(text: str, *, lines: bool = False) -> str:
    """``text`` to put inside a rich markup string: shown exactly, controls made visible."""
    from rich.markup import escape

    return escape(visible(text, lines=lines))


def markdown(text: str) -> Any:
    """A model's answer as rich Markdown, neutralised first: no raw escape reaches the screen
    through a paragraph, a code block or a link."""
    from rich.markdown import Markdown

    return Markdown(visible(text, lines=True), hyperlinks=False)

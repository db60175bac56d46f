"""rich's markup escaping, imported on first use: the chat draws its first prompt before rich
is loaded (rich costs ~50 ms to import here). Model-chosen text is neutralised first (see
``butler_cli.ui.text``)."""

from __future__ import annotations

from butler_cli.ui.markup import markdown, safe

escape = safe

__all__ = ["escape", "markdown"]

"""Where a streaming answer taller than the screen may be cut, so its settled part is printed
for good and only the rest stays in the live region.

rich's live region cannot scroll: what does not fit is cropped with "..." until the answer
ends. Cutting at a block boundary (a blank line outside a code fence) leaves the Markdown
rendering as it would whole; inside a long code block the fence is closed in the settled part
and opened again in the rest; a single paragraph taller than the screen is cut at a line end.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
#: Rows kept free below the live region (the margin Markdown's own spacing needs).
MARGIN = 4


def rows(text: str, width: int) -> int:
    """About how many screen rows ``text`` takes at ``width`` columns (wrapping counted)."""
    width = max(width, 1)
    return sum(max(1, -(-len(line) // width)) for line in text.split("\n"))


def settle(text: str, width: int, height: int) -> tuple[str, str] | None:
    """``(settled, rest)`` when ``text`` no longer fits on a ``height``-row screen and a cut
    exists; None while it fits. The last line may still be growing, so it is never cut."""
    if rows(text, width) < height - MARGIN:
        return None
    lines = text.split("\n")
    fence: str | None = None  # the opening line of the fence we are in
    blank: int | None = None  # the last blank line outside a fence
    for i, line in enumerate(lines[:-1]):
        found = FENCE.match(line)
        if found is not None:
            if fence is None:
                fence = line
            elif found.group(1)[0] == fence.lstrip()[0]:
                fence = None
        elif fence is None and not line.strip() and any(s.strip() for s in lines[:i]):
            blank = i
    complete = len(lines) - 1  # lines[:complete] are whole
    if blank is not None:
        rest = "\n".join(lines[blank + 1 :])
        if fence is None or rows(rest, width) < height - MARGIN:
            return "\n".join(lines[:blank]), rest
    if fence is not None and complete > 1:
        marker = FENCE.match(fence)
        assert marker is not None
        settled = "\n".join([*lines[:complete], marker.group(1)])
        return settled, "\n".join([fence, *lines[complete:]])
    if complete >= 1 and any(s.strip() for s in lines[:complete]):
        return "\n".join(lines[:complete]), "\n".join(lines[complete:])
    return None

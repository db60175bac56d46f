"""An edit's unified diff made from where its ``old_string`` occurs, in time linear in the
file: difflib over a whole file took minutes for a ``replace_all`` touching every seventh line
of a 100,000-line CSV (an ordinary edit), and the approval box, `show` and the inbox page
waited all that time. Only the lines an occurrence touches are compared (difflib, when they
are few), with three lines of context around each, merged into hunks as ``diff -u`` does.
A write's diff (:func:`whole_diff`) is difflib's for small files and linear past that.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Iterator

#: Lines of context around a change, as ``diff -u``.
CONTEXT = 3
#: A changed stretch longer than this is shown as all its old lines, then all its new ones.
BIG = 2000


def _split(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _spans(text: str, old: str, every: bool) -> list[tuple[int, int]]:
    """The character spans ``str.replace`` replaces (non-overlapping, left to right)."""
    out: list[tuple[int, int]] = []
    at = text.find(old)
    while at >= 0:
        out.append((at, at + len(old)))
        if not every:
            break
        at = text.find(old, at + len(old))
    return out


def _range(start: int, count: int) -> str:
    """A hunk's range as ``diff -u`` writes it (difflib's ``_format_range_unified``)."""
    first = start + 1 if count else start
    return str(first) if count == 1 else f"{first},{count}"


def _changed(old: list[str], new: list[str]) -> Iterator[str]:
    """The lines of one changed stretch, minimal where it is small."""
    if len(old) > BIG or len(new) > BIG:
        yield from (f"-{line}" for line in old)
        yield from (f"+{line}" for line in new)
        return
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, False).get_opcodes():
        if tag == "equal":
            yield from (f" {line}" for line in old[i1:i2])
            continue
        yield from (f"-{line}" for line in old[i1:i2])
        yield from (f"+{line}" for line in new[j1:j2])


#: Lines past which two whole files are not handed to difflib (quadratic: 10,000 lines with
#: every seventh changed took 4 s, 100,000 minutes).
SMALL = 4000


def whole_diff(old: list[str], new: list[str], shown: str) -> list[str]:
    """The unified diff of two files' lines (``--- now`` / ``+++ after``): difflib's when
    they are small; else, in linear time, the lines they share at either end as context and
    everything between shown as removed, then added — every line that changes, shown."""
    if len(old) + len(new) <= SMALL:
        return list(
            difflib.unified_diff(old, new, f"{shown} (now)", f"{shown} (after)", lineterm="")
        )
    top = 0
    while top < min(len(old), len(new)) and old[top] == new[top]:
        top += 1
    end = 0
    while end < min(len(old), len(new)) - top and old[-1 - end] == new[-1 - end]:
        end += 1
    if top == len(old) == len(new):
        return []
    first = max(0, top - CONTEXT)
    after = min(end, CONTEXT)
    body = [f" {line}" for line in old[first:top]]
    body += [f"-{line}" for line in old[top : len(old) - end]]
    body += [f"+{line}" for line in new[top : len(new) - end]]
    body += [f" {line}" for line in old[len(old) - end : len(old) - end + after]]
    old_count = len(old) - end + after - first
    new_count = len(new) - end + after - first
    head = f"@@ -{_range(first, old_count)} +{_range(first, new_count)} @@"
    return [f"--- {shown} (now)", f"+++ {shown} (after)", head, *body]


def edit_diff(text: str, old: str, new: str, every: bool, shown: str) -> list[str]:
    """The unified diff (``--- now`` / ``+++ after``) of ``text`` with the edit made; empty
    when no line changes (only a final newline moved)."""
    lines = _split(text)
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    # each occurrence's first and last line, merged when they share a line
    groups: list[list[int]] = []
    for s, e in _spans(text, old, every):
        first = bisect.bisect_right(starts, s) - 1
        # the line the occurrence ends in, or the next one when it ends with a newline (what
        # follows is joined to the new text)
        last = bisect.bisect_right(starts, e) - 1
        if groups and first <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], last)
        else:
            groups.append([first, last])
    # each group's old and new lines (the occurrences inside it replaced)
    changes: list[tuple[int, int, list[str], list[str]]] = []
    for first, last in groups:
        end = starts[last + 1] if last + 1 < len(starts) else len(text)
        seg = text[starts[first] : end]
        after = seg.replace(old, new) if every else seg.replace(old, new, 1)
        was, now = _split(seg), _split(after)
        if was != now:
            changes.append((first, first + len(was), was, now))
    if not changes:
        return []
    out = [f"--- {shown} (now)", f"+++ {shown} (after)"]
    shift = 0  # new line number minus old, before the change being written
    i = 0
    while i < len(changes):
        # a hunk: changes whose contexts meet
        j = i
        while j + 1 < len(changes) and changes[j + 1][0] - changes[j][1] <= 2 * CONTEXT:
            j += 1
        top = max(0, changes[i][0] - CONTEXT)
        bottom = min(len(lines), changes[j][1] + CONTEXT)
        body: list[str] = [f" {line}" for line in lines[top : changes[i][0]]]
        grown = 0
        for k in range(i, j + 1):
            a, b, was, now = changes[k]
            body += _changed(was, now)
            grown += len(now) - len(was)
            upto = changes[k + 1][0] if k < j else bottom
            body += [f" {line}" for line in lines[b:upto]]
        old_count = bottom - top
        new_count = old_count + grown
        out.append(f"@@ -{_range(top, old_count)} +{_range(top + shift, new_count)} @@")
        out += body
        shift += grown
        i = j + 1
    return out

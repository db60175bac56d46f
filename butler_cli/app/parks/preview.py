"""A parked call's effect shown as a change (issue 22 item 4), as plain lines.

Computed when the park is shown, against the path the call resolves to *now* (symlinks
followed, relative to the park's folder, as the file tools resolve it): an overwrite is a
unified diff of the file as it is now against the exact content that would be written; a new
file is that content with line numbers; a delete or a move names what is lost. If the file
changes after it is shown, the approved call still writes exactly the content shown; the diff
only tells what it replaces. The lines are raw: the screen showing them neutralises each
(``ui.text.visible``: secrets masked, control and invisible characters shown) and crops
nothing — a long change is paged there.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler_cli.app.parks.edit_diff import edit_diff, whole_diff
from butler_cli.tools import edit
from butler_cli.tools.paths import resolve


@dataclass(frozen=True, slots=True)
class Preview:
    """What a call would change, as lines, and the arguments those lines show whole (a new
    file's or a diff's content): the approval box need not show those a second time."""

    lines: list[str]
    shows: frozenset[str] = frozenset()


def lines_of(count: int, word: str = "line") -> str:
    """``1 line``, ``2 lines``: a count with its noun in the right number."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def change_preview(tool: str, args: dict[str, Any], cwd: str) -> Preview:
    """The lines that show what ``tool`` with ``args`` would change; empty when the tool
    changes no file this knows how to show."""
    try:
        if tool == "write_file" and isinstance(args.get("content"), str):
            return _write(resolve(Path(cwd), args.get("path")), args["content"])
        if tool == "edit_file":
            return _edit(resolve(Path(cwd), args.get("path")), args)
        if tool == "delete_file":
            return Preview(_lost("deletes", resolve(Path(cwd), args.get("path"))))
        if tool == "move_path":
            src = resolve(Path(cwd), args.get("src"))
            dst = resolve(Path(cwd), args.get("dst"))
            lines = [f"moves {src} → {dst}"]
            if os.path.lexists(dst):
                lines += _lost("replaces", dst)
            return Preview(lines)
    except ValueError as exc:  # an unusable path: the call itself will be refused
        return Preview([f"(no preview: {exc})"])
    except OSError as exc:  # a name too long, a folder that cannot be read: still shown
        return Preview([f"(no preview: {exc.strerror or exc})"])
    return Preview([])


def preview_paths(tool: str, args: dict[str, Any], cwd: str) -> list[str]:
    """The files :func:`change_preview` reads for this call: a rendered preview is old once
    what one of them names changes. Each as it resolves now, and as written joined to the
    folder (``os.stat`` follows it afresh: a symlink re-pointed later shows there)."""
    names = {
        "write_file": ("path",),
        "edit_file": ("path",),
        "delete_file": ("path",),
        "move_path": ("src", "dst"),
    }
    paths = []
    for name in names.get(tool, ()):
        written = args.get(name)
        if isinstance(written, str):
            paths.append(os.path.join(cwd, written))
        try:
            paths.append(str(resolve(Path(cwd), written)))
        except (ValueError, OSError):
            continue
    return paths


def _bytes(path: Path) -> bytes:
    """The bytes of the regular file at ``path`` now. Opened without blocking and judged by
    the file opened: a FIFO put at the path after the park (a sandboxed ``mkfifo``) hung
    `show`, `resume` and the inbox page for ever; it is an OSError like any unreadable file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > edit.EDIT_CAP:  # a disk image, a log: never read whole to be diffed
            raise OSError(errno.EFBIG, f"{info.st_size} bytes, too large to compare")
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    finally:
        os.close(fd)


def _read(path: Path) -> str | None:
    """The file's text now, or None when it is not a readable text file."""
    try:
        data = _bytes(path)
    except OSError:
        return None
    if b"\x00" in data:
        return None
    return data.decode("utf-8", "replace")


def _split(text: str) -> list[str]:
    """The file's lines as the file tools write them: broken at ``\n`` only (``\r``, U+2028
    and the like stay in their line, where the screen shows them), no empty last line."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _no_newline(content: str) -> list[str]:
    return ["(no newline at the end)"] if content and not content.endswith("\n") else []


def _write(path: Path, content: str) -> Preview:
    shown = str(path)
    whole = frozenset({"content"})  # each way below shows every line the file will hold
    new = _split(content)
    if not path.exists():
        lines = [f"new file {shown} ({lines_of(len(new))}):"]
        width = len(str(max(len(new), 1)))
        lines += [f"{n:>{width}} | {line}" for n, line in enumerate(new, 1)]
        return Preview(lines + _no_newline(content), whole)
    size = path.stat().st_size if path.is_file() else 0
    if size > edit.EDIT_CAP:  # the content is shown as the call's argument instead
        return Preview([f"overwrites {shown}, which is {size} bytes now: too large to compare"])
    old = _read(path) if path.is_file() else None
    if old is None:
        return Preview(
            [f"overwrites {shown}, which is not a readable text file now (nothing to compare)"]
        )
    if old == content:
        return Preview([f"rewrites {shown} with the same content it has now (no change)"], whole)
    head = f"overwrites {shown} (compared with the file as it is now):"
    if _split(old) == new:  # the same lines: only the end differs
        end = "with" if content.endswith("\n") else "without"
        return Preview([head, f"only the end changes: the file will end {end} a newline"], whole)
    diff = whole_diff(_split(old), new, shown)
    return Preview([head, *diff, *_no_newline(content)], whole)


def _edit(path: Path, args: dict[str, Any]) -> Preview:
    """An edit as the diff it makes to the file it was judged on; when the file is no longer
    that file, says so (approving it then changes nothing: the run refuses)."""
    shown = str(path)
    try:
        data = _bytes(path)
    except OSError as exc:
        return Preview([f"edits {shown}, which cannot be read now ({exc.strerror or exc})"])
    if edit.digest(data) != args.get(edit.DIGEST_KEY):
        return Preview(
            [
                f"edits {shown}, which changed since this edit was asked for: approving it "
                "changes nothing (the run refuses, and the model is told)"
            ]
        )
    try:
        new, count = edit.edited(edit.decoded(data, path), args)
    except ValueError as exc:
        return Preview([f"(no preview: {exc})"])
    diff = edit_diff(
        data.decode("utf-8"),
        args["old_string"],
        args["new_string"],
        args.get("replace_all") is True,
        shown,
    )
    head = f"edits {shown} ({count} place{'' if count == 1 else 's'}, the file as it is now):"
    # The diff shows the whole effect of the strings it was made from (unless only a final
    # newline moved: then they are shown as arguments too).
    whole = frozenset({"old_string", "new_string", "replace_all", edit.DIGEST_KEY})
    return Preview([head, *diff], whole if diff else frozenset())


def _lost(verb: str, path: Path) -> list[str]:
    shown = str(path)
    if not os.path.lexists(path):
        return [f"{verb} {shown}, which does not exist now"]
    if path.is_dir():
        return [f"{verb} the folder {shown}"]
    size = path.stat().st_size if path.exists() else 0
    text = _read(path)
    count = f", {lines_of(len(text.splitlines()))}" if text is not None else ""
    return [f"{verb} {shown} ({size} bytes{count})"]

"""The person's ``$EDITOR`` (else ``$VISUAL``, else vi), checked before it runs: it runs with
their rights, outside the sandbox, so a program (or a folder above it) that someone else owns,
that others may write, or that lies where sandboxed programs may write is refused in one line
(:func:`butler_cli.tools.trusted.refusal`, like ssh's StrictModes). `butler config edit` and
the chat's `/editor` and Ctrl-X Ctrl-E use it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from butler_cli.core.errors import Untrusted, UsageError
from butler_cli.tools.trusted import program_path, refusal


def editor_argv(write_roots: Sequence[Path]) -> list[str]:
    """The editor's argv (its program resolved to a path and checked), without the file."""
    editor = os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi"
    try:
        argv = shlex.split(editor) or ["vi"]
    except ValueError as exc:
        raise UsageError(f"cannot start the editor {editor!r}: {exc}") from None
    program = program_path(argv[0])
    if program is None:
        raise UsageError(f"cannot start the editor {editor!r}: it was not found")
    problem = refusal(program, write_roots, what="the editor")
    if problem is not None:
        raise Untrusted(problem)
    return [str(program), *argv[1:]]


def run_editor(path: Path, write_roots: Sequence[Path]) -> None:
    """Open ``path`` in the checked editor and wait for it; a usage error when it cannot
    start or does not exit 0."""
    argv = editor_argv(write_roots)
    try:
        done = subprocess.run([*argv, str(path)], check=False)
    except OSError as exc:
        raise UsageError(f"cannot start the editor {argv[0]!r}: {exc.strerror}") from exc
    if done.returncode != 0:
        raise UsageError(f"the editor {argv[0]!r} exited with {done.returncode}")


def compose(text: str, write_roots: Sequence[Path]) -> str:
    """``text`` edited in the person's editor (a fresh 0600 file in a private folder, removed
    afterwards): what they saved, its final line break dropped."""
    with tempfile.TemporaryDirectory(prefix="butler-") as folder:
        path = Path(folder) / "message.md"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        run_editor(path, write_roots)
        saved = path.read_text(encoding="utf-8", errors="replace")
    return saved.removesuffix("\n")

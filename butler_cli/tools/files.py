"""File tools: benign ``read_file`` / ``list_dir`` / ``search_files``; governed ``write_file`` /
``edit_file`` (``tools/edit.py``) / ``delete_file`` / ``move_path``. Every path is resolved
(symlinks, ``..``) before it is checked.

The governed tools run on the paths the gate judged (see :class:`PathRules`) and open them
one folder at a time without following links, so the file checked is the file changed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import butler_cli.tools.edit as edit
from butler_cli.api import (
    Classifier,
    FunctionToolset,
    Gate,
    ToolSpec,
    Verdict,
    approve,
    default_title,
    refuse,
)
from butler_cli.tools.paths import PathRules, default_roots, is_inside, open_dir, read_regular

READ_CAP = 64 * 1024
LIST_CAP = 500

_PATH_ONLY = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "File path"}},
    "required": ["path"],
}
_WRITE = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File path"},
        "content": {"type": "string", "description": "The whole new content"},
    },
    "required": ["path", "content"],
}
_SEARCH = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Glob, e.g. **/*.md"},
        "root": {"type": "string", "description": "Folder to search (default: the task's)"},
    },
    "required": ["pattern"],
}
_MOVE = {
    "type": "object",
    "properties": {"src": {"type": "string"}, "dst": {"type": "string"}},
    "required": ["src", "dst"],
}
#: Which arguments of each governed file tool are paths (every one is checked).
_PATH_KEYS = {
    "write_file": ("path",),
    "edit_file": ("path",),
    "delete_file": ("path",),
    "move_path": ("src", "dst"),
}
_DEFAULT = approve("changes files on your machine — asking you first")
#: Deleting is never kept as a lasting approval: asked every time.
_DELETE = approve("deletes a file on your machine — asking you first", ask_always=True)


class FileTools:
    """File tools bound to a working directory (recorded in parks) and the butler's home."""

    def __init__(
        self,
        base_dir: Path,
        home: Path,
        protected: Sequence[Path] = (),
        roots: Sequence[Path] | None = None,
    ) -> None:
        self.base = base_dir
        self.home = home
        self.roots = list(roots) if roots is not None else default_roots(base_dir)
        #: Files the agent must not touch wherever they live (config, policy files).
        self.protected = list(protected)
        self.paths = PathRules(base_dir, home, self.protected, self.roots)

    def _path(self, args: dict[str, Any], key: str = "path") -> Path:
        return self.paths.readable(args.get(key))

    # -- benign ----------------------------------------------------------------------------
    def read_file(self, args: dict[str, Any]) -> str:
        data, size = read_regular(self.paths, args.get("path"), READ_CAP + 1)
        text = data[:READ_CAP].decode("utf-8", errors="replace")
        if len(data) > READ_CAP:
            text += f"\n[butler: cut at {READ_CAP} bytes of {size}; the rest was not read]"
        return text

    def list_dir(self, args: dict[str, Any]) -> str:
        path = self._path(args)
        entries = sorted(
            (p for p in path.iterdir() if not self.paths.off_limits(Path(os.path.realpath(p)))),
            key=lambda p: p.name,
        )
        lines = [f"{p.name}/" if p.is_dir() else p.name for p in entries[:LIST_CAP]]
        if len(entries) > LIST_CAP:
            lines.append(f"[butler: {len(entries) - LIST_CAP} more entries not shown]")
        return "\n".join(lines) if lines else "(empty directory)"

    def search_files(self, args: dict[str, Any]) -> str:
        """Files under ``root`` whose path relative to it matches the glob ``pattern``."""
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
            raise ValueError("'pattern' must be a glob such as '**/*.md'")
        if pattern.startswith(("/", "~")) or ".." in PurePosixPath(pattern).parts:
            raise ValueError(
                "'pattern' stays inside its root: no absolute path, no '~', no '..' "
                "(to search elsewhere, give 'root')"
            )
        root = self._path({"path": args.get("root") or "."})
        found: list[str] = []
        for match in root.glob(pattern):
            real = Path(os.path.realpath(match))
            if not is_inside(real, root) or self.paths.off_limits(real):
                continue  # never list outside the root, nor the butler's own files
            found.append(str(match.relative_to(root)))
            if len(found) > LIST_CAP:
                break
        lines = sorted(found[:LIST_CAP])
        if len(found) > LIST_CAP:
            lines.append(f"[butler: more than {LIST_CAP} matches; narrow the pattern]")
        return "\n".join(lines) if lines else "No matching files."

    def benign(self) -> FunctionToolset:
        """Reading only, in this process (``read_only``: no gate watch after them)."""
        search = ToolSpec(
            "search_files", "Find files by glob under a root.", _SEARCH, read_only=True
        )
        read = ToolSpec("read_file", "Read a text file.", _PATH_ONLY, read_only=True)
        listing = ToolSpec("list_dir", "List a directory.", _PATH_ONLY, read_only=True)
        return FunctionToolset(
            [
                (read, self.read_file),
                (listing, self.list_dir),
                (search, self.search_files),
            ]
        )

    # -- governed --------------------------------------------------------------------------
    def guard(self, name: str, args: dict[str, Any]) -> Verdict | None:
        """A path argument left out is refused early (the gate resolved and checked the rest:
        the butler's own files, the allowed roots, links — see PathRules.resolve)."""
        for key in _PATH_KEYS.get(name, ("path",)):
            if key not in args:
                return refuse(f"'{key}' must be a non-empty string")
        if name == "edit_file":  # an edit that does not apply is the model's to fix: no park
            problem = edit.check(Path(args["path"]), args)
            if problem is not None:
                return refuse(problem)
        return None

    def describe(self, name: str, args: dict[str, Any]) -> str:
        """A title a person reads at a glance, the path first — resolved, as it is judged and
        acted on (``write_file: /home/ana/notes/plan.txt (120 characters)``); the arguments
        as JSON when they do not resolve (the call is refused then anyway)."""
        try:
            if name == "move_path":
                src = self.paths.resolve(name, "src", args.get("src"))
                dst = self.paths.resolve(name, "dst", args.get("dst"))
                return f"move_path: {src} → {dst}"
            path = self.paths.resolve(name, "path", args.get("path"))
        except (ValueError, OSError):
            return default_title(name, args)
        content = args.get("content")
        if name == "edit_file":
            old, new = args.get("old_string"), args.get("new_string")
            if isinstance(old, str) and isinstance(new, str):
                every = "every occurrence of " if args.get("replace_all") is True else ""
                return f"edit_file: {path} (replaces {every}{len(old)} characters with {len(new)})"
        if name == "write_file" and isinstance(content, str):
            lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
            counted = f"{lines} line{'' if lines == 1 else 's'}"
            return f"write_file: {path} ({len(content)} characters, {counted})"
        return f"{name}: {path}"

    def execute(self, name: str, args: dict[str, Any]) -> str:
        """Run on the judged paths (resolved, checked again by the gate just now), walking to
        each without following a link, so the file changed is the file checked."""
        if name == "write_file":
            content = args.get("content")
            if not isinstance(content, str):
                raise ValueError("'content' must be a string")
            return _write(Path(args["path"]), content)
        if name == "edit_file":
            return edit.apply(Path(args["path"]), args, self.paths.identities())
        if name == "move_path":
            return _move(Path(args["src"]), Path(args["dst"]))
        if name == "delete_file":
            return _delete(Path(args["path"]))
        raise ValueError(f"unknown file tool {name}")

    def seal(self, name: str, args: dict[str, Any], judged: dict[str, Any]) -> dict[str, Any]:
        """An edit's arguments as recorded: with the digest of the file it is judged on."""
        return edit.seal(args, judged) if name == "edit_file" else args

    def governed(self, policy: Classifier | None) -> Gate:
        return Gate(
            [
                ToolSpec(
                    "write_file", "Create or overwrite a text file.", _WRITE, _DEFAULT, ("path",)
                ),
                ToolSpec("edit_file", edit.DESCRIPTION, edit.SCHEMA, _DEFAULT, ("path",)),
                ToolSpec("delete_file", "Delete a file.", _PATH_ONLY, _DELETE, ("path",)),
                ToolSpec(
                    "move_path", "Move or rename a file or folder.", _MOVE, _DEFAULT, ("src", "dst")
                ),
            ],
            self.execute,
            policy=policy,
            describer=self.describe,
            guard=self.guard,
            paths=self.paths,
            sealer=self.seal,
        )


def _write(path: Path, content: str) -> str:
    folder = open_dir(path.parent, create=True)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path.name, flags, 0o666, dir_fd=folder)
    finally:
        os.close(folder)
    data = content.encode("utf-8")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return f"wrote {len(data)} bytes to {path}"


def _delete(path: Path) -> str:
    folder = open_dir(path.parent)
    try:
        mode = os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(f"{path} is a directory; delete_file removes files only")
        if stat.S_ISLNK(mode):
            raise PermissionError(f"{path} is now a symbolic link; nothing was deleted")
        os.unlink(path.name, dir_fd=folder)
    finally:
        os.close(folder)
    return f"deleted {path}"


def _move(src: Path, dst: Path) -> str:
    src_dir = open_dir(src.parent)
    try:
        dst_dir = open_dir(dst.parent)
        try:
            try:
                os.stat(dst.name, dir_fd=dst_dir, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                raise FileExistsError(f"{dst} already exists; move_path never overwrites")
            os.rename(src.name, dst.name, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
        finally:
            os.close(dst_dir)
    finally:
        os.close(src_dir)
    return f"moved {src} to {dst}"

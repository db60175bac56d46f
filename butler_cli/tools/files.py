"""File tools: benign ``read_file`` / ``list_dir`` / ``search_files``; governed ``write_file`` /
``delete_file`` / ``move_path``. Every path is resolved (symlinks, ``..``) before it is checked."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from butler_cli.core.gate import Gate, Policy
from butler_cli.core.toolsets import FunctionToolset, ToolSpec
from butler_cli.core.verdicts import Verdict, approve, refuse
from butler_cli.tools.paths import (
    default_roots,
    home_refusal,
    is_inside,
    resolve,
    root_refusal,
)

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
_PATH_KEYS = {"write_file": ("path",), "delete_file": ("path",), "move_path": ("src", "dst")}
_DEFAULT = approve("changes files on your machine — asking you first")


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
        #: Files the agent must not touch wherever they live (the active policy file).
        self.protected = list(protected)

    def _path(self, args: dict[str, Any], key: str = "path") -> Path:
        path = resolve(self.base, args.get(key))
        problem = home_refusal(path, self.home) or root_refusal(path, self.roots)
        for guarded in self.protected:
            if is_inside(path, guarded):
                problem = f"{path} is the active policy file; the agent cannot change its own rules"
        if problem:
            raise PermissionError(problem)
        return path

    # -- benign ----------------------------------------------------------------------------
    def read_file(self, args: dict[str, Any]) -> str:
        path = self._path(args)
        with path.open("rb") as fh:
            data = fh.read(READ_CAP + 1)
        text = data[:READ_CAP].decode("utf-8", errors="replace")
        if len(data) > READ_CAP:
            size = path.stat().st_size
            text += f"\n[butler: cut at {READ_CAP} bytes of {size}; the rest was not read]"
        return text

    def list_dir(self, args: dict[str, Any]) -> str:
        path = self._path(args)
        entries = sorted(path.iterdir(), key=lambda p: p.name)
        lines = [f"{p.name}/" if p.is_dir() else p.name for p in entries[:LIST_CAP]]
        if len(entries) > LIST_CAP:
            lines.append(f"[butler: {len(entries) - LIST_CAP} more entries not shown]")
        return "\n".join(lines) if lines else "(empty directory)"

    def search_files(self, args: dict[str, Any]) -> str:
        """Files under ``root`` whose path relative to it matches the glob ``pattern``."""
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
            raise ValueError("'pattern' must be a glob such as '**/*.md'")
        root = self._path({"path": args.get("root") or "."})
        found: list[str] = []
        for match in root.glob(pattern):
            if home_refusal(Path(os.path.realpath(match)), self.home):
                continue  # never list the butler's own files
            found.append(str(match.relative_to(root)))
            if len(found) > LIST_CAP:
                break
        lines = sorted(found[:LIST_CAP])
        if len(found) > LIST_CAP:
            lines.append(f"[butler: more than {LIST_CAP} matches; narrow the pattern]")
        return "\n".join(lines) if lines else "No matching files."

    def benign(self) -> FunctionToolset:
        search = ToolSpec("search_files", "Find files by glob under a root.", _SEARCH)
        return FunctionToolset(
            [
                (ToolSpec("read_file", "Read a text file.", _PATH_ONLY), self.read_file),
                (ToolSpec("list_dir", "List a directory.", _PATH_ONLY), self.list_dir),
                (search, self.search_files),
            ]
        )

    # -- governed --------------------------------------------------------------------------
    def guard(self, name: str, args: dict[str, Any]) -> Verdict | None:
        """X6: refuse the butler's home whatever the policy says (and bad paths early)."""
        try:
            for key in _PATH_KEYS.get(name, ("path",)):
                self._path(args, key)
        except (PermissionError, ValueError) as exc:
            return refuse(str(exc))
        return None

    def execute(self, name: str, args: dict[str, Any]) -> str:
        keys = _PATH_KEYS.get(name, ("path",))
        paths = [self._path(args, key) for key in keys]  # checked again: the disk may change
        path = paths[0]
        if name == "write_file":
            content = args.get("content")
            if not isinstance(content, str):
                raise ValueError("'content' must be a string")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            return f"wrote {len(content.encode('utf-8'))} bytes to {path}"
        if name == "move_path":
            src, dst = self._path(args, "src"), self._path(args, "dst")
            if dst.exists():
                raise FileExistsError(f"{dst} already exists; move_path never overwrites")
            os.rename(src, dst)
            return f"moved {src} to {dst}"
        if name == "delete_file":
            if path.is_dir():
                raise IsADirectoryError(f"{path} is a directory; delete_file removes files only")
            path.unlink()
            return f"deleted {path}"
        raise ValueError(f"unknown file tool {name}")

    def governed(self, policy: Policy | None) -> Gate:
        return Gate(
            [
                ToolSpec("write_file", "Create or overwrite a text file.", _WRITE, _DEFAULT),
                ToolSpec("delete_file", "Delete a file.", _PATH_ONLY, _DEFAULT),
                ToolSpec("move_path", "Move or rename a file or folder.", _MOVE, _DEFAULT),
            ],
            self.execute,
            policy=policy,
            guard=self.guard,
        )

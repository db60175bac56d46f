"""File tools: benign ``read_file`` / ``list_dir``; governed ``write_file`` / ``delete_file``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from butler_cli.core.gate import Gate, Policy
from butler_cli.core.toolsets import FunctionToolset, ToolSpec
from butler_cli.core.verdicts import Verdict, approve, refuse
from butler_cli.tools.paths import home_refusal, is_inside, resolve

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
_DEFAULT = approve("changes files on your machine — asking you first")


class FileTools:
    """File tools bound to a working directory (recorded in parks) and the butler's home."""

    def __init__(self, base_dir: Path, home: Path, protected: Sequence[Path] = ()) -> None:
        self.base = base_dir
        self.home = home
        #: Files the agent must not touch wherever they live (the active policy file).
        self.protected = list(protected)

    def _path(self, args: dict[str, Any]) -> Path:
        path = resolve(self.base, args.get("path"))
        problem = home_refusal(path, self.home)
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

    def benign(self) -> FunctionToolset:
        return FunctionToolset(
            [
                (ToolSpec("read_file", "Read a text file.", _PATH_ONLY), self.read_file),
                (ToolSpec("list_dir", "List a directory.", _PATH_ONLY), self.list_dir),
            ]
        )

    # -- governed --------------------------------------------------------------------------
    def guard(self, name: str, args: dict[str, Any]) -> Verdict | None:
        """X6: refuse the butler's home whatever the policy says (and bad paths early)."""
        try:
            self._path(args)
        except (PermissionError, ValueError) as exc:
            return refuse(str(exc))
        return None

    def execute(self, name: str, args: dict[str, Any]) -> str:
        path = self._path(args)  # checked again at run time: the disk may have changed
        if name == "write_file":
            content = args.get("content")
            if not isinstance(content, str):
                raise ValueError("'content' must be a string")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            return f"wrote {len(content.encode('utf-8'))} bytes to {path}"
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
            ],
            self.execute,
            policy=policy,
            guard=self.guard,
        )

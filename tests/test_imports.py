"""Which way the imports point: the layers of docs/architecture.md as a table, read from the
code. Every import of one butler folder by another must be an edge below (down a layer, or
a sideways edge named here); the surfaces' imports of the adapters under ``app/`` are a debt
listed file by file, which may shrink and must never grow."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "butler_cli"

#: Each folder (or top-level module) of butler_cli and its level: imports point down only.
LEVEL = {
    "__main__": 6,
    "cli": 5,
    "repl": 4,
    "serve": 4,
    "schedule": 4,
    "ui": 3,
    "app": 2,
    "hooks": 1,
    "providers": 1,
    "tools": 1,
    "memory": 1,
    "policy": 1,
    "store": 1,
    "entry_points": 1,
    "api": 1,
    "core": 0,
    "__init__": 1,  # re-exports the verdicts for older policies
    "demo": 0,  # data files only
    "__version__": 0,
}

#: Sideways edges allowed at one level, each with its reason.
SIDEWAYS = {
    ("cli", "repl"): "the chat is started by the command line",
    ("cli", "serve"): "`butler serve` is a thin command over the inbox",
    ("cli", "schedule"): "`butler schedule` is a thin command over the scheduler",
    ("serve", "schedule"): "the inbox runs the scheduler and shows its runs",
    ("memory", "store"): "careful file writes and the home (store/files.py)",
    ("store", "memory"): "conversations search with memory's full-text terms (pure functions)",
    ("providers", "store"): "the home and careful writes (scripted models, stored keys)",
    ("providers", "tools"): "secret masking of what a provider reports (tools/redact.py)",
    ("providers", "memory"): "the frozen block's cache mark for Anthropic's prompt cache",
    ("tools", "api"): "the built-in tools import the plug-in contract, as a third party does",
    ("api", "tools"): "the contract re-exports ToolContext and @tool",
    ("api", "store"): "the contract re-exports the safe regular-file read",
    ("api", "policy"): "the contract re-exports the rule patterns",
    ("tools", "store"): "the home and the stored keys a tool is given (tools/context.py)",
    ("tools", "entry_points"): "the one scan of the butler.tools entry points",
    ("policy", "entry_points"): "the one scan of the butler.policies entry points",
    ("entry_points", "store"): "the scan is kept in the home",
    ("hooks", "tools"): "a hook's output is masked",
}

#: The adapters behind ``app/``: a surface (above ``app/``) never imports them, though they are
#: below it — a surface parses, calls ``app/``, renders.
ADAPTERS = {"store", "memory", "policy", "providers", "tools"}

#: Surfaces that still reach past ``app/`` to an adapter: the debt of issue 23, by file.
#: Remove a row when its file goes through ``app/``; never add one.
DEBT = {
    ("serve", "store"): {"serve/data.py"},
}


def imports() -> dict[tuple[str, str], set[str]]:
    """(importing folder, imported folder) → the files with such an import, at any depth
    (imports inside functions count: they are edges all the same)."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        src = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
                if node.module == "butler_cli":
                    names = [f"butler_cli.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "butler_cli" and len(parts) > 1 and parts[1] != src:
                    edges[(src, parts[1])].add(rel.as_posix())
    return edges


def test_every_folder_is_in_the_table() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert folders | modules <= set(LEVEL), (folders | modules) - set(LEVEL)


def test_imports_point_down_or_along_a_named_edge() -> None:
    edges = imports()
    assert len(edges) > 40  # the scan sees the package
    wrong = []
    for (src, dst), files in sorted(edges.items()):
        past_app = LEVEL[src] > LEVEL["app"] and dst in ADAPTERS
        if LEVEL[src] > LEVEL[dst] and not past_app:
            continue
        if (src, dst) in SIDEWAYS:
            continue
        extra = files - DEBT.get((src, dst), set())
        if extra:
            wrong.append(f"{src} -> {dst}: {sorted(extra)}")
    assert wrong == [], "\n".join(wrong)


def test_the_surfaces_debt_names_only_real_imports() -> None:
    """A debt row whose import is gone is deleted, so the list only ever shrinks."""
    edges = imports()
    stale = {
        (edge, f) for edge, files in DEBT.items() for f in files if f not in edges.get(edge, set())
    }
    assert stale == set(), f"remove from DEBT: {sorted(stale)}"


def test_cli_imports_nothing_below_app_but_core() -> None:
    """Issue 23: a command parses, calls ``app/``, renders. Below ``app/`` it may name only
    ``core`` (its types and errors); the files still in DEBT are the exception, row by row."""
    below = {
        (dst, f)
        for (src, dst), files in imports().items()
        if src == "cli" and LEVEL[dst] < LEVEL["app"] and dst not in {"core", "__version__"}
        for f in files
        if f not in DEBT.get((src, dst), set())
    }
    assert below == set()


def test_the_architecture_page_draws_these_levels() -> None:
    """docs/architecture.md draws what the imports show: each folder on its level's line."""
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = {}
    for line in page.splitlines():
        found = re.match(r"\s*level (\d)\s+(.*)", line)
        if found:
            drawing = re.sub("[│╱╲]", " ", found.group(2)).strip()
            names = re.split(r"\s{2,}", drawing)[0]  # the folders, then what they do
            drawn.update({name: int(found.group(1)) for name in re.findall(r"[a-z_]+", names)})
    folders = {name: level for name, level in LEVEL.items() if name.isidentifier()}
    assert drawn == {k: v for k, v in folders.items() if not k.startswith("__") and k != "demo"}


def test_core_imports_nothing_of_the_butler_but_core() -> None:
    edges = imports()
    assert {dst for (src, dst) in edges if src == "core"} <= {"__init__", "__version__"}

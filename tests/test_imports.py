"""Which way the imports point: the layers of docs/architecture.md as a table, read from the
code. Every import of one butler folder by another must be an edge below (down a layer, or
a sideways edge named here), a surface reaches the adapters only through ``app/``, and a
function imports only at a named lazy point (``LAZY``)."""

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
        wrong.append(f"{src} -> {dst}: {sorted(files)}")
    assert wrong == [], "\n".join(wrong)


def test_cli_imports_nothing_below_app_but_core() -> None:
    """Issue 23: a command parses, calls ``app/``, renders. Below ``app/`` it may name only
    ``core`` (its types and errors)."""
    below = {
        (dst, f)
        for (src, dst), files in imports().items()
        if src == "cli" and LEVEL[dst] < LEVEL["app"] and dst not in {"core", "__version__"}
        for f in files
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


#: The named lazy points (issue 23): a function may import only these — each is paid for by
#: the commands that use it and skipped by those that do not (`-X importtime` and
#: tests/test_startup_imports.py say what they cost). Every other import sits at the top of its
#: module, where it shows the real graph. A key matches the module and its submodules.
LAZY = {
    # the edges of the program
    "butler_cli.repl.start": "the chat: only plain `butler`, `chat` and `demo` open it",
    "butler_cli.repl.turns": "the chat past its first prompt (the butler, turns, rich): built "
    "on a thread once the prompt is up",
    "butler_cli.repl.recap": "`chat -c`'s recap before the prompt: the plain chat opens no "
    "conversation store",
    "butler_cli.serve": "the browser inbox, only `butler serve`",
    "butler_cli.schedule": "the scheduler, only `butler schedule` and `serve`",
    # third-party libraries a command may never need
    "rich": "the screen: plain, piped and --json output never draw with rich",
    "prompt_toolkit": "the chat's line editor and its prompts",
    "truststore": "the system trust store for TLS, only on macOS and Windows",
    "butler_cli.tools.mcp_client": "MCP's event loop, anyio and the SDK: only when a server starts",
    "pydantic": "a park's models and @tool's argument models: a round that never parks loads none",
    "pydantic_core": "a park's models: a round that never parks loads none",
    "tomlkit": "writing the config file (`config set`), never reading it",
    "keyring": "the system keyring, only when a key is kept there",
    "croniter": "schedules",
    "uvicorn": "the inbox's server",
    "starlette": "the inbox's server",
    "smtplib": "the email tool, when it sends",
    "email": "the email tool, when it sends",
    "ssl": "the network: a round that reads the clock opens none",
    "http.client": "the network: a round that reads the clock opens none",
    "urllib.request": "the network: a round that reads the clock opens none",
    "importlib.metadata": "the entry-point scan, when its kept copy is stale",
    "hashlib": "OpenSSL's digests: a round that fences, signs or stamps nothing loads none",
    "tomllib": "reading a config file, only when there is one (the chat's first prompt)",
    "platformdirs": "the user dirs, only when BUTLER_HOME does not name the home",
    # butler modules a common command never needs
    "butler_cli.core.park": "a park's pydantic models: a round that never parks loads none",
    "butler_cli.store.parks": "the signed park store: a round that never parks opens none",
    "butler_cli.core.grants": "grants and kept approvals: a round with none kept loads none",
    "butler_cli.hooks": "the [hooks]: only a config with a [hooks] section loads them",
    "butler_cli.app.run.mcp_servers": "MCP servers: only a config with [mcp] starts or lists any",
    # the package's own import runs on every start: `from butler_cli import allow` (older
    # policies) loads the verdicts on first use, so the chat's first prompt needs no dataclasses
    "butler_cli.core.verdicts": "the verdicts butler_cli re-exports, for older policies",
    # the adapters' edges: what a one-round run, `pending` or the chat's first prompt never uses
    "hmac": "OpenSSL's HMAC: only when a park is signed or checked",
    "pathlib": "the chat's first prompt reads its home as text (pathlib brings urllib.parse)",
    "urllib.parse": "a secret's URL-encoded forms: the chat's first prompt masks none",
    "base64": "a secret's base64 forms, made only when there is a secret to mask",
    "wcmatch": "a path rule's glob (20 ms), only when a rule names a path",
    "queue": "calls side by side, only in a round with two or more",
    "ctypes": "stopping a call's thread, only on Ctrl-C while calls run side by side",
    "socket": "the network: a round that reads the clock opens none",
    "butler_cli.tools.sandbox": "the sandbox and its probe, only when run_command is judged "
    "(or an approval kept for a sandboxed run is read or kept)",
    "butler_cli.tools.email": "send_email, only where [smtp] names a server",
    "butler_cli.store.journal": "a resumed round's journal (messages, ledger): `pending` loads none",
    "butler_cli.providers.remote": "the remote models' adapters: a scripted run builds none",
    "butler_cli.app.parks.preview": "a call's change preview (difflib): not `pending`'s list",
    "butler_cli.app.run.tasks": "a butler built to run: of the memory commands only consolidate",
    "importlib.util": "whether the dense extra is installed: only a recall with a query, "
    "`doctor` or `memory embed` asks",
    "butler_cli.memory.dense": "hybrid recall's embeddings (NumPy, the model): only a recall "
    "with a query, or `memory embed`, where the dense extra is installed",
    "butler_cli.memory.encoder": "the model, loaded by `doctor` to see that it can be read "
    "(a recall loads it through memory.dense)",
    "butler_cli.store.stored_keys": "keys kept with `butler keys set`: not for the chat's first line",
    # the command line's edges (cli/commands.py's table loads each command's module itself)
    "butler_cli.cli.main": "the typer app: plain `butler`, `chat` and `demo` start the chat "
    "without typer",
    "butler_cli.cli.failure": "wording a failure or a notice (masking, the JSON error): a "
    "command that ends quietly (`--help`, `pending`) loads none",
    "butler_cli.app.chat.attach": "attaching --file and piped input: a run with neither loads none",
    "butler_cli.app.views.policy_check": "checking a call builds the offline tool set (memory, "
    "SQLite): `policy list` loads none",
    "butler_cli.ui.progress": "the live progress lines draw with rich: `--output json` and "
    "`stream-json` load none",
    "butler_cli.repl.progress": "`run` and `resume` on a terminal show the chat's display "
    "(Markdown, live lines); piped output and the JSON formats load none",
}


def _local_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import inside a function of ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom):
                module = "." * inner.level + (inner.module or "")
                if module == "butler_cli":
                    found += [(inner.lineno, f"butler_cli.{a.name}") for a in inner.names]
                else:
                    found.append((inner.lineno, module))
            elif isinstance(inner, ast.Import):
                found += [(inner.lineno, a.name) for a in inner.names]
    return found


def _named(module: str) -> bool:
    return any(module == key or module.startswith(key + ".") for key in LAZY)


def test_imports_inside_functions_are_named_lazy_points() -> None:
    """Issue 23: fast start without hiding the graph — lazy only at the named edges."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        wrong += [f"{rel}:{line} {mod}" for line, mod in _local_imports(path) if not _named(mod)]
    assert wrong == [], "move to the top of the module, or name the edge in LAZY:\n" + "\n".join(
        wrong
    )

"""`butler memory …`: the person's own memory — list, search, add, forget, export, import."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from butler_cli.core.errors import ExitCode

if TYPE_CHECKING:
    from butler_cli.memory.entries import Entry
    from butler_cli.memory.store import MemoryStore

from butler_cli.cli.options import Json, Model, Profile

app = typer.Typer(
    name="memory",
    help="What the butler remembers about you: list, search, add, forget, export, import.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _store(profile: str | None) -> MemoryStore:
    from butler_cli.memory.store import DEFAULT_PROFILE, open_memory
    from butler_cli.store.files import butler_home

    return open_memory(butler_home(), profile or DEFAULT_PROFILE)


def _print_entries(entries: list[Entry], as_json: bool) -> None:
    from butler_cli.cli import render
    from butler_cli.memory.entries import recall_line
    from butler_cli.ui.text import visible

    if as_json:
        render.print_json([e.to_json() for e in entries])
    elif entries:
        shown = visible("\n".join(recall_line(e) for e in entries), lines=True)
        render.out().out(shown, highlight=False)
    else:
        render.out().out("No memories.")


@app.command("list")
def list_(
    kind: Annotated[
        str | None, typer.Option("--kind", help="semantic, episodic or working.")
    ] = None,
    profile: Profile = None,
    json_out: Json = False,
) -> None:
    """Every memory in the profile, most important and newest first."""
    from butler_cli.core.errors import UsageError
    from butler_cli.memory.entries import KINDS

    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}")
    _print_entries(_store(profile).entries([kind] if kind else None), json_out)


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words to look for (any language).")],
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="How many results.")] = 12,
    profile: Profile = None,
    json_out: Json = False,
) -> None:
    """Search memories the way the recall tool does."""
    _print_entries(_store(profile).recall(query, None, k), json_out)


@app.command("add")
def add(
    text: Annotated[str, typer.Argument(help="The fact to remember.")],
    importance: Annotated[
        str | None, typer.Option("--importance", help="1–5 or low / high / pin.")
    ] = None,
    profile: Profile = None,
) -> None:
    """Remember a fact (semantic). It joins the prompt from the next session on."""
    from butler_cli.core.errors import UsageError
    from butler_cli.memory.entries import coerce_importance

    try:
        meta = {"importance": coerce_importance(importance), "source": "cli"}
        entry = _store(profile).remember(text.strip(), "semantic", meta)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    print(f"Remembered as {entry.id} (importance {entry.importance}).")


@app.command("forget")
def forget(
    entry_id: Annotated[str | None, typer.Argument(metavar="ID", help="The memory's id.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Forget everything in the profile.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask first (for scripts).")] = False,
    profile: Profile = None,
) -> None:
    """Forget one memory by id, or --all of them (asks first)."""
    from butler_cli.core.errors import UsageError
    from butler_cli.memory.store import UnknownMemory

    store = _store(profile)
    if all_ == (entry_id is not None):
        raise UsageError("give one memory ID, or --all")
    if entry_id is not None:
        if not store.forget(entry_id):
            raise UnknownMemory(f"no memory {entry_id} in profile {store.profile}")
        print(f"Forgot {entry_id}.")
        return
    count = store.count()
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("forget --all asks first; with no terminal, add --yes")
        if not typer.confirm(f"Forget all {count} memories of profile {store.profile}?"):
            print("Nothing was forgotten.")
            raise typer.Exit(ExitCode.FAILED)
    print(f"Forgot {store.clear()} memories.")


@app.command("export")
def export(
    fmt: Annotated[str, typer.Option("--format", help="json (re-importable) or md.")] = "json",
    profile: Profile = None,
) -> None:
    """Print the profile's memory: JSON (for `import`) or Markdown (to read)."""
    from butler_cli.core.errors import UsageError
    from butler_cli.memory.transfer import export_json, export_markdown

    if fmt not in ("json", "md"):
        raise UsageError("--format must be json or md")
    store = _store(profile)
    print(export_json(store) if fmt == "json" else export_markdown(store))


@app.command("import")
def import_(
    path: Annotated[str, typer.Argument(help="A file written by `butler memory export`.")],
    profile: Profile = None,
) -> None:
    """Add the memories of an export. A malformed file is refused whole: nothing is added."""
    from pathlib import Path

    from butler_cli.core.errors import UsageError
    from butler_cli.memory.transfer import import_entries, parse_export

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    entries = parse_export(text, path)
    added, skipped = import_entries(_store(profile), entries)
    print(f"Imported {added} memories ({skipped} already there).")


@app.command("show-block")
def show_block(profile: Profile = None) -> None:
    """The frozen memory block as the next session will send it (controls shown, not run)."""
    from butler_cli.ui.text import visible

    print(visible(_store(profile).block(), lines=True))


@app.command("consolidate")
def consolidate(
    model: Model = None,
    profile: Profile = None,
) -> None:
    """Fold older captured turns into one remembered profile, using the model as summarizer.
    A failure changes nothing."""
    from butler_cli.app.butler import Butler
    from butler_cli.app.options import RunOptions
    from butler_cli.memory.capture import consolidate as run

    butler = Butler.build(RunOptions(model=model, profile=profile))
    done = run(butler.memory, butler.summarize)
    if done is None:
        print("Nothing to consolidate.")
    else:
        print(f"Folded {done.absorbed} turns into profile memory {done.profile.id}.")

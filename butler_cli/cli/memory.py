"""`butler memory …`: the person's own memory — list, search, add, forget, export, import."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from butler_cli.app.views import memories
from butler_cli.cli import render
from butler_cli.cli.options import Json, Model, Profile
from butler_cli.core.errors import ExitCode, UsageError
from butler_cli.ui.text import visible

if TYPE_CHECKING:
    from butler_cli.app.views.memories import Entry

app = typer.Typer(
    name="memory",
    help="What the butler remembers about you: list, search, add, forget, export, import.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _print_entries(entries: list[Entry], as_json: bool) -> None:
    if as_json:
        render.print_json([e.to_json() for e in entries])
    elif entries:
        shown = visible("\n".join(memories.line(e) for e in entries), lines=True)
        render.out().out(shown, highlight=False)
    else:
        render.out().out("No memories.")


@app.command("list")
def list_(
    kind: Annotated[
        str | None, typer.Option("--kind", help="semantic, episodic or working.")
    ] = None,
    new: Annotated[
        bool,
        typer.Option(
            "--new", help="Only the facts the butler concluded itself, with their sources."
        ),
    ] = False,
    profile: Profile = None,
    json_out: Json = False,
) -> None:
    """Every memory in the profile, most important and newest first."""
    if not new:
        _print_entries(memories.listed(kind, profile), json_out)
        return
    found = memories.concluded(profile)
    if json_out or not found:
        _print_entries(found, json_out)
        return
    lines = [
        text
        for e in found
        for text in [
            memories.line(e),
            *(
                f"    from {c}"
                for c in memories.sources(e)
                or ["(no source: written before facts cited their turns)"]
            ),
        ]
    ]
    render.out().out(visible("\n".join(lines), lines=True), highlight=False)


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words to look for (any language).")],
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="How many results.")] = 12,
    profile: Profile = None,
    json_out: Json = False,
) -> None:
    """Search memories the way the recall tool does."""
    _print_entries(memories.search(query, k, profile), json_out)


@app.command("embed")
def embed(profile: Profile = None) -> None:
    """Embed every memory that has no embedding yet, for hybrid recall (needs the dense
    extra). Without this, each recall embeds up to a second's worth, newest first."""
    made, embedded, total = memories.embed(profile)
    print(f"Embedded {made} memories; {embedded} of {total} have an embedding.")


@app.command("add")
def add(
    text: Annotated[str, typer.Argument(help="The fact to remember.")],
    importance: Annotated[
        str | None, typer.Option("--importance", help="1–5 or low / high / pin.")
    ] = None,
    profile: Profile = None,
) -> None:
    """Remember a fact (semantic). It joins the prompt from the next session on."""
    entry = memories.add(text, importance, profile)
    print(f"Remembered as {entry.id} (importance {entry.importance}).")


@app.command("forget")
def forget(
    entry_id: Annotated[str | None, typer.Argument(metavar="ID", help="The memory's id.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Forget everything in the profile.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask first (for scripts).")] = False,
    profile: Profile = None,
) -> None:
    """Forget one memory by id, or --all of them (asks first)."""
    if all_ == (entry_id is not None):
        raise UsageError("give one memory ID, or --all")
    if entry_id is not None:
        memories.forget(entry_id, profile)
        print(f"Forgot {entry_id}.")
        return

    def confirm(name: str, count: int) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            raise UsageError("forget --all asks first; with no terminal, add --yes")
        return typer.confirm(f"Forget all {count} memories of profile {name}?")

    gone = memories.forget_all(profile, confirm)
    if gone is None:
        print("Nothing was forgotten.")
        raise typer.Exit(ExitCode.FAILED)
    print(f"Forgot {gone} memories.")


@app.command("export")
def export(
    fmt: Annotated[str, typer.Option("--format", help="json (re-importable) or md.")] = "json",
    profile: Profile = None,
) -> None:
    """Print the profile's memory: JSON (for `import`) or Markdown (to read)."""
    if fmt not in ("json", "md"):
        raise UsageError("--format must be json or md")
    print(memories.export(profile, markdown=fmt == "md"))


@app.command("import")
def import_(
    path: Annotated[str, typer.Argument(help="A file written by `butler memory export`.")],
    profile: Profile = None,
) -> None:
    """Add the memories of an export. A malformed file is refused whole: nothing is added."""
    added, skipped = memories.import_file(path, profile)
    print(f"Imported {added} memories ({skipped} already there).")


@app.command("show-block")
def show_block(profile: Profile = None) -> None:
    """The frozen memory block as the next session will send it (controls shown, not run)."""
    print(visible(memories.block(profile), lines=True))


@app.command("consolidate")
def consolidate(
    model: Model = None,
    profile: Profile = None,
) -> None:
    """Fold older captured turns into facts, each citing the turns it comes from (the model
    writes them; each is shown). A failed or empty answer changes nothing."""
    done = memories.consolidate(model, profile)
    if done is None:
        print("Nothing to consolidate.")
        return
    plural = "" if len(done.facts) == 1 else "s"
    print(f"Folded {done.absorbed} turns into {len(done.facts)} new fact{plural}.")
    if done.facts:
        shown = "\n".join(f"- [{e.id}] {e.text}" for e in done.facts)
        render.out().out(visible(shown, lines=True), highlight=False)
        print("Forget a wrong one with `butler memory forget ID`.")

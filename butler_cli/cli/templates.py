"""`butler templates …`: the saved prompts ``-t NAME`` uses (files the person writes)."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.app.config import templates

app = typer.Typer(
    name="templates",
    help="Saved system prompts for -t NAME: the files NAME.md you keep in the templates "
    "folder beside the config file.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("list")
def list_() -> None:
    """The templates -t takes, and the folder they are read from."""
    found = templates.names()
    print(
        f"templates in {templates.folder()}:" if found else f"no templates in {templates.folder()}"
    )
    for name in found:
        print(f"  {name}")
    if not found:
        print(f'write one as NAME{templates.SUFFIX} there, then: butler -t NAME "…"')


@app.command("show")
def show(name: Annotated[str, typer.Argument(help="The template's name.")]) -> None:
    """One template's text, as -t NAME sends it."""
    print(templates.load(name))

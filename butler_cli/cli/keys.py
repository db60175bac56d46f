"""`butler keys …`: keep provider keys in the system keyring (or a 0600 file), never echoed."""

from __future__ import annotations

import getpass
import sys
from typing import Annotated

import typer

from butler_cli.app.views.keys import check_name, key_names, remove_key, store_key

app = typer.Typer(
    name="keys",
    help="API keys kept in the system keyring, or where there is none in a 0600 file outside "
    "the butler's home. An environment variable of the same name always wins.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
Name = Annotated[
    str, typer.Argument(help="The key's name, as its variable would be: OPENAI_API_KEY.")
]


@app.command("set")
def set_(name: Name) -> None:
    """Store a key: typed at a prompt that does not echo it, or piped on standard input."""
    check_name(name)
    if sys.stdin.isatty():
        value = getpass.getpass(f"Key for {name} (not shown): ")
    else:
        value = sys.stdin.read()
    where = store_key(name, value)
    print(f"{name} stored in {where}")


@app.command("list")
def list_() -> None:
    """The names of the stored keys (never a value)."""
    for name in key_names():
        print(name)


@app.command("remove")
def remove(name: Name) -> None:
    """Forget a stored key."""
    remove_key(name)
    print(f"{name} removed")

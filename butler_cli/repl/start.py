"""Starting the chat: shared by `butler chat`/`butler demo` and the typer-free fast path."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from butler_cli.app.config.config_file import chosen_options
from butler_cli.app.config.first_model import no_model
from butler_cli.app.config.home import home_dir
from butler_cli.app.config.settings import ENV
from butler_cli.core.errors import UsageError
from butler_cli.repl.session import ChatRepl, Continuing

if TYPE_CHECKING:
    from butler_cli.app.config.options import RunOptions

DEMO_BANNER = (
    "This is the offline demo: a scripted butler, no API key. Type anything (say, 'hello') "
    "and press Enter; it will run a benign tool, then ask before changing a file."
)


def demo_model() -> str:
    # The package's own folder, not importlib.resources (which loads zipfile, ~10 ms before
    # the first prompt): the butler is installed as files, never run from a zip. Found from
    # this file, so butler_cli.demo is not imported before the prompt either.
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"scripted:{os.path.join(package, 'demo', 'demo.json')}"


def start_chat(
    given: RunOptions | Mapping[str, Any] | None = None,
    *,
    demo: bool = False,
    continuing: Continuing = (False, None),
) -> None:
    """The chat on a terminal. ``given``: the flags — as the typer app made them, or by field
    name as the fast entry read them (no dataclass is made before the first prompt: they are
    made into RunOptions with the butler, after it), or None when none were given; ``demo``:
    on the bundled scripted conversation, whatever the flags name."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the chat needs a terminal; for scripts use `butler run`")
    # Resolved here for the first line and a missing model, from the config file checked into
    # plain values (no Config: its dataclasses are made after the prompt); the session keeps
    # the flags, so a park made elsewhere and resumed in the chat goes on with its own record,
    # as with `butler resume` (the butler itself resolves them again, the same way). The keys
    # kept with `butler keys set` are not read here (platformdirs, the keys file, maybe the
    # keyring): the butler's build, which every line waits for, reads them before any turn
    # runs. A recap (`chat -c`) comes before the prompt: then they are read.
    read = given.get if isinstance(given, Mapping) else lambda key: getattr(given, key, None)
    flags = {key: read(key) for key in ENV}
    script = demo_model() if demo else None
    flags["model"] = script or flags["model"]
    shown = chosen_options(flags, stored_keys=continuing[0])
    if not shown["model"]:
        raise no_model()
    chat = ChatRepl(
        given,
        home_dir(),
        DEMO_BANNER if demo else "",
        continuing=continuing,
        shown=(shown["model"], shown["policy"]),
        script=script,
    )
    chat.run()

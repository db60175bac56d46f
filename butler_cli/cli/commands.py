"""Where each ``butler`` command lives, and the group that loads only the one being run.

Building typer's whole click tree (every command's parameters from its type hints) and importing
every ``cli`` module cost a command more than its own work did. :data:`COMMANDS` names each
command's module and attribute, so :class:`LazyGroup` imports and converts just the command
asked for. The help beside each name is what ``butler --help`` and shell completion show, so
listing the commands imports none of them; a test checks it against each command's docstring.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

import click
import typer
import typer.main
from click.shell_completion import CompletionItem
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo, TyperInfo

from butler_cli.cli.words import PAIRED, plain_line


@dataclass(frozen=True)
class Entry:
    """One command: ``module.attr`` is a function (a command) or a ``typer.Typer`` (a group)."""

    module: str
    attr: str
    #: The first sentence of its help, as ``butler --help`` lists it.
    help: str
    #: Takes ``-o KEY VALUE`` (parsed by :class:`PairedOptions`).
    paired: bool = False


_CLI = "butler_cli.cli."
#: click 8.4+ suggests a close name for an unknown command itself; typer's suggestion on top of
#: it said "Did you mean 'list'? Did you mean 'list'?".
_CLICK_SUGGESTS = hasattr(click.exceptions, "NoSuchCommand")

#: Every command, in the order ``butler --help`` lists them.
COMMANDS: dict[str, Entry] = {
    "chat": Entry(_CLI + "chat", "chat", "Talk to the butler.", paired=True),
    "demo": Entry(
        _CLI + "chat",
        "demo",
        "The offline demo: the chat on a bundled scripted conversation, no API key needed.",
    ),
    "run": Entry(_CLI + "run", "run", "Run tasks unattended.", paired=True),
    "resume": Entry(
        _CLI + "resume",
        "resume",
        "Record your decision on a parked task, then continue it (same output as `run`).",
        paired=True,
    ),
    "pending": Entry(_CLI + "parks", "pending", "List parks awaiting a decision."),
    "show": Entry(
        _CLI + "show",
        "show",
        "Show one park in full: status, approval, calls, verdicts, decision, results, messages.",
    ),
    "doctor": Entry(
        _CLI + "doctor",
        "doctor",
        "Which sandbox commands run in, where the home, config and policy files are, and which "
        "key variables are set (never their values).",
    ),
    "completion": Entry(
        _CLI + "completion", "completion", "Print the completion script for SHELL."
    ),
    "serve": Entry(
        _CLI + "serve",
        "serve",
        "Run the scheduler and the inbox page until Ctrl-C or SIGTERM.",
    ),
    "models": Entry(
        _CLI + "models",
        "models",
        "The providers (server, where the key comes from: env, stored or none — never the key) "
        "and the config's [aliases] (`--model fast` means the spec it names).",
    ),
    "log": Entry(
        _CLI + "log",
        "app",
        "Saved conversations (every chat and every `run` task): list, search, show one.",
    ),
    "memory": Entry(
        _CLI + "memory",
        "app",
        "What the butler remembers about you: list, search, add, forget, export, import.",
    ),
    "policy": Entry(
        _CLI + "policy",
        "app",
        "The risk policy: which are installed, what one says about a call, replay test cases.",
    ),
    "config": Entry(
        _CLI + "config",
        "app",
        "Defaults kept in the config file: model, policy, max rounds, system prompt, providers.",
    ),
    "mcp": Entry(
        _CLI + "mcp",
        "app",
        "MCP servers from the config file: their state and tools (benign or governed).",
    ),
    "tools": Entry(
        _CLI + "tools",
        "app",
        "The tools the butler offers: built-ins, plug-ins (butler.tools entry points) and MCP.",
    ),
    "schedule": Entry(
        _CLI + "schedule",
        "app",
        "Tasks that run on a schedule (cron), unattended: an approval parks and waits for you.",
    ),
    "keys": Entry(
        _CLI + "keys",
        "app",
        "API keys kept in the system keyring, or where there is none in a 0600 file outside "
        "the butler's home.",
    ),
    "templates": Entry(
        _CLI + "templates",
        "app",
        "Saved system prompts for -t NAME: the files NAME.md you keep in the templates "
        "folder beside the config file.",
    ),
    "grants": Entry(
        _CLI + "grants",
        "app",
        'Approvals you kept ("always allow this here"): list them, take one back.',
    ),
}


def load(name: str, entry: Entry) -> click.Command:
    """Import ``entry``'s module and turn its command (or group) into click's, as typer would
    have when building the whole tree."""
    target = getattr(importlib.import_module(entry.module), entry.attr)
    if isinstance(target, typer.Typer):
        return typer.main.get_group_from_info(
            TyperInfo(target, name=name),
            pretty_exceptions_short=True,
            rich_markup_mode=None,
            suggest_commands=not _CLICK_SUGGESTS,
        )
    info = CommandInfo(name=name, cls=PairedOptions if entry.paired else None, callback=target)
    return typer.main.get_command_from_info(
        info, pretty_exceptions_short=True, rich_markup_mode=None
    )


class LazyGroup(TyperGroup):
    """The root group: lists every command in :data:`COMMANDS` and builds one when it is run
    (or its help or completions are asked for)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load(cmd_name, COMMANDS[cmd_name])
        return self.commands.get(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Plain English is a task (:mod:`butler_cli.cli.words`): ``butler what time is it``
        is ``butler run -- "what time is it"``. A completion request parses resiliently and
        completes the words as typed."""
        if not ctx.resilient_parsing:
            args = plain_line(self, ctx, args)
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # click's own; its "Did you mean" looks in self.commands, which holds only what is loaded.
        try:
            return click.Group.resolve_command(self, ctx, args)
        except click.UsageError:
            name = args[0]
            if name in COMMANDS or name.startswith("-"):
                raise  # not an unknown command but an option's error
            raise _no_such_command(name, ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, from the table's help: ``butler --help`` imports no command."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, _short(name, limit)) for name in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Command names from the table (with click's short help), then the options."""
        results = [
            CompletionItem(name, help=_short(name, 45))
            for name in COMMANDS
            if name.startswith(incomplete)
        ]
        results.extend(click.Command.shell_complete(self, ctx, incomplete))
        return results


def join_pairs(args: list[str]) -> list[str]:
    """``["-o", "temperature", "0.2", "task"]`` → ``["-o", "temperature=0.2", "task"]``."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return out + args[i:]
        if arg in PAIRED and i + 2 < len(args) and "=" not in args[i + 1]:
            out += [arg, f"{args[i + 1]}={args[i + 2]}"]
            i += 3
            continue
        out.append(arg)
        i += 1
    return out


class PairedOptions(TyperCommand):
    """A command whose ``-o`` takes KEY VALUE (or KEY=VALUE), repeatable, which typer cannot
    declare: each ``-o KEY VALUE`` is joined into ``-o KEY=VALUE`` before click sees it
    (``KEY=VALUE`` itself is taken as it is). Nothing after ``--`` is touched. The values are
    checked by :func:`butler_cli.app.config.options.model_options`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, join_pairs(args))


def _short(name: str, limit: int) -> str:
    """The table's help for ``name`` cut to ``limit`` the way click cuts a docstring."""
    return click.Command(name, help=COMMANDS[name].help).get_short_help_str(limit)


def _no_such_command(name: str, ctx: click.Context) -> click.UsageError:
    """The error for an unknown command, suggesting close names from the whole table."""
    if _CLICK_SUGGESTS:
        return click.exceptions.NoSuchCommand(name, possibilities=list(COMMANDS), ctx=ctx)
    matches = get_close_matches(name, list(COMMANDS))
    hint = f" Did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""
    return click.UsageError(f"No such command {name!r}.{hint}", ctx)

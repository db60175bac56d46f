"""Plain English on the command line: which words name a command and which are a task.

The rule, as ``butler --help`` and the README state it:

- The first word that is no option decides; butler's own options (``--model``, ``--json``…)
  may stand anywhere on the line, before or after the words.
- A command's name is that command, while the words after it fit it: a command that takes
  no word or one id (``show``, ``pending``, ``chat``…) given more words than it takes, or a
  group (``log``, ``schedule``…) followed by a word that is none of its commands nor a near
  miss of one, makes the whole line a task (``butler show me the plan``, ``butler schedule a
  call``). ``butler show me`` stays ``show`` (one word, one id): no such park, says how to ask.
- A single word that is a near miss of a command (``logs``, ``lgo``, by the measure click's
  "Did you mean" uses), or a near miss followed by one of that group's commands (``memroy
  list``), is a typo: "Did you mean", nothing runs.
- Anything else is one task, every word of it, as ``butler "…"`` (``butler what time is it``).
- Only options, no word: the chat with them (``butler --model fast``).

The words are read with the options' real arities (click's parameters of ``run`` and of the
command named), so ``--model fast`` is an option and its value, never two words of a task.
Shell completion parses resiliently and never comes here: it completes what is typed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches

import click

#: The root's own options: a line starting with one is left to click as it is.
ROOT_OPTIONS = frozenset(
    {"--help", "-h", "--version", "-V", "--install-completion", "--show-completion"}
)
#: ``-o KEY VALUE``: the one option that takes two words (``KEY=VALUE`` is one).
PAIRED = ("-o", "--option")


@dataclass
class Line:
    """A command line read into its options (with their values, in order) and its words."""

    options: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    #: Where the first word stands in the arguments (None: there is none).
    first: int | None = None


def _arities(commands: Sequence[click.Command]) -> dict[str, int]:
    """How many values each option of ``commands`` takes (the first command that has it wins)."""
    found: dict[str, int] = {}
    for command in commands:
        for param in command.params:
            if isinstance(param, click.Option):
                takes = 0 if param.is_flag or param.count else max(param.nargs, 1)
                for name in (*param.opts, *param.secondary_opts):
                    found.setdefault(name, takes)
    return found


def read_line(args: Sequence[str], commands: Sequence[click.Command]) -> Line:
    """``args`` split into options and words, each option taking the values it takes in
    ``commands``; an option none of them has takes none (click refuses it later)."""
    arity = _arities(commands)
    line = Line()
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            if line.first is None and i + 1 < len(args):
                line.first = i + 1
            line.words += args[i + 1 :]
            break
        if token.startswith("-") and token != "-":
            name, eq, _ = token.partition("=")
            takes = 0 if eq else arity.get(name, 0)
            if name in PAIRED and not eq and "=" not in "".join(args[i + 1 : i + 2]):
                takes = 2
            line.options += args[i : i + 1 + takes]
            i += 1 + takes
            continue
        if line.first is None:
            line.first = i
        line.words.append(token)
        i += 1
    return line


def plain_line(group: click.Group, ctx: click.Context, args: list[str]) -> list[str]:
    """The root's arguments, with a plain-English line turned into ``run [OPTIONS] -- TASK``
    and butler's options moved after the command they belong to (see the module's rule).
    ``run`` is loaded only when the line needs its options' arities: `butler pending` never
    imports it."""
    if not args or args[0] in ROOT_OPTIONS:
        return args

    def run() -> click.Command:
        found = group.get_command(ctx, "run")
        assert found is not None
        return found

    at = read_line(args, [run()]).first if args[0].startswith("-") else 0
    if at is None:
        return ["chat", *args]  # options only: the chat takes them
    name, head, rest = args[at], args[:at], args[at + 1 :]
    names = group.list_commands(ctx)
    if name in names:
        command = group.get_command(ctx, name)
        if command is not None and not _fits(ctx, name, command, rest, run):
            return _task(args, run())
        return [name, *head, *rest]
    if _near_miss(group, ctx, name, rest, run):
        return [name, *head, *rest]  # the root's "No such command … Did you mean"
    return _task(args, run())


def _task(args: Sequence[str], run: click.Command) -> list[str]:
    """The whole line as one task for ``run``: its options kept, its words joined."""
    line = read_line(args, [run])
    return ["run", *line.options, "--", " ".join(line.words)]


def _fits(
    ctx: click.Context,
    name: str,
    command: click.Command,
    rest: list[str],
    run: Callable[[], click.Command],
) -> bool:
    """Whether the words after a command's name are that command's."""
    if name == "run":
        return True  # run's words are its task(s): see `butler run --help`
    if isinstance(command, click.Group):
        after = rest[0] if rest else ""
        if not after or after.startswith("-"):
            return True
        subcommands = command.list_commands(ctx)
        return after in subcommands or bool(get_close_matches(after, subcommands))
    takes = [p.nargs for p in command.params if isinstance(p, click.Argument)]
    if any(n < 0 for n in takes):
        return True
    # an option the command lacks is read as taking no value, which can only add words:
    # when they fit even so, run's options need not be loaded to count them
    if len(read_line(rest, [command]).words) <= sum(takes):
        return True
    return len(read_line(rest, [command, run()]).words) <= sum(takes)


def _near_miss(
    group: click.Group,
    ctx: click.Context,
    name: str,
    rest: list[str],
    run: Callable[[], click.Command],
) -> bool:
    """Whether an unknown first word is a typo of a command: it alone (options aside), or
    followed by one of the commands of the group it nearly names."""
    if any(c.isspace() for c in name):
        return False  # a quoted sentence is never a typo
    near = get_close_matches(name, group.list_commands(ctx))
    if not near:
        return False
    command = group.get_command(ctx, near[0])
    if command is None:
        return False
    words = read_line(rest, [command, run()]).words
    if not words:
        return True
    return isinstance(command, click.Group) and words[0] in command.list_commands(ctx)

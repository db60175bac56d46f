"""`-o KEY VALUE`: a repeatable option of two words, which typer cannot declare.

The commands that take model options parse their arguments through :class:`PairedOptions`,
which joins each ``-o KEY VALUE`` into ``-o KEY=VALUE`` before click sees it (``KEY=VALUE``
itself is taken as it is). Nothing after ``--`` is touched.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

FLAGS = ("-o", "--option")


def join_pairs(args: list[str]) -> list[str]:
    """``["-o", "temperature", "0.2", "task"]`` → ``["-o", "temperature=0.2", "task"]``."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return out + args[i:]
        if arg in FLAGS and i + 2 < len(args) and "=" not in args[i + 1]:
            out += [arg, f"{args[i + 1]}={args[i + 2]}"]
            i += 3
            continue
        out.append(arg)
        i += 1
    return out


class PairedOptions(TyperCommand):
    """A typer command whose ``-o`` takes KEY VALUE (or KEY=VALUE), repeatable."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, join_pairs(args))

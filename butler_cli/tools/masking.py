"""The toolbox whose results and titles are masked: kept apart from
:mod:`butler_cli.tools.redact`, which the config reads before the chat's first prompt and so
must not load the message models."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.toolsets import Toolbox
from butler_cli.tools.redact import mask_text, redact


class MaskingToolbox(Toolbox):
    """A toolbox whose results pass through :func:`mask_text`: what a tool brings back (a
    program's output, a server's answer) reaches the model, the screen and the park masked."""

    #: The gate's watch (raises when its folders moved): run on the loop's thread after every
    #: call not in :attr:`unwatched`, and before a park is written or a task ends
    #: (``check_gate``).
    watch: Callable[[], None] | None = None
    #: The tools after which the watch is not run: the butler's own, declared read-only
    #: (``ToolSpec.read_only``), run in this process. Never a plug-in's or a server's.
    unwatched: frozenset[str] = frozenset()

    def ran(self, call: ToolUseBlock) -> None:
        if self.watch is not None and call.name not in self.unwatched:
            self.watch()

    def check_gate(self) -> None:
        """Run the watch now, whatever ran: a folder moved by something running beside the
        task (a server, a program left behind) is seen before a park or the task's end."""
        if self.watch is not None:
            self.watch()

    def run(self, call: ToolUseBlock) -> ToolResultBlock:
        result = super().run(call)
        masked = mask_text(result.content)
        if masked == result.content:
            return result
        return replace(result, content=masked)

    def title(self, call: ToolUseBlock) -> str:
        """The title made from the arguments as a person is shown them — credential-named
        values (``password``, ``api_token``…, at any depth) already ``****``, so no title,
        however it is cut, shows a part of one — then every known secret masked. It is kept in
        the park, so `pending`, `show`, the inbox and the on_park event all show it masked."""
        gate = self.gate_for(call.name)
        assert gate is not None
        return mask_text(gate.describe(call.name, redact(dict(call.input))))

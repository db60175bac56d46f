"""The toolbox whose results are masked: kept apart from :mod:`butler_cli.tools.redact`, which
the config reads before the chat's first prompt and so must not load the message models."""

from __future__ import annotations

from dataclasses import replace

from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.toolsets import Toolbox
from butler_cli.tools.redact import mask_text


class MaskingToolbox(Toolbox):
    """A toolbox whose results pass through :func:`mask_text`: what a tool brings back (a
    program's output, a server's answer) reaches the model, the screen and the park masked."""

    def run(self, call: ToolUseBlock) -> ToolResultBlock:
        result = super().run(call)
        masked = mask_text(result.content)
        if masked == result.content:
            return result
        return replace(result, content=masked)

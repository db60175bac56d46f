"""`!command` in the chat (Claude Code's `!`, Aider's `/run`): the person's own command, run
as a ``run_command`` call under the same gate as a model's — the sandbox, the policy, a park and
the approval prompt where the policy asks — and its result joins the conversation, so the model
reads it with the next turn.

The call is put in the loop by :class:`PersonsCommand`, a provider that asks for exactly that
call and, once its result is in, answers with :data:`RAN_NOTE` instead of calling the model:
everything between (vetting, judging, parking, the decision through the one door, running it
exactly once, the audit line, the conversation record) is the loop's own path, unchanged. A
park left for later and decided elsewhere continues as any park does: with the model, which
then reads the output.
"""

from __future__ import annotations

import os
import shlex

from butler_cli.core.errors import UsageError
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.provider import ModelRequest, ModelResponse

#: What the conversation records in the model's place once the person's command ran.
RAN_NOTE = "[butler: the person ran this command themselves; the model was not asked to answer]"
#: The tool a `!command` is (``tools/command.py``).
TOOL = "run_command"


def argv_of(command: str) -> list[str]:
    """The argv ``command`` is, split as a shell would split it (quotes, backslashes) — and
    never run by one: ``;``, ``|`` or ``$(…)`` are words like any other."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"!{command}: {exc} — nothing was run", code="bad_command") from None
    if not argv:
        raise UsageError("write a command after `!` (e.g. `!git status`)", code="bad_command")
    return argv


def prompt_for(argv: list[str]) -> str:
    """What the model is sent as the person's turn (the turn's task stays `!command`)."""
    return (
        f"I ran this command myself (the butler ran it as run_command): {shlex.join(argv)}\n"
        "Its result follows. Read it; answer only when I ask you something."
    )


class PersonsCommand:
    """A provider that asks for the person's one ``run_command`` call, then, once a result
    follows it, ends the turn with :data:`RAN_NOTE` — the model is never called."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        #: Its call's id: fresh each time (a provider refuses a conversation whose ids repeat).
        self.call_id = f"person-{os.urandom(6).hex()}"

    def complete(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1] if request.messages else None
        if last is not None and any(isinstance(b, ToolResultBlock) for b in last.content):
            return ModelResponse(text=RAN_NOTE)
        call = ToolUseBlock(id=self.call_id, name=TOOL, input={"argv": list(self.argv)})
        return ModelResponse(tool_calls=[call], stop_reason="tool_use")

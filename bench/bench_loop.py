"""Loop overhead per tool round on the scripted model, at 8, 64 and 512 rounds.

Baseline (same run): the same trivial tool called directly the same number of times, each
result wrapped in the same result block — the work a round cannot avoid. The difference is
what the loop itself costs: the model request, classification, message building.
With pydantic-ai installed (pip install pydantic-ai-slim) its agent loop over a
FunctionModel is measured too, on the same machine and in the same run.

Run: python bench/bench_loop.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import per_call  # noqa: E402

from butler_cli.core.loop import LoopConfig, run_loop  # noqa: E402
from butler_cli.core.messages import Message, ToolResultBlock  # noqa: E402
from butler_cli.core.toolsets import FunctionToolset, Toolbox, ToolSpec  # noqa: E402
from butler_cli.providers.scripted import Script, ScriptedProvider  # noqa: E402


def tick(args: dict[str, Any]) -> str:
    return "ok"


def butler_round_cost(n: int) -> float:
    turns = [{"tool_calls": [{"name": "tick", "arguments": {"i": i}}]} for i in range(n)]
    script = Script.from_dict({"turns": [*turns, {"text": "done"}]})
    provider = ScriptedProvider(Path("bench.json"), script)
    toolbox = Toolbox([FunctionToolset([(ToolSpec("tick", "tick", {"type": "object"}), tick)])])
    config = LoopConfig(max_rounds=n)

    def once() -> None:
        out = run_loop(provider, toolbox, [Message.user_text("go")], config, _no_park)
        assert out.status == "done" and out.rounds == n

    return per_call(once, repeat=5, number=max(1, 256 // n)) / n


def baseline_round_cost(n: int) -> float:
    def once() -> None:
        for i in range(n):
            ToolResultBlock(tool_use_id=f"c{i}", content=tick({"i": i}))

    return per_call(once, repeat=5, number=max(1, 256 // n)) / n


def pydantic_ai_round_cost(n: int) -> float | None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
    except ImportError:
        return None

    def model(messages: list[Any], info: Any) -> Any:
        k = sum(1 for m in messages if isinstance(m, ModelResponse))
        if k < n:
            return ModelResponse(parts=[ToolCallPart("tick", {"i": k})])
        return ModelResponse(parts=[TextPart("done")])

    from pydantic_ai.usage import UsageLimits

    agent = Agent(FunctionModel(model))
    limits = UsageLimits(request_limit=None)

    @agent.tool_plain(name="tick")
    def tick_tool(i: int) -> str:
        return "ok"

    def once() -> None:
        agent.run_sync("go", usage_limits=limits)

    try:
        return per_call(once, repeat=3, number=max(1, 64 // n)) / n
    except Exception as exc:  # an API change in pydantic-ai should not hide our figures
        print(f"(pydantic-ai comparison skipped: {exc})", file=sys.stderr)
        return None


def _no_park(draft: object) -> str:
    raise AssertionError("nothing parks in this benchmark")


def main() -> None:
    print(
        "| rounds | butler loop, per round | baseline (tool + result block) | loop overhead | pydantic-ai FunctionModel, per round |"
    )
    print("|---|---|---|---|---|")
    for n in (8, 64, 512):
        ours, base = butler_round_cost(n), baseline_round_cost(n)
        theirs = pydantic_ai_round_cost(n)
        other = f"{theirs * 1000:.2f} ms" if theirs is not None else "not installed"
        print(
            f"| {n} | {ours * 1000:.3f} ms | {base * 1000:.3f} ms | {(ours - base) * 1000:.3f} ms | {other} |"
        )


if __name__ == "__main__":
    main()

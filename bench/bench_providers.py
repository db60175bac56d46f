"""The butler's own overhead on a streamed turn, beside the SDK called directly (same run).

A loopback server (tests/fake_llm.py) streams the same answer — text in pieces plus two tool
calls with arguments split across chunks — to (a) the official SDK, iterating the raw stream,
and (b) the butler's adapter (request mapping, urllib, stream assembly, response).

Run: python bench/bench_providers.py  (needs the test and bench extras: the SDKs are peers)
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream, split  # noqa: E402

from butler_cli.core.messages import Message  # noqa: E402
from butler_cli.core.provider import ModelRequest, ToolDefinition  # noqa: E402
from butler_cli.providers.remote.anthropic_messages import AnthropicModel  # noqa: E402
from butler_cli.providers.remote.anthropic_messages import to_wire as anthropic_wire  # noqa: E402
from butler_cli.providers.remote.common import Endpoint  # noqa: E402
from butler_cli.providers.remote.openai_chat import OpenAIChatModel  # noqa: E402
from butler_cli.providers.remote.openai_chat import to_wire as openai_wire  # noqa: E402

RUNS = 60
CALLS = [("c1", "read_file", split({"path": "notes/today.md"})), ("c2", "now", ["{}"])]
TEXT = "Let me read today's notes and check the time. " * 4


def main() -> None:
    fake = FakeLLM()
    os.environ["BENCH_KEY"] = "k"
    tools = [
        ToolDefinition("read_file", "Read a file.", {"type": "object"}),
        ToolDefinition("now", "Time.", {"type": "object"}),
    ]
    request = ModelRequest("You are butler.", [Message.user_text("what's on today?")], tools)
    rows = []
    for name, model_cls, stream, wire, endpoint in [
        (
            "openai",
            OpenAIChatModel,
            openai_stream,
            openai_wire,
            Endpoint("openai", "m", fake.url + "/v1", "BENCH_KEY"),
        ),
        (
            "anthropic",
            AnthropicModel,
            anthropic_stream,
            anthropic_wire,
            Endpoint("anthropic", "m", fake.url, "BENCH_KEY"),
        ),
    ]:
        model = model_cls(endpoint)
        body = wire(request, "m")
        body.pop("stream", None)
        # the official SDK as the peer (the bench extra): the butler sends without it
        if name == "openai":
            import openai

            direct = openai.OpenAI(api_key="k", base_url=endpoint.base_url).chat.completions.create
        else:
            import anthropic

            direct = anthropic.Anthropic(api_key="k", base_url=endpoint.base_url).messages.create
        ours, theirs = [], []
        for _ in range(RUNS):
            fake.replies = [Reply(events=stream(TEXT, CALLS)), Reply(events=stream(TEXT, CALLS))]
            start = time.perf_counter()
            for _chunk in direct(stream=True, **body):
                pass
            theirs.append(time.perf_counter() - start)
            start = time.perf_counter()
            response = model.complete(request)
            ours.append(time.perf_counter() - start)
            assert len(response.tool_calls) == 2
        o, t = statistics.median(ours), statistics.median(theirs)
        rows.append((name, o, t))
    fake.close()
    print(
        "| provider | butler adapter, streamed turn (median) | SDK called directly (same run) | overhead |"
    )
    print("|---|---|---|---|")
    for name, o, t in rows:
        print(f"| {name} | {o * 1000:.2f} ms | {t * 1000:.2f} ms | {(o - t) * 1000:+.2f} ms |")


if __name__ == "__main__":
    main()

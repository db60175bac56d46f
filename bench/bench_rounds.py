"""A round of slow reads: four calls that take 0.5 s each, beside a round of one, in the same run.

- MCP: ``butler run --output stream-json`` (the installed butler, a scripted model) calling a
  read-only tool of a real stdio MCP server (the official SDK) whose tool waits 0.5 s; a round
  of four calls against a round of one, timed by the butler's own events from the round's
  first ``tool_call`` to its last ``tool_result``. The server starts lazily, on the first
  call: a round of one call before the timed round starts it (its start varies by seconds
  on a loaded machine), so the timed round is calls only. Medians of interleaved runs.
- Plug-in: the loop in process (``run_loop``, a scripted model) over a benign ``@tool`` that
  sleeps 0.5 s, four against one — and the same four declared ``thread_safe=False``, which run
  one after another as every round did before issue 26.

Target (issue 26): four take at most 0.3 s longer than one.

    python bench/bench_rounds.py [RUNS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BIN  # noqa: E402

SLOW_S = 0.5
SERVER = '''
import asyncio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("slow")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def lookup(what: str) -> str:
    """Look something up on a far server (takes {slow} s)."""
    await asyncio.sleep({slow})
    return f"found {{what}}"


server.run()
'''


def mcp_rounds(root: Path, runs: int) -> dict[int, float]:
    home, work = root / "home", root / "work"
    home.mkdir()
    work.mkdir()
    server = root / "slow_server.py"
    server.write_text(SERVER.format(slow=SLOW_S))
    (home / "config.toml").write_text(
        f'[mcp.slow]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n'
    )
    env = {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1"}
    scripts = {}
    for n in (1, 4):
        calls = [
            {"id": f"c{i}", "name": "slow__lookup", "arguments": {"what": f"thing {i}"}}
            for i in range(n)
        ]
        warm = {"tool_calls": [{"id": "w", "name": "slow__lookup", "arguments": {"what": "w"}}]}
        path = root / f"script{n}.json"
        path.write_text(json.dumps({"turns": [warm, {"tool_calls": calls}, {"text": "done"}]}))
        scripts[n] = f"scripted:{path}"
    times: dict[int, list[float]] = {1: [], 4: []}
    for _ in range(runs):
        for n in (1, 4):
            done = subprocess.run(
                [str(BIN / "butler"), "run", "--model", scripts[n], "look"]
                + ["--output", "stream-json"],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
            events = [json.loads(line) for line in done.stdout.splitlines()]
            events = [e for e in events if e.get("id") != "w"]  # the round that starts it
            asked = min(e["elapsed_ms"] for e in events if e["type"] == "tool_call")
            results = [e for e in events if e["type"] == "tool_result"]
            assert sorted(r["content"] for r in results) == [f"found thing {i}" for i in range(n)]
            times[n].append((max(r["elapsed_ms"] for r in results) - asked) / 1000)
    return {n: statistics.median(t) for n, t in times.items()}


def plugin_round(n: int, thread_safe: bool) -> float:
    """One round of ``n`` calls of a benign plug-in tool that sleeps, through the loop."""
    from butler_cli.api import benign_toolset, tool
    from butler_cli.core.loop import LoopConfig, run_loop
    from butler_cli.core.messages import Message
    from butler_cli.core.toolsets import Toolbox
    from butler_cli.providers.scripted import Script, ScriptedProvider

    @tool(thread_safe=thread_safe)
    def nap(seconds: float) -> str:
        """Wait."""
        time.sleep(seconds)
        return "rested"

    calls = [{"id": f"c{i}", "name": "nap", "arguments": {"seconds": SLOW_S}} for i in range(n)]
    script = Script.from_dict({"turns": [{"tool_calls": calls}, {"text": "done"}]})
    provider = ScriptedProvider(Path("bench.json"), script)
    began = time.perf_counter()
    out = run_loop(
        provider,
        Toolbox([benign_toolset([nap])]),
        [Message.user_text("go")],
        LoopConfig(),
        lambda draft: "never",
    )
    took = time.perf_counter() - began
    assert out.status == "done"
    return took


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"commit {commit}, load {os.getloadavg()[0]:.1f}, {runs} runs, medians\n")
    with tempfile.TemporaryDirectory() as tmp:
        mcp = mcp_rounds(Path(tmp), runs)
    plug: dict[str, list[float]] = {"1": [], "4": [], "4 serial": []}
    for _ in range(runs):
        plug["1"].append(plugin_round(1, True))
        plug["4"].append(plugin_round(4, True))
        plug["4 serial"].append(plugin_round(4, False))
    p = {k: statistics.median(v) for k, v in plug.items()}
    print("| round | one call | four calls | four − one | target |")
    print("|---|---|---|---|---|")
    print(
        f"| MCP read-only tool, 0.5 s (`butler run`, the round) | {mcp[1]:.3f} s "
        f"| {mcp[4]:.3f} s | {mcp[4] - mcp[1]:+.3f} s | ≤ +0.3 s "
        f"{'✓' if mcp[4] - mcp[1] <= 0.3 else '✗'} |"
    )
    print(
        f"| benign plug-in tool, 0.5 s (the loop, in process) | {p['1']:.3f} s | {p['4']:.3f} s "
        f"| {p['4'] - p['1']:+.3f} s | ≤ +0.3 s {'✓' if p['4'] - p['1'] <= 0.3 else '✗'} |"
    )
    print(
        f"| the same, `thread_safe=False` (one after another, as before) | {p['1']:.3f} s "
        f"| {p['4 serial']:.3f} s | {p['4 serial'] - p['1']:+.3f} s | |"
    )


if __name__ == "__main__":
    main()

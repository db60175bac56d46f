"""`butler run` of a task that calls no MCP tool, with three MCP servers configured, beside the
same run with none — medians of interleaved runs in the same run. Target: at most 1.2x.

The three servers are the real `mcp-server-time` from PyPI (in the test extras) under three
names. Their tool lists are cached first (`butler mcp list`), as any earlier run would have
done: a run that uses none of their tools then starts none of them. The first run on an empty
cache (which lists all three, side by side) is timed once too, for scale.

Run: python bench/bench_mcp.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))
from bench_run import median_runs  # noqa: E402
from common import BIN, compile_checkouts  # noqa: E402

RUNS = 15


def main() -> None:
    compile_checkouts()
    butler, server = str(BIN / "butler"), shutil.which("mcp-server-time", path=str(BIN))
    if server is None:
        sys.exit("mcp-server-time is missing: pip install -e '.[test]'")
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    script = tmp / "plan.json"
    script.write_text(json.dumps({"turns": [{"text": "done"}]}))
    homes = {"none": tmp / "none", "three MCP servers": tmp / "three"}
    for home in homes.values():
        home.mkdir()
    (homes["three MCP servers"] / "config.toml").write_text(
        "".join(
            f'[mcp.{name}]\ncommand = "{server}"\nstart_timeout = 60\n\n'
            for name in ("clock", "calendar", "zones")
        )
    )
    env = {"XDG_CONFIG_HOME": str(tmp / "xdg"), "NO_COLOR": "1"}
    argv = [butler, "run", "--model", f"scripted:{script}", "what next?"]

    cold = {**os.environ, **env, "BUTLER_HOME": str(homes["three MCP servers"])}
    start = time.perf_counter()
    subprocess.run(argv, env=cold, check=True, capture_output=True)
    first = time.perf_counter() - start
    subprocess.run([butler, "mcp", "list"], env=cold, check=True, capture_output=True)

    commands = {name: ["env", f"BUTLER_HOME={home}", *argv] for name, home in homes.items()}
    results = median_runs(commands, RUNS, env, {})
    base_wall, base_cpu = results["none"]
    print(f"{RUNS} interleaved runs each; load average {os.getloadavg()[0]:.1f}")
    print("| MCP servers configured | median wall | median CPU | wall ratio | CPU ratio |")
    print("|---|---|---|---|---|")
    for name, (wall, cpu) in results.items():
        print(
            f"| {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms "
            f"| {wall / base_wall:.2f} | {cpu / base_cpu:.2f} |"
        )
    print(f"first run on an empty cache (lists all three side by side): {first * 1000:.0f} ms")
    logs = homes["three MCP servers"] / "mcp-logs"
    marks = sum(p.read_text().count("--- butler starts") for p in logs.glob("*.log"))
    print(f"server starts in all: {marks} (3 to list on the empty cache, 3 by `mcp list`)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

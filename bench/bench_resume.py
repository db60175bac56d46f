"""`butler resume ID --approve` of one parked round (one write_file), this checkout beside an
older one, interleaved; and how often each reads and verifies the park file.

Run: python bench/bench_resume.py --before DIR  (DIR: a ``git worktree`` of an older commit)

Each run gets a fresh home holding one park made by this checkout's `butler run` (the park
format is the same), so both resume exactly the same kind of park. Reads are counted through
``BUTLER_TEST_COUNT_PARK_READS`` for this checkout; for the older one, by patching
``ParkStore.read_raw`` in the process that resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN, compile_checkouts  # noqa: E402

RUNS = 15
COUNTED = (
    "import os, sys; sys.path[:0] = {paths!r}; sys.argv = ['butler', *sys.argv[1:]]; "
    "from butler_cli.store import parks; raw = parks.ParkStore.read_raw\n"
    "def read_raw(self, pid):\n"
    "    if os.environ.get('COUNT_TO'): open(os.environ['COUNT_TO'], 'a').write('r\\n')\n"
    "    return raw(self, pid)\n"
    "parks.ParkStore.read_raw = read_raw\n"
    "from butler_cli.cli.entry import main; main()"
)


def butler_in(checkout: str | None) -> list[str]:
    paths = [checkout, f"{checkout}/policies"] if checkout else []
    return [sys.executable, "-P", "-c", COUNTED.format(paths=paths)]


def park(root: Path, env: dict[str, str]) -> str:
    model = root / "model.json"
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}
    model.write_text(json.dumps({"turns": [{"tool_calls": [write]}, {"text": "done"}]}))
    ran = subprocess.run(
        [str(BIN / "butler"), "run", "--model", f"scripted:{model}", "go", "--json"],
        cwd=root, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True, help="an older checkout")
    before = parser.parse_args().before
    compile_checkouts(before)
    builds = {"this checkout": None, f"`{before}`": before}
    times: dict[str, list[float]] = {name: [] for name in builds}
    reads: dict[str, int] = {}
    for _ in range(RUNS):
        for name, checkout in builds.items():
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                env = {**os.environ, "BUTLER_HOME": str(root / "home"), "NO_COLOR": "1"}
                env["COUNT_TO"] = str(root / "reads")
                pid = park(root, env)
                start = time.perf_counter()
                subprocess.run(
                    [*butler_in(checkout), "resume", pid, "--approve"],
                    cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                )  # fmt: skip
                times[name].append(time.perf_counter() - start)
                reads[name] = len((root / "reads").read_text().splitlines())
    print("| build | resume of one round (median wall) | park reads per resume |")
    print("|---|---|---|")
    for name in builds:
        print(f"| {name} | {statistics.median(times[name]) * 1000:.0f} ms | {reads[name]} |")


if __name__ == "__main__":
    main()

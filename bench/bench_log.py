"""`butler log` does not grow with the history: 10 conversations, and 10,000, each of realistic
size (a task, tool calls reading files of a few KiB, an answer), with the import floor of our
deps and a search (`log -q`) in the same run.

Run: python bench/bench_log.py [MANY]  (default 10000; prints a Markdown table)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN  # noqa: E402

from butler_cli.store.conversations import ConversationStore  # noqa: E402

RUNS = 11
WORDS = ["garden", "invoice", "奶茶", "holiday", "budget", "dentist", "東京", "report"]


def conversation(i: int) -> list[dict[str, object]]:
    """About 6 KiB of messages: the task, two rounds of file reads, the answer."""
    topic = WORDS[i % len(WORDS)]
    note = f"line {i} about the {topic}, with a few more words to make it real\n" * 40
    messages: list[dict[str, object]] = [
        {"role": "user", "content": [{"type": "text", "text": f"Sort out my {topic} notes #{i}"}]}
    ]
    for k in range(2):
        call = {"type": "tool_use", "id": f"c{k}", "name": "read_file", "input": {"path": f"{k}"}}
        result = {"type": "tool_result", "tool_use_id": f"c{k}", "content": note, "outcome": "ran"}
        text = {"type": "text", "text": "Reading the next note."}
        messages += [
            {"role": "assistant", "content": [text, call]},
            {"role": "user", "content": [result]},
        ]
    answer = {"type": "text", "text": f"Your {topic} notes are sorted: three items left."}
    messages.append({"role": "assistant", "content": [answer]})
    return messages


def make_home(root: Path, name: str, count: int) -> Path:
    home = root / name
    store = ConversationStore(home)
    meta = {"model": "scripted:x.json", "policy": "ask", "cwd": "/home/me", "profile": "default"}
    store.db.execute("PRAGMA synchronous=OFF")  # only builds the fixture faster
    for i in range(count):
        messages = conversation(i)
        cid = store.start("run", str(messages[0]["content"][0]["text"]), meta)  # type: ignore[index]
        store.append(cid, messages, "done", (1200, 80))
    store.close()
    return home


def main() -> None:
    many = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    py, butler = str(BIN / "python"), str(BIN / "butler")
    floor = [py, "-c", "import typer, rich.console, pydantic, platformdirs"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small, big = make_home(root, "small", 10), make_home(root, "big", many)
        runs = {
            "floor": (floor, small),
            "log10": ([butler, "log"], small),
            "logmany": ([butler, "log"], big),
            "q10": ([butler, "log", "-q", "奶茶"], small),
            "qmany": ([butler, "log", "-q", "奶茶"], big),
        }
        t = _interleaved(runs)
        size = (big / "conversations.db").stat().st_size
        inproc = {name: _in_process(home) for name, home in (("10", small), ("many", big))}
    commit = os.popen(f"git -C {Path(__file__).parent} rev-parse --short HEAD").read().strip()
    print(f"commit {commit}, {many:,} conversations ({size / 2**20:.0f} MiB)")
    print("| measure | median | ratio |")
    print("|---|---|---|")
    print(f"| import floor (typer, rich, pydantic, platformdirs) | {t['floor'] * 1000:.0f} ms | |")
    print(
        f"| butler log, 10 conversations | {t['log10'] * 1000:.0f} ms | "
        f"{t['log10'] / t['floor']:.2f}x floor |"
    )
    print(
        f"| butler log, {many:,} conversations | {t['logmany'] * 1000:.0f} ms | "
        f"{t['logmany'] / t['log10']:.2f}x the 10 (target ≤ 1.2x) |"
    )
    print(f"| in process: open the store and list 20, 10 | {inproc['10'] * 1000:.2f} ms | |")
    print(
        f"| in process: open the store and list 20, {many:,} | {inproc['many'] * 1000:.2f} ms | "
        f"{inproc['many'] / inproc['10']:.2f}x the 10 |"
    )
    print(
        f"| butler log -q 奶茶, 10 | {t['q10'] * 1000:.0f} ms | {t['q10'] / t['floor']:.2f}x floor |"
    )
    print(
        f"| butler log -q 奶茶, {many:,} | {t['qmany'] * 1000:.0f} ms | "
        f"{t['qmany'] / t['q10']:.2f}x the 10 |"
    )


def _in_process(home: Path) -> float:
    """Best of 50: open the database (migrations checked) and read the listing, then close."""
    best = float("inf")
    for _ in range(50):
        start = time.perf_counter()
        store = ConversationStore(home)
        store.recent(20)
        store.close()
        best = min(best, time.perf_counter() - start)
    return best


def _interleaved(runs: dict[str, tuple[list[str], Path]]) -> dict[str, float]:
    """Medians of the commands, run in turn so machine noise hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(RUNS):
        for name, (argv, home) in runs.items():
            env = {**os.environ, "BUTLER_HOME": str(home)}
            start = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


if __name__ == "__main__":
    main()

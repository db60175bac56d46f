"""`butler pending` follows what is pending, not the history: 10 pending parks alone, and the
same 10 beside 100,000 finished ones, with the import floor of our deps in the same run.

Run: python bench/bench_pending.py [FINISHED]  (default 100000; prints a Markdown table)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN, compile_checkouts, sample_state  # noqa: E402

from butler_cli.store.parks import ParkStore, encode_park  # noqa: E402

RUNS = 11


def make_home(root: Path, name: str, pending: int, finished: int) -> Path:
    """Pending parks through the store; finished ones written straight into ``done/`` as a
    resolve leaves them (no fsync each: this only builds the fixture faster)."""
    home = root / name
    store = ParkStore(home)
    for _ in range(pending):
        store.save(sample_state(store.new_id(), 12))
    key = store.key(create=True)
    assert key is not None
    store.done_dir.mkdir(parents=True, exist_ok=True)
    template = sample_state("aaaaaaaa", 12)
    for i in range(finished):
        pid = "".join("abcdefghjkmnpqrstuvwxyz23456789"[(i // 31**k) % 31] for k in range(8))
        state = template.model_copy(update={"id": pid, "status": "resolved"})
        with open(store.done_path(pid), "wb") as fh:
            fh.write(encode_park(key, state))
    return home


def main() -> None:
    finished = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    compile_checkouts()
    py, butler = str(BIN / "python"), str(BIN / "butler")
    floor = [py, "-c", "import typer, rich.console, pydantic, platformdirs"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small = make_home(root, "small", 10, 0)
        big = make_home(root, "big", 10, finished)
        times = _interleaved(floor, butler, small, big)
    t_floor, t_small, t_big = times
    print(f"commit {os.popen('git rev-parse --short HEAD').read().strip()}, {finished:,} finished")
    print("| measure | median | ratio |")
    print("|---|---|---|")
    print(f"| import floor (typer, rich, pydantic, platformdirs) | {t_floor * 1000:.0f} ms | |")
    print(
        f"| butler pending, 10 pending | {t_small * 1000:.0f} ms | {t_small / t_floor:.2f}x floor |"
    )
    print(
        f"| butler pending, 10 pending + {finished:,} finished | {t_big * 1000:.0f} ms | "
        f"{t_big / t_small:.2f}x the 10-park run (target ≤ 1.2x) |"
    )


def _interleaved(floor: list[str], butler: str, small: Path, big: Path) -> tuple[float, ...]:
    """Medians of the three commands, run in turn so machine noise hits all alike."""
    import statistics
    import subprocess
    import time

    samples: list[list[float]] = [[], [], []]
    runs = [(floor, None), ([butler, "pending"], small), ([butler, "pending"], big)]
    for _ in range(RUNS):
        for i, (argv, home) in enumerate(runs):
            env = {**os.environ, "BUTLER_HOME": str(home or small)}
            start = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            samples[i].append(time.perf_counter() - start)
    return tuple(statistics.median(s) for s in samples)


if __name__ == "__main__":
    main()

"""`butler --help` and `butler pending` (10 and 1000 parks) beside the import floor of our deps.

Run: python bench/bench_cli.py  (prints a Markdown table; see BENCHMARKS.md)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN, median_runs, sample_state  # noqa: E402

from butler_cli.store.parks import ParkStore  # noqa: E402

RUNS = 15


def make_home(root: Path, n: int) -> Path:
    home = root / f"home{n}"
    store = ParkStore(home)
    for _ in range(n):
        store.save(sample_state(store.new_id(), 12))
    return home


def main() -> None:
    py, butler = str(BIN / "python"), str(BIN / "butler")
    floor = [py, "-c", "import typer, rich.console, pydantic, platformdirs"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = []
        res = median_runs(
            {"floor": floor, "help": [butler, "--help"]}, RUNS, {"BUTLER_HOME": str(root / "none")}
        )
        rows.append(("butler --help", res["help"], res["floor"], 1.3))
        for n in (10, 1000):
            home = make_home(root, n)
            res = median_runs(
                {"floor": floor, "pending": [butler, "pending"]}, RUNS, {"BUTLER_HOME": str(home)}
            )
            rows.append((f"butler pending, {n} parks", res["pending"], res["floor"], 2.0))
    print("| command | median | floor (same run) | ratio | target |")
    print("|---|---|---|---|---|")
    for name, t, base, target in rows:
        ok = "✓" if t / base <= target else "✗"
        print(
            f"| {name} | {t * 1000:.0f} ms | {base * 1000:.0f} ms | {t / base:.2f}x | ≤ {target}x {ok} |"
        )


if __name__ == "__main__":
    main()

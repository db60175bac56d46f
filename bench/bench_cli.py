"""`butler --help` and `butler pending` (10 and 1000 parks) beside the import floor of our deps.

Run: python bench/bench_cli.py [--before DIR]...  (prints a Markdown table; see BENCHMARKS.md)

``--before DIR`` adds, for each command, an interleaved row for the butler_cli found in DIR (a
``git worktree`` of an older commit), first on sys.path; give it more than once for more rows.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN, compile_checkouts, median_runs, sample_state  # noqa: E402

from butler_cli.store.parks import ParkStore  # noqa: E402

RUNS = 15


def make_home(root: Path, n: int) -> Path:
    home = root / f"home{n}"
    store = ParkStore(home)
    for _ in range(n):
        store.save(sample_state(store.new_id(), 12))
    return home


def older(py: str, checkout: str, *args: str) -> list[str]:
    """``butler ARGS`` run from the butler_cli in ``checkout`` (-P: not the current folder)."""
    paths = [checkout, f"{checkout}/policies"]  # its shipped policies import its butler_cli
    code = f"import sys; sys.path[:0] = {paths!r}; sys.argv = ['butler', *sys.argv[1:]]; "
    code += "from butler_cli.cli.entry import main; main()"
    return [py, "-P", "-c", code, *args]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", action="append", default=[], help="an older checkout")
    befores = parser.parse_args().before
    compile_checkouts(*befores)
    py, butler = str(BIN / "python"), str(BIN / "butler")
    floor = [py, "-c", "import typer, rich.console, pydantic, platformdirs"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = []
        cases = [("butler --help", ["--help"], root / "none", 1.3)]
        cases += [
            (f"butler pending, {n} parks", ["pending"], make_home(root, n), 2.0) for n in (10, 1000)
        ]
        for name, args, home, target in cases:
            commands = {"floor": floor, "now": [butler, *args]}
            commands |= {f"b{i}": older(py, b, *args) for i, b in enumerate(befores)}
            res = median_runs(commands, RUNS, {"BUTLER_HOME": str(home)})
            for i, before in enumerate(befores):
                rows.append((f"{name}, `{before}`", res[f"b{i}"], res["floor"], None))
            rows.append((name, res["now"], res["floor"], target))
    print("| command | median | floor (same run) | ratio | target |")
    print("|---|---|---|---|---|")
    for name, t, base, target in rows:
        goal = f"≤ {target}x {'✓' if t / base <= target else '✗'}" if target else ""
        print(f"| {name} | {t * 1000:.0f} ms | {base * 1000:.0f} ms | {t / base:.2f}x | {goal} |")


if __name__ == "__main__":
    main()

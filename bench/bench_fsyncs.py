"""How many fsyncs one inbox decision makes: a real `butler serve` under
``strace -f -e trace=fsync,fdatasync``, an approved `write_file` (a scripted model), counted
per decision from the second on (the first also creates the databases).

    python bench/bench_fsyncs.py [DECISIONS]        (needs strace; default 4)

``BENCH_CHECKOUT=/path/to/another/checkout`` counts that checkout's instead (before/after).
Issue 34: 12 fsync + 4 fdatasync before; a decision as durable with at most 3.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_decide import outcome_of, park, post_decision, write_home  # noqa: E402
from common import BIN  # noqa: E402

from butler_cli.store.outcomes import OutcomeLog  # noqa: E402


def main() -> None:
    decisions = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    root = Path(tempfile.mkdtemp())
    home, work, env = write_home(root, 0)
    if os.environ.get("BENCH_CHECKOUT"):
        env = {**env, "PYTHONPATH": os.environ["BENCH_CHECKOUT"]}
    trace = root / "trace.txt"
    argv = ["strace", "-f", "-e", "trace=fsync,fdatasync", "-o", str(trace)]
    argv += [str(BIN / "butler"), "serve", "--port", "0", "--no-scheduler"]
    proc = subprocess.Popen(
        argv, cwd=work, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        if found:
            break
    else:
        raise AssertionError("butler serve printed no URL")
    base, token = f"http://127.0.0.1:{found.group(1)}", found.group(2)
    store = OutcomeLog(home)
    counts = []
    try:
        for _ in range(decisions):
            pid = park(root, work, env, "-one")
            time.sleep(0.3)
            before = trace.read_text()
            post_decision(base, token, pid)
            while outcome_of(store, pid) is None:
                time.sleep(0.01)
            time.sleep(0.3)
            new = trace.read_text()[len(before) :]
            calls = re.findall(r"\b(fsync|fdatasync)\(", new)
            counts.append((calls.count("fsync"), calls.count("fdatasync")))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    for n, (fs, fds) in enumerate(counts, 1):
        print(f"decision {n}: {fs} fsync, {fds} fdatasync")


if __name__ == "__main__":
    main()

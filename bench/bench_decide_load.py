"""Inbox Approve with 32 clients deciding at once, beside a durable floor, in the same run.

`butler serve` (no scheduler) on 127.0.0.1; each round, 32 clients each POST an Approve of a
park of their own at once (a scripted model's `write_file`, then its answer: the page is
answered when the task has ended), latency per POST from send to answer. The parks are copies
of one parked by `butler run` (new ids, signed with the home's key), so every decision runs
on the session the server keeps for that context, as a person's would.

The durable floor does, for 32 parks at once (32 threads of one process), what a decision
can never do without: read the park file and check its HMAC, append a line to a ledger and
fsync it, write the new park to a temp file, rename it into place and fsync the folder. Its
rounds are interleaved with the inbox's so machine noise hits both alike.

Goal (issue 34): p50 within 2x the floor's, p99 within 3x.

    python bench/bench_decide_load.py [ROUNDS] [CLIENTS]    (defaults 6 and 32)
    python bench/bench_decide_load.py --in-process [DECISIONS]  (one at a time, no HTTP)

``--in-process``: the inbox's own decision step (``Decider``: the one door, the task, the
outcome kept) one after another on a kept session, in this process: wall, user and system
time per decision — what 32 decisions at once queue for on one interpreter.

``BENCH_CHECKOUT=/path/to/another/checkout`` runs that checkout's `butler serve` instead (its
folder first on PYTHONPATH), for a before/after beside the same floor.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_decide import park, write_home  # noqa: E402
from bench_inbox import start_serve  # noqa: E402
from bench_inbox_load import pct  # noqa: E402
from common import compile_checkouts  # noqa: E402

from butler_cli.store.parks import ParkStore  # noqa: E402


def copies(home: Path, original: str, count: int) -> list[str]:
    """``count`` pending copies of park ``original`` under new ids, signed with the home's key."""
    store = ParkStore(home)
    state = store.load(original)
    made = []
    for _ in range(count):
        state.id = store.new_id()
        store.save(state)
        made.append(state.id)
    return made


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def at_once(work: list[Callable[[], None]]) -> list[float]:
    """Run every callable on a thread of its own, released together; each one's seconds."""
    times = [0.0] * len(work)
    gate = threading.Barrier(len(work))

    def one(i: int) -> None:
        gate.wait()
        began = time.perf_counter()
        work[i]()
        times[i] = time.perf_counter() - began

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


late: list[str] = []


def approve(base: str, token: str, csrf: str, park_id: str) -> Callable[[], None]:
    def post() -> None:
        body = urllib.parse.urlencode({"decision": "approve", "note": ""}).encode()
        req = urllib.request.Request(
            f"{base}/park/{park_id}/decide",
            data=body,
            headers={"Authorization": f"Bearer {token}", "X-CSRF-Token": csrf},
        )
        with urllib.request.urlopen(req, timeout=120) as res:
            answer = json.loads(res.read())
        assert answer.get("ok"), answer
        if answer.get("status") != "done":  # answered "continuing" after 3 s
            late.append(park_id)

    return post


def floor_step(folder: Path, key: bytes, source: Path, n: int) -> Callable[[], None]:
    """One durable decision with nothing else: read + HMAC, ledger append + fsync, write,
    rename + folder fsync."""
    ledger = folder / "ledger.jsonl"
    target = folder / f"park{n}.json"

    def step() -> None:
        data = source.read_bytes()
        head, _, body = data.partition(b'",\n"park": ')
        mac = hmac.new(key, body[:-3], hashlib.sha256).hexdigest()
        hmac.compare_digest(mac, head[-64:].decode("ascii", "replace"))
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f'{{"park":"p{n}","event":"decided"}}\n'.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp = folder / f".park{n}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, target)
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    return step


def in_process(decisions: int) -> None:
    import resource

    from butler_cli.app.parks.door import Answer
    from butler_cli.app.run.session import Sessions
    from butler_cli.serve.decide import Decider

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, work, env = write_home(root, 0)
        original = park(root, work, env, "-one")
        os.environ["BUTLER_HOME"] = str(home)
        os.chdir(work)
        decider = Decider(home, Sessions(home))
        ids = copies(home, original, decisions + 10)
        for n, pid in enumerate(ids):
            if n == 10:  # the first ten warm the session: not counted
                r0, began = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            told, ended = decider._decide(pid, Answer(True))
            assert told.ok and ended is not None, told
            decider._record(ended)
        r1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - began
        decider.sessions.close()
    per = 1000 / decisions
    print(
        f"{decisions} decisions one at a time, in process: wall {wall * per:.1f} ms, user "
        f"{(r1.ru_utime - r0.ru_utime) * per:.2f} ms, system {(r1.ru_stime - r0.ru_stime) * per:.2f} "
        "ms per decision"
    )


def main() -> None:
    if "--in-process" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--in-process"]
        in_process(int(rest[0]) if rest else 60)
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    compile_checkouts()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, work, env = write_home(root, 0)
        if os.environ.get("BENCH_CHECKOUT"):
            env = {**env, "PYTHONPATH": os.environ["BENCH_CHECKOUT"]}
            commit = subprocess.run(
                ["git", "-C", os.environ["BENCH_CHECKOUT"], "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
            ).stdout.strip()
        original = park(root, work, env, "-one")
        source = ParkStore(home).path_for(original)
        key = (home / "park.key").read_bytes()
        floor_dir = root / "floor"
        floor_dir.mkdir()
        proc, port, token = start_serve(env, cwd=work)
        base = f"http://127.0.0.1:{port}"
        inbox: list[float] = []
        floor: list[float] = []
        cpu = 0.0
        try:
            with urllib.request.urlopen(
                urllib.request.Request(base + "/", headers={"Authorization": f"Bearer {token}"})
            ) as res:
                page = res.read().decode()
            csrf = page.split("name='csrf-token' content='", 1)[1].split("'", 1)[0]
            for r in range(rounds + 1):  # the first round warms the kept sessions: not counted
                ids = copies(home, original, clients)
                before = cpu_seconds(proc.pid)
                took = at_once([approve(base, token, csrf, pid) for pid in ids])
                if r:
                    cpu += cpu_seconds(proc.pid) - before
                steps = [floor_step(floor_dir, key, source, n) for n in range(clients)]
                floored = at_once(steps)
                if r:
                    inbox.extend(took)
                    floor.extend(floored)
        finally:
            proc.terminate()
            proc.wait(60)
    p50, p99 = statistics.median(inbox), pct(inbox, 99)
    f50, f99 = statistics.median(floor), pct(floor, 99)
    print(
        f"commit {commit}, load {os.getloadavg()[0]:.1f}, {clients} clients at once, "
        f"{rounds} rounds ({len(inbox)} decisions)\n"
    )
    print("| | p50 | p99 |\n|---|---|---|")
    print(f"| inbox Approve, {clients} at once | {p50 * 1000:.1f} ms | {p99 * 1000:.1f} ms |")
    print(f"| durable floor, {clients} at once | {f50 * 1000:.1f} ms | {f99 * 1000:.1f} ms |")
    print(f"| ratio | {p50 / f50:.2f}x | {p99 / f99:.2f}x |")
    print(f"\n`butler serve`'s CPU per decision: {cpu / len(inbox) * 1000:.1f} ms")
    if late:
        print(f"\n{len(late)} decisions were answered 'continuing' (their task ran past 3 s)")


if __name__ == "__main__":
    main()

"""An approval in the inbox beside `butler resume --approve` of the same kind of park, with
three MCP servers configured (none of their tools used by the task).

Each sample parks a fresh `write_file` with `butler run` (a scripted model), then approves it
either with `butler resume ID --approve` (wall time of the process) or by a POST to a running
`butler serve` (wall time until the task's outcome is recorded: the page answers at once with it, or after
3 s with "continuing"). The inbox is measured twice: each park made by a model of its own (a
context the server has not seen: the click builds a session) and every park made by one model
in one folder, as a person's are (the click runs on the session the server keeps, issue 23).
The kinds are interleaved so machine noise hits them alike.

Run: python bench/bench_decide.py [RUNS]  (default 9; prints a Markdown table)
Target (issue 23): the inbox answers within 1.2x of `butler resume`.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_inbox import start_serve  # noqa: E402
from common import BIN, compile_checkouts  # noqa: E402

from butler_cli.store.outcomes import KeptOutcome, OutcomeLog  # noqa: E402

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_notes_server.py"


def write_home(root: Path, servers: int) -> tuple[Path, Path, dict[str, str]]:
    home, work = root / "home", root / "work"
    home.mkdir()
    work.mkdir()
    notes = root / "notes"
    notes.mkdir()
    config = "".join(
        f'[mcp.notes{i}]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
        f'env = {{ NOTES_DIR = "{notes}" }}\n\n'
        for i in range(servers)
    )
    (home / "config.toml").write_text(config)
    env = {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1"}
    return home, work, env


def park(root: Path, work: Path, env: dict[str, str], n: int | str) -> str:
    """A parked write by the scripted model ``script{n}.json`` (one name: one model)."""
    script = root / f"script{n}.json"
    turns = [
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "write_file",
                    "arguments": {"path": f"out{n}.txt", "content": "x"},
                }
            ]
        },
        {"text": "written"},
    ]
    if not script.exists():
        script.write_text(json.dumps({"turns": turns}))
    ran = subprocess.run(
        [str(BIN / "butler"), "run", "--model", f"scripted:{script}", "write", "--json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout)["park_id"])


def post_decision(base: str, token: str, park_id: str) -> dict[str, object]:
    auth = {"Authorization": f"Bearer {token}"}
    with urllib.request.urlopen(urllib.request.Request(base + "/", headers=auth)) as res:
        page = res.read().decode()
    found = re.search(r"name='csrf-token' content='([^']+)'", page)
    assert found, page[:300]
    body = urllib.parse.urlencode({"decision": "approve", "note": ""}).encode()
    req = urllib.request.Request(
        f"{base}/park/{park_id}/decide",
        data=body,
        headers={**auth, "X-CSRF-Token": found.group(1)},
    )
    with urllib.request.urlopen(req, timeout=120) as res:
        return dict(json.loads(res.read()))


def outcome_of(store: OutcomeLog, park_id: str) -> KeptOutcome | None:
    """The inbox's kept outcome of ``park_id`` (its own store since issue 23), if written."""
    return next((o for o in store.recent(50)[0] if o.park == park_id), None)


def measure(runs: int, servers: int) -> tuple[float, float, float]:
    """Median seconds of (resume, inbox with a new context, inbox with a kept session)
    approvals in a home with ``servers`` MCP servers."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, work, env = write_home(root, servers)
        store = OutcomeLog(home)
        proc, port, token = start_serve(env, cwd=work)
        base = f"http://127.0.0.1:{port}"
        resume: list[float] = []
        inbox: list[float] = []
        kept: list[float] = []
        try:
            for n in range(runs):
                pid = park(root, work, env, 2 * n)
                start = time.perf_counter()
                done = subprocess.run(
                    [str(BIN / "butler"), "resume", pid, "--approve"],
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                resume.append(time.perf_counter() - start)
                assert done.returncode == 0, done.stderr
                for pid, into in (
                    (park(root, work, env, 2 * n + 1), inbox),
                    (park(root, work, env, "-one"), kept),
                ):
                    start = time.perf_counter()
                    answer = post_decision(base, token, pid)
                    while (kept_outcome := outcome_of(store, pid)) is None:
                        time.sleep(0.01)  # answered "continuing": wait for the recorded outcome
                    into.append(time.perf_counter() - start)
                    assert answer.get("ok"), answer
                    assert kept_outcome.status == "done", kept_outcome
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return statistics.median(resume), statistics.median(inbox), statistics.median(kept)


def build_or_lend(servers: int, times: int = 41) -> tuple[float, float]:
    """Median seconds, in this process, to build a session for a park's context (what every
    click did before issue 23) and to lend a kept one (its files compared, its block
    recomposed to check it: what a click does now)."""
    from butler_cli.app.config.options import RunOptions
    from butler_cli.app.run.session import Sessions, open_session
    from butler_cli.core.park import RunContext

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, work, env = write_home(root, servers)
        os.environ["BUTLER_HOME"] = str(home)
        script = root / "script.json"
        script.write_text(json.dumps({"turns": [{"text": "hi"}]}))
        context = RunContext(task="t", model=f"scripted:{script}", policy="ask", cwd=str(work))
        built: list[float] = []
        lent: list[float] = []
        sessions = Sessions(home)
        sessions.give_back(sessions.lend(RunOptions(), work, context))
        for _ in range(times):
            start = time.perf_counter()
            open_session(RunOptions(), cwd=work, home=home, recorded=context).close()
            built.append(time.perf_counter() - start)
            start = time.perf_counter()
            sessions.give_back(sessions.lend(RunOptions(), work, context))
            lent.append(time.perf_counter() - start)
        sessions.close()
    return statistics.median(built), statistics.median(lent)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    compile_checkouts()
    print(f"{runs} approvals of each kind, interleaved, per row\n")
    print(
        "| MCP servers configured (none used) | `butler resume ID --approve` "
        "| inbox Approve, a new context | inbox Approve, a kept session | kept / resume |"
    )
    print("|---|---|---|---|---|")
    for servers in (0, 3):
        r, i, k = measure(runs, servers)
        print(
            f"| {servers} | {r * 1000:.0f} ms | {i * 1000:.1f} ms | {k * 1000:.1f} ms "
            f"| {k / r:.2f}x |"
        )
    print("\n| MCP servers configured | build a session | lend a kept one |\n|---|---|---|")
    for servers in (0, 3):
        b, lend = build_or_lend(servers)
        print(f"| {servers} | {b * 1000:.2f} ms | {lend * 1000:.2f} ms |")


if __name__ == "__main__":
    main()

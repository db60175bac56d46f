"""The inbox under load: 1,000 parks waiting, 1, 8 and 32 clients at once, beside a bare
Starlette app serving a page of the same bytes on the same uvicorn, in the same run.

- ``GET /`` (every park, every argument: the whole page) and ``GET /parts?v=…`` (the page's
  live update: a 204 when nothing changed, the parts as JSON when the version the page holds
  is not the current one), latency p50 and p99, each client a keep-alive
  connection on 127.0.0.1 running a bounded loop of requests;
- the server's resident memory before and after 20,000 more requests (one in twenty a whole
  page, the rest the live update), sampled every 5,000.

The bare app answers ``/`` with the inbox page's own bytes and ``/parts`` with a 204 when the
version matches, else with the inbox's own parts JSON: what Starlette and uvicorn cost
with no butler behind them.

Target (issue 26): p99 at 32 clients within 2x the bare page's; memory flat.

    python bench/bench_inbox_load.py [PARKS] [CLIENTS,...] [--no-memory]

``BENCH_CHECKOUT=/path/to/another/checkout`` serves that checkout's inbox (before/after).
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_inbox import make_home, start_serve  # noqa: E402

LEVELS = (1, 8, 32)
PAGES = 160  # page requests at each level, shared among the clients
PARTS = 960  # live-update requests at each level
MEMORY_REQUESTS = 20_000

BARE = """
import sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

page = open(sys.argv[1], "rb").read()
version = sys.argv[2]
changed = open(sys.argv[4], "rb").read()


async def index(request):
    return HTMLResponse(page)


async def parts(request):
    if request.query_params.get("v") == version:
        return Response(status_code=204)
    return Response(changed, media_type="application/json")


app = Starlette(routes=[Route("/", index), Route("/parts", parts)])
config = uvicorn.Config(
    app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning", access_log=False,
    lifespan="off",
)
uvicorn.Server(config).run()
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load(port: int, token: str, paths: list[str], clients: int) -> list[float]:
    """Each path requested once, spread over ``clients`` keep-alive connections; latencies."""
    times: list[float] = []
    lock = threading.Lock()
    share = [paths[i::clients] for i in range(clients)]

    def client(mine: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        headers = {"Authorization": f"Bearer {token}", "Host": f"127.0.0.1:{port}"}
        took = []
        for path in mine:
            began = time.perf_counter()
            conn.request("GET", path, headers=headers)
            res = conn.getresponse()
            res.read()
            took.append(time.perf_counter() - began)
            assert res.status in (200, 204), res.status
        conn.close()
        with lock:
            times.extend(took)

    threads = [threading.Thread(target=client, args=(m,)) for m in share]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    parks = int(args[0]) if args else 1000
    levels = tuple(int(n) for n in args[1].split(",")) if len(args) > 1 else LEVELS
    with_memory = "--no-memory" not in sys.argv
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        home = make_home(Path(tmp), parks)
        env = {**os.environ, "BUTLER_HOME": str(home)}
        if os.environ.get("BENCH_CHECKOUT"):  # another checkout's serve (before/after)
            env["PYTHONPATH"] = os.environ["BENCH_CHECKOUT"]
            commit = subprocess.run(
                ["git", "-C", env["PYTHONPATH"], "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
            ).stdout.strip()
        serve, port, token = start_serve(env)
        bare = None
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            auth = {"Authorization": f"Bearer {token}"}
            conn.request("GET", "/", headers=auth)
            page = conn.getresponse().read()
            conn.request("GET", "/parts?v=", headers=auth)
            changed = conn.getresponse().read()
            version = json.loads(changed)["version"]
            conn.close()
            page_file = Path(tmp) / "page.html"
            page_file.write_bytes(page)
            changed_file = Path(tmp) / "parts.json"
            changed_file.write_bytes(changed)
            bare_port = free_port()
            bare = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    BARE,
                    str(page_file),
                    version,
                    str(bare_port),
                    str(changed_file),
                ]
            )
            deadline = time.monotonic() + 30
            while True:
                try:
                    http.client.HTTPConnection("127.0.0.1", bare_port, timeout=5).connect()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the bare app never listened"
                    time.sleep(0.05)
            servers = {"butler serve": (port, serve.pid), "bare Starlette": (bare_port, bare.pid)}
            rows = []
            for clients in levels:
                for what, paths in (
                    ("page", ["/"] * PAGES),
                    ("live update, nothing changed (204)", [f"/parts?v={version}"] * PARTS),
                    ("live update, changed (200)", ["/parts?v=old"] * PAGES),
                ):
                    got = {}
                    cpu = {}
                    for name, (p, pid) in servers.items():
                        before = cpu_seconds(pid)
                        got[name] = load(p, token, paths, clients)
                        cpu[name] = (cpu_seconds(pid) - before) / len(paths)
                    rows.append((clients, what, got, cpu))
            memory: dict[str, list[int]] = {name: [] for name in servers}
            mixed = ["/" if i % 20 == 0 else f"/parts?v={version}" for i in range(5000)]
            for name, (p, pid) in servers.items() if with_memory else ():
                memory[name].append(rss_kib(pid))
                for _ in range(MEMORY_REQUESTS // len(mixed)):
                    load(p, token, mixed, 8)
                    memory[name].append(rss_kib(pid))
        finally:
            serve.terminate()
            serve.wait(30)
            if bare is not None:
                bare.terminate()
                bare.wait(30)
    print(
        f"commit {commit}, load {os.getloadavg()[0]:.1f}, {parks} parks, page {len(page)} bytes\n"
    )
    print(
        "| clients | request | butler p50 | butler p99 | bare p50 | bare p99 | p99 ÷ bare "
        "| CPU per request, butler / bare |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for clients, what, got, cpu in rows:
        b, s = got["butler serve"], got["bare Starlette"]
        print(
            f"| {clients} | {what} | {statistics.median(b) * 1000:.1f} ms | "
            f"{pct(b, 99) * 1000:.1f} ms | {statistics.median(s) * 1000:.1f} ms | "
            f"{pct(s, 99) * 1000:.1f} ms | {pct(b, 99) / pct(s, 99):.2f}x | "
            f"{cpu['butler serve'] * 1000:.2f} / {cpu['bare Starlette'] * 1000:.2f} ms |"
        )
    if not with_memory:
        return
    print("\n| server | RSS at start, then after each 5,000 requests (MiB) |")
    print("|---|---|")
    for name, kib in memory.items():
        print(f"| {name} | {' → '.join(f'{k / 1024:.1f}' for k in kib)} |")


if __name__ == "__main__":
    main()

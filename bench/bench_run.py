"""`butler run` of one tool round (scripted model: `now`, then an answer) beside the import floor
of our own dependencies (typer, rich.console, pydantic, platformdirs), medians of interleaved
runs in the same run. Target: at most 1.5x the floor.

Run: python bench/bench_run.py [--before DIR]... [--command | --server [--llm PATH] | --tls]

``--command``: the round is one sandboxed ``run_command`` (``true``) under an allow-all policy
and ``--yes-safe`` instead of ``now``: the sandbox's argv built and bubblewrap started.

``--server``: one prompt to an OpenAI-compatible server instead (a loopback server in this
process, tests/fake_llm.py, streaming a short answer: its CPU is not the commands'), as a person
with a local model runs it: ``butler run --model openai-compatible:local --base-url URL``.
``--llm PATH`` adds simonw's ``llm`` (``pip install llm`` in a venv of its own) as a peer: the
same prompt to the same server through its ``extra-openai-models.yaml``, ratios pair by pair
(each round runs every command once, the ratio of each round's pair, then the median).

``--tls``: three model calls in one run (two ``now`` rounds, then the answer) to a loopback
HTTPS server with a self-signed certificate (SSL_CERT_FILE names it), one server per command so
each counts the TCP+TLS connections its command opened (issue 34: a kept-alive connection
against one per call).

``--before DIR`` adds an interleaved row for the butler_cli found in DIR (a ``git worktree`` of
an older commit), put first on PYTHONPATH with DIR/policies (the shipped policies import the
butler_cli beside them); give it more than once for more rows. The main row uses the caller's
PYTHONPATH, so a clean checkout of the commit being measured can be named the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from fake_llm import FakeLLM, Reply, openai_stream, self_signed  # noqa: E402

from butler_cli.providers.remote.http import Wire  # noqa: E402

RUNS = 15
ONE_ROUND = {"turns": [{"tool_calls": [{"name": "now", "arguments": {}}]}, {"text": "done"}]}
ONE_COMMAND = {
    "turns": [
        {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["true"]}}]},
        {"text": "done"},
    ]
}
ALLOW_ALL = "from butler_cli import allow\n\ndef classify(name, args):\n    return allow()\n"
PROMPT = "Write a haiku about tea."
ANSWER = "Steam curls from the cup; / leaves unfold in quiet heat, / the kettle rests now."
FLOOR = "import typer, rich.console, pydantic, platformdirs"


def median_runs(
    commands: dict[str, Sequence[str]],
    runs: int,
    env: dict[str, str],
    paths: dict[str, str | None],
    least: dict[str, float] | None = None,
    samples: dict[str, tuple[list[float], list[float]]] | None = None,
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU (user + system) seconds of each command, runs interleaved. CPU time
    moves far less than wall time when the shared machine is busy. ``samples``: filled with
    each command's (wall, CPU) of every round, in order, for ratios pair by pair."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            # a home of its own: the entry-point scan is kept in the home under a fingerprint
            # of sys.path, so checkouts sharing one would each miss the other's copy every run
            full_env = {**os.environ, **env, "BUTLER_HOME": f"{env['BUTLER_HOME']}-{name}"}
            if paths.get(name):
                # its shipped policies too: they import the butler_cli beside them
                full_env["PYTHONPATH"] = os.pathsep.join(
                    [f"{paths[name]}", f"{paths[name]}/policies"]
                )
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
            )
            wall[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if least is not None:  # the least CPU time: what the work costs when nothing interrupts it
        least.update({n: min(cpu[n]) for n in commands})
    if samples is not None:
        samples.update({n: (wall[n], cpu[n]) for n in commands})
    return {n: (statistics.median(wall[n]), statistics.median(cpu[n])) for n in commands}


def compile_trees(py: str, befores: list[str]) -> None:
    """Byte-compile every checkout timed: with PYTHONDONTWRITEBYTECODE set (as it is on this
    project's machines) a fresh worktree would compile each module on every run, and its row
    would time the compiler."""
    roots = [Path(__file__).parent.parent, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    roots += [Path(before) for before in befores]
    for root in {Path(r) for r in roots if r}:
        trees = [str(root / t) for t in ("butler_cli", "policies") if (root / t).is_dir()]
        if trees:
            subprocess.run(
                [py, "-m", "compileall", "-q", *trees], check=True, stdout=subprocess.DEVNULL
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--before",
        action="append",
        default=[],
        help="a checkout whose butler_cli to time beside this one (repeatable)",
    )
    parser.add_argument("--runs", type=int, default=RUNS, help="interleaved rounds")
    parser.add_argument("--command", action="store_true", help="one sandboxed run_command")
    parser.add_argument("--server", action="store_true", help="one prompt to a loopback server")
    parser.add_argument("--llm", help="simonw's `llm` executable, the peer of --server")
    parser.add_argument("--tls", action="store_true", help="three calls to a loopback TLS server")
    args = parser.parse_args()
    py, butler = str(BIN / "python"), str(BIN / "butler")
    compile_trees(py, args.before)
    if args.tls:
        tls_rows(py, butler, args.before, args.runs)
        return
    if args.server:
        server_rows(py, butler, args.before, args.runs, args.llm)
        return
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "one.json"
        script.write_text(json.dumps(ONE_COMMAND if args.command else ONE_ROUND), "utf-8")
        run = [butler, "run", "--model", f"scripted:{script}", "what time is it?"]
        if args.command:
            policy = Path(tmp) / "allow_all.py"
            policy.write_text(ALLOW_ALL, encoding="utf-8")
            run += ["--policy", f"{policy}:classify", "--yes-safe"]
        commands = {
            "floor": [py, "-c", FLOOR],
            "run": run,
        }
        env = {"BUTLER_HOME": str(Path(tmp) / "home")}
        # -P: the current folder is not put on sys.path, so PYTHONPATH decides.
        entry = "import sys; sys.argv = ['butler', *sys.argv[1:]]; "
        entry += "from butler_cli.cli.entry import main; main()"
        paths: dict[str, str | None] = {}
        for i, before in enumerate(args.before):
            commands[f"before{i}"] = [py, "-P", "-c", entry, *run[1:]]
            paths[f"before{i}"] = before
        least: dict[str, float] = {}
        med = median_runs(commands, args.runs, env, paths, least)
    (floor, floor_cpu) = med["floor"]
    print("| measure | wall, median | ratio | CPU, median | ratio | CPU, least | ratio | target |")
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| floor: import typer, rich.console, pydantic, platformdirs | {floor * 1000:.0f} ms "
        f"| 1.00x | {floor_cpu * 1000:.0f} ms | 1.00x | {least['floor'] * 1000:.0f} ms | 1.00x | |"
    )
    rows = [(f"before{i}", f"`butler run`, one round, `{b}`") for i, b in enumerate(args.before)]
    rows.append(("run", ""))
    for key, label in rows:
        if key not in med:
            continue
        wall, cpu = med[key]
        target = ""
        if key == "run":
            label = "`butler run`, one round"
            target = "≤ 1.5x " + ("✓" if wall / floor <= 1.5 else "✗")
        low = least[key]
        print(
            f"| {label} | {wall * 1000:.0f} ms | {wall / floor:.2f}x | {cpu * 1000:.0f} ms "
            f"| {cpu / floor_cpu:.2f}x | {low * 1000:.0f} ms | {low / least['floor']:.2f}x "
            f"| {target} |"
        )


ENTRY = "import sys; sys.argv = ['butler', *sys.argv[1:]]; from butler_cli.cli.entry import main; main()"


def server_rows(py: str, butler: str, befores: list[str], runs: int, llm: str | None) -> None:
    """``--server``: `butler run` of one prompt to a loopback OpenAI-compatible server, beside
    the import floor and, given ``llm``, beside `llm` asking the same server the same prompt."""
    fake = FakeLLM()
    fake.respond = lambda body: Reply(events=openai_stream(ANSWER))
    base = fake.url + "/v1"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run = [butler, "run", "--model", "openai-compatible:local", "--base-url", base, PROMPT]
            commands: dict[str, Sequence[str]] = {
                "floor": [py, "-c", FLOOR],
                # the client the SDKs are built on, and the one the butler sends with now
                "floor+": [py, "-c", f"{FLOOR}, httpx2; httpx2.Client()"],
                "floor-urllib": [py, "-c", f"{FLOOR}, urllib.request, json"],
                "run": run,
            }
            paths: dict[str, str | None] = {}
            for i, before in enumerate(befores):
                commands[f"before{i}"] = [py, "-P", "-c", ENTRY, *run[1:]]
                paths[f"before{i}"] = before
            env = {"BUTLER_HOME": str(Path(tmp) / "home")}
            if llm:
                home = Path(tmp) / "llm"
                home.mkdir()
                models = f'- model_id: bench-local\n  model_name: local\n  api_base: "{base}"\n'
                (home / "extra-openai-models.yaml").write_text(models, encoding="utf-8")
                env["LLM_USER_PATH"] = str(home)
                commands["llm"] = [llm, "-m", "bench-local", PROMPT]
            samples: dict[str, tuple[list[float], list[float]]] = {}
            med = median_runs(commands, runs, env, paths, samples=samples)
    finally:
        fake.close()
    asked = len(fake.requests)
    print(f"{runs} rounds, {asked} requests answered; medians, and ratios taken pair by pair\n")
    print("| command | wall | CPU | CPU ÷ floor | CPU ÷ `llm` | wall ÷ `llm` |")
    print("|---|---|---|---|---|---|")

    def paired(key: str, peer: str, which: int) -> str:
        if peer not in samples:
            return ""
        mine, theirs = samples[key][which], samples[peer][which]
        return f"{statistics.median(a / b for a, b in zip(mine, theirs, strict=True)):.2f}x"

    labels = {"floor": f"floor: `{FLOOR}`", "run": "`butler run`, one prompt"}
    labels["floor+"] = "the floor and an httpx2 client (the SDKs' HTTP client)"
    labels["floor-urllib"] = "the floor and urllib.request (the HTTP client the butler sends with)"
    labels |= {f"before{i}": f"`butler run`, one prompt, `{b}`" for i, b in enumerate(befores)}
    labels["llm"] = "`llm -m bench-local`, one prompt (its default: streamed, logged)"
    for key in [k for k in ("floor", "floor+", "floor-urllib", *paths, "run", "llm") if k in med]:
        wall, cpu = med[key]
        print(
            f"| {labels[key]} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms "
            f"| {paired(key, 'floor', 1)} | {paired(key, 'llm', 1)} | {paired(key, 'llm', 0)} |"
        )


def three_calls(body: dict[str, object]) -> Reply:
    """Two rounds of ``now``, then the answer: the model's side of a three-call run."""
    messages = body.get("messages")
    rounds = (
        sum(1 for m in messages if m.get("role") == "tool") if isinstance(messages, list) else 0
    )
    if rounds < 2:
        return Reply(events=openai_stream("", [(f"c{rounds}", "now", ["{}"])]))
    return Reply(events=openai_stream(ANSWER))


def tls_rows(py: str, butler: str, befores: list[str], runs: int) -> None:
    """``--tls``: a three-call `butler run` to a loopback HTTPS server per command (this
    checkout's, and each ``before``'s), the connections each opened counted by its server."""
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = self_signed(Path(tmp))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        servers: dict[str, FakeLLM] = {}
        commands: dict[str, Sequence[str]] = {}
        paths: dict[str, str | None] = {}
        names = [*(f"before{i}" for i in range(len(befores))), "run"]
        try:
            for name in names:
                server = FakeLLM()
                server.server.socket = context.wrap_socket(server.server.socket, server_side=True)
                server.respond = three_calls
                servers[name] = server
                base = server.url.replace("http://", "https://") + "/v1"
                argv = ["run", "--model", "openai-compatible:local", "--base-url", base, PROMPT]
                commands[name] = (
                    [butler, *argv] if name == "run" else [py, "-P", "-c", ENTRY, *argv]
                )
            paths = {f"before{i}": b for i, b in enumerate(befores)}
            env = {"BUTLER_HOME": str(Path(tmp) / "home"), "SSL_CERT_FILE": str(cert)}
            env |= {"NO_PROXY": "*", "no_proxy": "*"}
            med = median_runs(commands, runs, env, paths)
            counts = {n: (len(servers[n].requests), servers[n].connections) for n in names}
            in_process = wire_calls(servers["run"], str(cert), runs)
        finally:
            for server in servers.values():
                server.close()
    print(f"{runs} rounds of a three-call run each; medians\n")
    print("| command | model calls a run | connections a run | wall | CPU |")
    print("|---|---|---|---|---|")
    labels = {f"before{i}": f"`butler run`, `{b}`" for i, b in enumerate(befores)}
    labels["run"] = "`butler run` (this checkout)"
    for name in names:
        wall, cpu = med[name]
        calls, opened = (count / runs for count in counts[name])
        print(
            f"| {labels[name]} | {calls:.1f} | {opened:.1f} | {wall * 1000:.0f} ms "
            f"| {cpu * 1000:.0f} ms |"
        )
    print("\nIn this process, three streamed calls through this checkout's Wire; medians\n")
    print("| three calls | connections | wall | CPU |")
    print("|---|---|---|---|")
    for label, (opened, wall, cpu) in in_process.items():
        print(f"| {label} | {opened} | {wall * 1000:.2f} ms | {cpu * 1000:.2f} ms |")


def wire_calls(server: FakeLLM, cert: str, runs: int) -> dict[str, tuple[int, float, float]]:
    """Three streamed calls on one Wire (its kept-alive connection), beside three calls each
    on a Wire of its own (a connection and TLS handshake per call, as before issue 34's
    reuse): connections opened, median wall and CPU (the server's thread counts in both)."""
    os.environ["SSL_CERT_FILE"] = cert  # read when the client's TLS context is made
    base = server.url.replace("http://", "https://") + "/v1"
    body = {"messages": [{"role": "tool"}, {"role": "tool"}]}  # the answer, not a round
    found: dict[str, tuple[int, float, float]] = {}
    for label, shared in (("one Wire, kept alive", True), ("a Wire a call (before)", False)):
        walls, cpus, opened = [], [], 0
        for _ in range(runs * 3):
            wire = Wire(base, {})
            start, cpu0 = time.perf_counter(), time.process_time()
            for _ in range(3):
                wire = wire if shared else Wire(base, {})
                with wire.stream("chat/completions", body) as lines:
                    for _ in lines:
                        pass
                opened += wire.opened if not shared else 0
                if not shared:
                    wire.close()
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu0)
            opened += wire.opened if shared else 0
            wire.close()
        found[label] = (opened // (runs * 3), statistics.median(walls), statistics.median(cpus))
    return found


if __name__ == "__main__":
    main()

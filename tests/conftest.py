"""Shared fixtures. Every test runs with BUTLER_HOME in its own temp dir."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from butler_fork import run_forked

BIN_DIR = Path(sys.executable).parent
TESTS = Path(__file__).parent


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: half as many workers again as cores. Many tests spend their time waiting on a
    `butler` process, a loopback server or a pseudo-terminal, so two workers on two cores left
    the CPU idle a sixth of the time (the suite: 124 s with 2 workers, 104 s with 3)."""
    cores = os.cpu_count() or 1
    return max(2, cores * 3 // 2)


#: What reaches a real model provider: no test may inherit one from the person running the
#: suite (a test that needs a key sets its own fake one, pointed at 127.0.0.1).
PROVIDER_VARIABLES = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OLLAMA_HOST", "OPENAI_ORG_ID")


#: A terminal's size as the environment states it: rich and prompt-toolkit believe these over
#: the terminal itself, so the size a test gives its pseudo-terminal must not be overridden by
#: the one pytest-xdist exports to its workers (COLUMNS=200 LINES=50 from a real terminal).
TERMINAL_SIZE = ("COLUMNS", "LINES")


def provider_variables(environ: Mapping[str, str]) -> list[str]:
    """The names in ``environ`` that would let a butler reach a real provider."""
    return [n for n in environ if n.endswith("_API_KEY") or n in PROVIDER_VARIABLES]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C must reach the `butler` the tests start. A shell without job control starts a
    command put in the background (`pytest &` in a script) with SIGINT ignored, every child
    inherits that, and Python then installs no KeyboardInterrupt handler: the Ctrl-C tests hung
    20 s and failed. Python's own handler here is reset to the default in every child."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in provider_variables(os.environ):  # before any worker or fork server starts
        del os.environ[name]
    for name in TERMINAL_SIZE:  # pytest-xdist exports COLUMNS/LINES to its workers
        os.environ.pop(name, None)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Byte-compile butler once before the tests start it hundreds of times: where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it), an editable install would otherwise
    compile every module again in every process."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import compileall

    for folder in (TESTS.parent / "butler_cli", TESTS.parent / "policies"):
        compileall.compile_dir(folder, quiet=1)
    rewrite_tests_once(session.config)


def rewrite_tests_once(config: pytest.Config) -> None:
    """Write pytest's assertion-rewritten bytecode of every test module once, here, before
    the workers collect. pytest rewrites each test module's asserts on import and caches the
    result in __pycache__ — unless PYTHONDONTWRITEBYTECODE is set (this machine sets it):
    then every worker rewrote all 90 modules again, 5.5 CPU-s each (three quarters of a
    worker's collection). A cached file is still read when writing is off, so writing it here
    is enough. These are pytest's own functions (private): if they change, the workers just
    rewrite as before."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        for source in sorted(TESTS.glob("test_*.py")):
            pyc = rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(source, pyc) is None:
                source_hash, code = rewrite._rewrite_test(source, config)
                rewrite.try_makedirs(pyc.parent)
                rewrite._write_pyc(state, code, source_hash, pyc)
    except Exception:  # noqa: BLE001 - only a speed-up: the workers rewrite as before
        return


@pytest.fixture(autouse=True)
def butler_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("BUTLER_HOME", str(home))
    # the stored keys' file (and its folder, hidden from tools) is in the user config dir:
    # a temp one, so no test reads or makes anything in the real home
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("BUTLER_MODEL", raising=False)
    # The suite's recall tests check the lexical ranking, and loading the dense model costs
    # every recall a second: hybrid recall's own tests (test_recall_dense.py) turn it back on.
    monkeypatch.setenv("BUTLER_RECALL", "lexical")
    return home


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def butler_exe() -> str:
    exe = BIN_DIR / "butler"
    if not exe.exists():
        pytest.fail(f"the installed `butler` is missing at {exe}: pip install -e '.[test]'")
    return str(exe)


_FORK_SERVER: list[str] = []


def butler_command() -> list[str]:
    """How a test starts `butler`: through the fork server (tests/butler_zygote.py), which
    imports butler once and forks a real process per run, or, with BUTLER_TESTS_EXEC=1, by exec
    of the installed script every time. The server starts on first use, once per worker."""
    if os.environ.get("BUTLER_TESTS_EXEC") == "1":
        return [butler_exe()]
    if not _FORK_SERVER:
        folder = tempfile.mkdtemp(prefix="bz")
        sock = os.path.join(folder, "s")
        server = subprocess.Popen(
            [sys.executable, str(TESTS / "butler_zygote.py"), sock, str(BIN_DIR)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            pytest.fail("the test fork server for `butler` did not start")

        def stop() -> None:
            server.kill()
            server.wait()
            shutil.rmtree(folder, ignore_errors=True)

        atexit.register(stop)
        _FORK_SERVER[:] = [sys.executable, "-I", "-S", str(TESTS / "butler_launch.py"), sock]
    return _FORK_SERVER


def fork_server_socket(command: list[str]) -> str | None:
    """The fork server's socket if ``command`` is its launcher (not BUTLER_TESTS_EXEC=1)."""
    return command[-1] if command and command == _FORK_SERVER else None


@pytest.fixture(scope="session")
def butler_argv() -> list[str]:
    """How the `butler` fixture starts `butler` (see butler_command)."""
    return butler_command()


@pytest.fixture
def butler(
    butler_home: Path, workdir: Path, butler_argv: list[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `butler` in a subprocess of its own, in `workdir`, with this test's home."""

    def run(
        *args: str,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "BUTLER_HOME": str(butler_home), "NO_COLOR": "1"}
        full_env.update(env or {})
        sock = fork_server_socket(butler_argv)
        if sock is not None:  # the launcher's protocol spoken from here (butler_fork.py)
            return run_forked(
                sock,
                butler_argv,
                args,
                input=input if input is not None else "",
                cwd=cwd or workdir,
                env=full_env,
                timeout=timeout,
            )
        return subprocess.run(
            [*butler_argv, *args],
            input=input if input is not None else "",
            cwd=cwd or workdir,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


ALLOW_ALL = "from butler_cli import allow\n\ndef classify(name, args):\n    return allow()\n"


@pytest.fixture
def allow_all(tmp_path: Path) -> list[str]:
    """Flags for a run whose policy allows everything: only the butler's own guards remain."""
    path = tmp_path / "allow_all.py"
    path.write_text(ALLOW_ALL)
    return ["--policy", f"{path}:classify", "--yes-safe"]


@pytest.fixture
def script(tmp_path: Path) -> Callable[..., str]:
    """Write a scripted-model file from turns; returns the `--model` value for it."""
    counter = {"n": 0}

    def make(*turns: dict[str, Any]) -> str:
        counter["n"] += 1
        path = tmp_path / f"script{counter['n']}.json"
        path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
        return f"scripted:{path}"

    return make


def call(name: str, cid: str | None = None, **arguments: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments}
    if cid:
        out["id"] = cid
    return out


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def tool_results(stdout: str, task: int = 0) -> list[dict[str, Any]]:
    """Every tool_result block of one task's `--json` report, in order."""
    rep = json_lines(stdout)[task]
    return [b for m in rep["messages"] for b in m["content"] if b["type"] == "tool_result"]


def spawn_butler(
    args: list[str],
    home: Path,
    cwd: Path,
    *,
    color: bool = False,
    dimensions: tuple[int, int] = (50, 220),
    **extra_env: str,
) -> Any:
    """`butler` on a real pseudo-terminal (pexpect), this test's home, no CPR: forked by the
    fork server, which hands it the terminal as its controlling one (butler_launch.py), or the
    installed script exec'd when the test lists what a start imports (PYTHONPROFILEIMPORTTIME)
    or BUTLER_TESTS_EXEC=1 says so."""
    import pexpect

    env = {
        **{k: v for k, v in os.environ.items() if k not in TERMINAL_SIZE},
        "BUTLER_HOME": str(home),
        "TERM": "xterm",
        "PROMPT_TOOLKIT_NO_CPR": "1",
        **extra_env,
    }
    if color:
        env.pop("NO_COLOR", None)
        env["FORCE_COLOR"] = "1"
    else:
        env["NO_COLOR"] = "1"
    command = [butler_exe()] if "PYTHONPROFILEIMPORTTIME" in extra_env else butler_command()
    return prompt_speed(
        pexpect.spawn(
            command[0],
            [*command[1:], *args],
            cwd=str(cwd),
            env=env,
            encoding="utf-8",
            # One fresh-clone CI run (of many) read a byte sequence that is not UTF-8 in
            # test_pending_and_resume_inside_the_chat and died in pexpect's decoder, not in an
            # assertion (not reproduced in a dozen runs since; two writers on the terminal cutting
            # a character is the suspect). The tests read what the screen says; a
            # stray byte shows as U+FFFD there instead of failing a test about something else.
            codec_errors="replace",
            timeout=20,
            dimensions=dimensions,
        )
    )


def prompt_speed(child: Any) -> Any:
    """A pexpect child that sends at once: pexpect sleeps 50 ms before every send (for programs
    that turn echo off after printing a prompt); each test waits for its prompt before it types,
    and the suite sends a few hundred times.

    Except Ctrl-D, which waits until the terminal has stayed raw (a prompt reading keys) for a
    moment: a test that matched ``you ›`` may have matched the accepted line redrawn before the
    command ran, and a Ctrl-D that reaches the terminal while it is back in cooked mode is eaten
    by the line discipline (an end of file for a read nobody makes), so the chat never sees it
    and the test hangs — 2 runs in 5 of test_screen's wrap test did, at any load."""
    child.delaybeforesend = None
    plain = child.sendcontrol

    def sendcontrol(char: str) -> int:
        if char.lower() == "d":
            raw_for_a_moment(child.child_fd)
        return int(plain(char))

    child.sendcontrol = sendcontrol
    return child


def raw_for_a_moment(fd: int, settle: float = 0.15, limit: float = 10.0) -> None:
    """Wait until the terminal ``fd`` has been out of canonical mode for ``settle`` seconds
    (its program reads keys one by one), at most ``limit`` seconds."""
    import termios

    start = stable = time.monotonic()
    while (now := time.monotonic()) - start < limit:
        try:
            cooked = bool(termios.tcgetattr(fd)[3] & termios.ICANON)
        except termios.error:
            return  # the child is gone: nothing reads it any more
        if cooked:
            stable = now
        elif now - stable >= settle:
            return
        time.sleep(0.005)


def imported_before_prompt(child: Any) -> set[str]:
    """Every module a chat spawned with ``PYTHONPROFILEIMPORTTIME=1`` had imported when its
    first prompt appeared; the chat is then left with Ctrl-D."""
    import pexpect

    child.expect("you ›")
    before = child.before
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in before.splitlines()
        if line.startswith("import time:")
    }


def bare_prompt_imports() -> set[str]:
    """Every module a bare prompt-toolkit prompt (no butler at all) has imported when it is
    drawn, in this environment: what prompt-toolkit and its own unpinned dependencies load is
    theirs to choose (wcwidth 0.9.5 brought `dataclasses`), so a start-up import test compares
    the butler's start against this, measured now, instead of a list fixed on the day it was
    written."""
    import pexpect

    env = {
        **{k: v for k, v in os.environ.items() if k not in TERMINAL_SIZE},
        "TERM": "xterm",
        "PROMPT_TOOLKIT_NO_CPR": "1",
        "NO_COLOR": "1",
        "PYTHONPROFILEIMPORTTIME": "1",
    }
    code = "from prompt_toolkit import PromptSession\nPromptSession().prompt('you › ')\n"
    child = pexpect.spawn(
        sys.executable, ["-c", code], env=env, encoding="utf-8", timeout=20, dimensions=(50, 220)
    )
    return imported_before_prompt(child)


@pytest.fixture
def fake() -> Any:
    """A real HTTP server on 127.0.0.1 speaking the OpenAI and Anthropic wire formats."""
    from fake_llm import FakeLLM

    server = FakeLLM()
    yield server
    server.close()


def sleepers(marker: str) -> list[int]:
    """The pids of live processes whose command line holds ``marker`` (a test's own sleep;
    a zombie has no command line, so a killed one is not counted)."""
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


#: The worker's shared chromium (its ``browser`` fixture); with BUTLER_TESTS_CPU set
#: (bench/bench_suite.py), each test's CPU written to a file.
pytest_plugins = [
    "shared_browser",
    *(["cpu_account"] if os.environ.get("BUTLER_TESTS_CPU") else []),
]

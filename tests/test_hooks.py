"""The config file's [hooks]: on_park / on_done / on_error fired after every task report, as a
real command (argv, event JSON on stdin, never a shell) or a POST to a real HTTP server on
127.0.0.1; a hook that fails, hangs or cannot be reached is one line and changes nothing."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import call
from serve_support import QuietHandler, eventually, loopback_server, start_serve

REPO = Path(__file__).resolve().parent.parent
PLAN = f"scripted:{REPO / 'examples' / 'plan.json'}"
SECRET = "sk-test-hooks-0123456789abcdefghij"

#: The hook: appends one line per event (its stdin, its environment, its pid) to argv[1].
RECORDER = """import json, os, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as fh:
    fh.write(json.dumps({"event": event, "env": dict(os.environ), "pid": os.getpid()}) + "\\n")
"""
HANG = """import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(120)
"""


def configure(home: Path, hooks: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"[hooks]\n{hooks}\n", encoding="utf-8")


def toml_argv(*argv: str) -> str:
    return json.dumps(list(argv))


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[str, Path]:
    """(the TOML argv of a recording hook, the file it appends events to)."""
    path = tmp_path / "recorder.py"
    path.write_text(RECORDER)
    return toml_argv(sys.executable, str(path), str(tmp_path / "events.jsonl")), tmp_path / (
        "events.jsonl"
    )


def events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Posts:
    """A real HTTP server on 127.0.0.1 recording each POSTed JSON body; ``hang`` holds every
    request until the test ends."""

    def __init__(self, hang: bool = False) -> None:
        self.got: list[dict[str, Any]] = []
        self.release = threading.Event()
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.got.append(json.loads(body))
                if hang:
                    owner.release.wait(60)
                self.send_response(200)
                self.end_headers()

        self.server = loopback_server(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/butler-topic"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def posts() -> Iterator[Any]:
    made: list[Posts] = []

    def make(hang: bool = False) -> Posts:
        made.append(Posts(hang))
        return made[-1]

    yield make
    for p in made:
        p.close()


def test_on_park_then_on_done_reach_a_real_command(
    butler: Any, butler_home: Path, recorder: tuple[str, Path]
) -> None:
    """`butler run` parks: on_park gets the park id, the exact approve command, task, tool,
    title and conversation — no argument values, no key in its environment. `butler resume`
    approves: on_done, the same conversation. Exit codes are the task's own."""
    argv, out = recorder
    configure(butler_home, f"on_park = {argv}\non_done = {argv}\non_error = {argv}")
    ran = butler(
        "run", "Write today's plan", "--model", PLAN, "--json", env={"OPENAI_API_KEY": SECRET}
    )
    assert ran.returncode == 3, ran.stderr
    report = json.loads(ran.stdout)
    [parked] = events(out)
    event = parked["event"]
    pid = report["park_id"]
    assert event["event"] == "on_park" and event["status"] == "parked"
    assert event["park_id"] == pid and event["approve"] == f"butler resume {pid} --approve"
    assert event["task"] == "Write today's plan" and event["tool"] == "write_file"
    assert event["title"] == report["approval"]["title"]
    assert event["conversation"].startswith("c-")
    # The title (as `pending` shows it), never the arguments themselves; never a key.
    assert set(event) == {
        "event", "status", "task", "park_id", "tool", "title", "actions", "approve", "deny",
        "conversation",
    }  # fmt: skip
    assert event["actions"] == [{"tool": "write_file", "title": event["title"]}]
    assert "OPENAI_API_KEY" not in parked["env"] and SECRET not in out.read_text()

    resumed = butler("resume", pid, "--approve", env={"OPENAI_API_KEY": SECRET})
    assert resumed.returncode == 0, resumed.stderr
    done = events(out)[1]["event"]
    assert done["event"] == "on_done" and done["status"] == "done"
    assert done["conversation"] == event["conversation"] and "park_id" not in done
    assert len(events(out)) == 2 and SECRET not in out.read_text()


def test_a_failed_task_fires_on_error(
    butler: Any, butler_home: Path, recorder: tuple[str, Path], script: Any
) -> None:
    argv, out = recorder
    configure(butler_home, f"on_error = {argv}")
    ran = butler("run", "t", "--model", script({"tool_calls": [call("now", "c1")]}))
    assert ran.returncode == 1, ran.stderr
    [event] = [e["event"] for e in events(out)]
    assert event["event"] == "on_error" and event["status"] == "failed" and event["task"] == "t"
    assert "error" not in event  # an error text may quote anything: `butler log show` has it


def test_on_park_posts_to_a_real_http_server(butler: Any, butler_home: Path, posts: Any) -> None:
    server = posts()
    configure(butler_home, f'on_park = "{server.url}"\ntimeout_s = 10')
    ran = butler("run", "plan", "--model", PLAN, "--json")
    assert ran.returncode == 3 and ran.stderr == "", ran.stderr
    pid = json.loads(ran.stdout)["park_id"]
    assert [(e["event"], e["park_id"], e["approve"]) for e in server.got] == [
        ("on_park", pid, f"butler resume {pid} --approve")
    ]


def pending_tools(butler: Any) -> list[str]:
    return [p["tool"] for p in json.loads(butler("pending", "--json").stdout)]


def test_a_hook_that_exits_1_is_reported_and_changes_nothing(
    butler: Any, butler_home: Path, workdir: Path
) -> None:
    configure(butler_home, f"on_park = {toml_argv(sys.executable, '-c', 'raise SystemExit(1)')}")
    ran = butler("run", "plan", "--model", PLAN, "--json")
    assert ran.returncode == 3, ran.stderr
    assert "on_park hook" in ran.stderr and "exited 1" in ran.stderr, ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1 and "Traceback" not in ran.stderr
    assert json.loads(ran.stdout)["status"] == "parked"
    assert pending_tools(butler) == ["write_file"] and not (workdir / "plan.txt").exists()


def test_a_hanging_hook_is_cut_at_its_timeout(
    butler: Any, butler_home: Path, tmp_path: Path
) -> None:
    """The hook sleeps 120 s; timeout_s = 1 stops it (its whole process group) and the run
    returns with its own exit code 3 (a generous wall-clock bound: 30 s)."""
    hang, pid_file = tmp_path / "hang.py", tmp_path / "hook.pid"
    hang.write_text(HANG)
    configure(
        butler_home,
        f"on_park = {toml_argv(sys.executable, str(hang), str(pid_file))}\ntimeout_s = 1",
    )
    started = time.monotonic()
    ran = butler("run", "plan", "--model", PLAN)
    assert time.monotonic() - started < 30
    assert ran.returncode == 3 and "timed out after 1 s" in ran.stderr, ran.stderr
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # stopped, not left running
    assert pending_tools(butler) == ["write_file"]


#: A hook that starts a grandchild in a session of its own (out of the hook's process group),
#: writes its pid, then hangs.
ESCAPE = """import os, subprocess, sys, time
child = subprocess.Popen(["setsid", "sleep", "1000"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(120)
"""


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_hook_cut_at_its_timeout_leaves_no_setsid_child(
    butler: Any, butler_home: Path, tmp_path: Path
) -> None:
    """`setsid sleep 1000` started by the hook leaves the hook's process group and session:
    killing the group left it running. The whole tree the hook started is gone."""
    hook, pid_file = tmp_path / "escape.py", tmp_path / "child.pid"
    hook.write_text(ESCAPE)
    configure(
        butler_home,
        f"on_park = {toml_argv(sys.executable, str(hook), str(pid_file))}\ntimeout_s = 1",
    )
    ran = butler("run", "plan", "--model", PLAN)
    assert ran.returncode == 3 and "timed out after 1 s" in ran.stderr, ran.stderr
    child = int(pid_file.read_text())
    try:
        assert not running(child), f"the hook's setsid child {child} is still running"
    finally:
        if running(child):
            os.kill(child, 9)


def test_a_hanging_url_is_cut_at_its_timeout(butler: Any, butler_home: Path, posts: Any) -> None:
    server = posts(hang=True)
    configure(butler_home, f'on_park = "{server.url}"\ntimeout_s = 1')
    started = time.monotonic()
    ran = butler("run", "plan", "--model", PLAN)
    assert time.monotonic() - started < 30
    assert ran.returncode == 3 and "timed out after 1 s" in ran.stderr, ran.stderr
    assert len(server.got) == 1 and pending_tools(butler) == ["write_file"]


def test_a_url_that_refuses_connections_changes_nothing(butler: Any, butler_home: Path) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    configure(butler_home, f'on_park = "http://127.0.0.1:{port}/topic"')
    ran = butler("run", "plan", "--model", PLAN)
    assert ran.returncode == 3 and "could not be reached" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr and pending_tools(butler) == ["write_file"]


def test_a_hook_never_goes_through_a_shell(butler: Any, butler_home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    configure(butler_home, f'on_park = "echo $(touch {marker}) ; touch {marker}"')
    ran = butler("run", "plan", "--model", PLAN)
    assert ran.returncode == 3, ran.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    ("hooks", "says"),
    [
        ("on_park = 5", "hooks.on_park must be a command as a list of strings or an http"),
        ("on_park = []", "hooks.on_park must be a command"),
        ('on_start = ["true"]', "[hooks] takes on_park, on_done, on_error, timeout_s"),
        ('on_park = ["true"]\ntimeout_s = 0', "hooks.timeout_s must be a number of seconds"),
        ('on_park = ["true"]\ntimeout_s = "10"', "hooks.timeout_s must be a number of seconds"),
        ('on_park = "notify \'unclosed"', "the hooks.on_park command cannot be read"),
    ],
)
def test_a_bad_hooks_section_is_one_line_and_exit_2(
    butler: Any, butler_home: Path, hooks: str, says: str
) -> None:
    configure(butler_home, hooks)
    ran = butler("run", "plan", "--model", PLAN)
    assert ran.returncode == 2, ran.stderr
    assert says in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert "config.toml" in ran.stderr and "Traceback" not in ran.stderr


def test_a_decision_from_the_inbox_fires_on_done(
    butler: Any, butler_home: Path, workdir: Path, recorder: tuple[str, Path]
) -> None:
    """`butler serve` decides through the same path: the approval's outcome fires on_done."""
    argv, out = recorder
    configure(butler_home, f"on_park = {argv}\non_done = {argv}")
    ran = butler("run", "plan", "--model", PLAN, "--json")
    pid = json.loads(ran.stdout)["park_id"]
    served = start_serve(butler_home, workdir, "--no-scheduler")
    try:
        status, answer = served.decide(pid, "approve")
        assert status == 200 and answer["ok"], answer
        eventually(lambda: len(events(out)) == 2)
    finally:
        served.stop()
    parked, done = (e["event"] for e in events(out))
    assert (parked["event"], done["event"]) == ("on_park", "on_done")
    assert done["conversation"] == parked["conversation"]


def test_a_chat_turn_fires_on_park_then_its_approval_on_done(
    butler_home: Path, workdir: Path, recorder: tuple[str, Path]
) -> None:
    """In the chat (a real pty): the park fires on_park before the question, approving it at
    the prompt fires on_done — both in the chat's own conversation."""
    import pexpect
    from conftest import spawn_butler

    argv, out = recorder
    configure(butler_home, f"on_park = {argv}\non_done = {argv}")
    child = spawn_butler(["chat", "--model", PLAN], butler_home, workdir)
    child.expect("you ›")
    child.sendline("Write today's plan")
    child.expect(r"Approve\? \[y/n/l/d/s(/w)?(/a)?\]")
    assert [e["event"]["event"] for e in events(out)] == ["on_park"]
    child.sendline("y")
    child.expect("you ›")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    parked, done = (e["event"] for e in events(out))
    assert (parked["event"], done["event"]) == ("on_park", "on_done")
    assert parked["conversation"] == done["conversation"] and done["conversation"].startswith("c-")
    assert (workdir / "plan.txt").exists()


def test_a_failing_hooks_words_are_masked_and_neutralised(
    butler: Any, butler_home: Path, tmp_path: Path
) -> None:
    """A hook's failure is a notice quoting the tail of what it printed: a key the butler knows
    (here from a configured key file) is masked there, and escapes are made visible, as in
    every other line the butler prints."""
    canary = "sk-canary-hookleak-0123456789abcdef"
    key_file = tmp_path / "key.txt"
    key_file.write_text(canary + "\n")
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import sys\n"
        "sys.stderr.write('\\x1b[2J\\x1b]0;owned\\x07 ' + open(sys.argv[1]).read())\n"
        "sys.exit(1)\n"
    )
    configure(
        butler_home,
        f"on_park = {toml_argv(sys.executable, str(hook), str(key_file))}\n\n"
        f'[providers.openai]\napi_key_file = "{key_file}"',
    )
    ran = butler("run", "plan", "--model", PLAN)
    assert ran.returncode == 3, ran.stderr
    [line] = [ln for ln in ran.stderr.splitlines() if "on_park hook" in ln]
    assert "exited 1" in line and "****" in line, line
    assert canary not in ran.stderr and canary not in ran.stdout
    assert "\x1b" not in ran.stderr and "\x07" not in ran.stderr

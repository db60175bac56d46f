"""run_command in the sandbox: what the program sees, what it may change, and what happens when
no sandbox can start. Every test runs the installed `butler` and the real bubblewrap."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import BIN_DIR, call, json_lines, tool_results

CANARY = "sk-test-LEAKCANARY-123"
needs_bwrap = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (CI installs it: apt-get install bubblewrap)",
)


def run_commands(butler, script, allow_all, *argvs: list[str], env=None, extra=()):
    """One round of run_command calls under an allow-all policy; their results in order."""
    calls = [call("run_command", f"c{i}", argv=argv) for i, argv in enumerate(argvs)]
    r = butler(
        "run",
        "--model",
        script({"tool_calls": calls}, {"text": "done"}),
        "go",
        "--json",
        *allow_all,
        *extra,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    return [res["content"] for res in tool_results(r.stdout)], r


def running(command: str) -> list[int]:
    """Pids whose command line is exactly ``command`` (read from /proc: no procps needed)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and b" ".join(args).decode(errors="replace") == command:
            found.append(int(entry.name))
    return found


@pytest.fixture
def no_bwrap(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has the usual tools but no bubblewrap."""
    links = tmp_path / "bin-without-bwrap"
    links.mkdir()
    for tool in ("sh", "setsid", "sleep", "echo", "cat", "printenv", "true"):
        found = shutil.which(tool)
        if found:
            (links / tool).symlink_to(found)
    # bubblewrap is found at a fixed path, never on PATH (issue 31): turned off instead
    return {"PATH": f"{links}:{BIN_DIR}", "BUTLER_SANDBOX": "none"}


@needs_bwrap
def test_a_command_cannot_see_or_change_the_gate(
    butler, script, allow_all, butler_home, workdir, tmp_path
) -> None:
    """The reported breaks: `sh -c cat park.key`, a python one-liner, `sort -o` into the home;
    and the config file, the policy file in use, the butler's environment through /proc."""
    butler_home.mkdir()
    key = butler_home / "park.key"
    key.write_bytes(b"K" * 32 + b"PARKKEY")
    config = butler_home / "config.toml"
    config.write_text("max_rounds = 8\n")
    policy = Path(allow_all[1].split(":")[0])
    outside = Path(f"/etc/butler-was-here-{tmp_path.name}")  # not an allowed root
    (workdir / ".git").mkdir()
    (workdir / ".git" / "config").write_text("[core]\n")
    outputs, _ = run_commands(
        butler,
        script,
        allow_all,
        ["sh", "-c", f"cat '{key}'; ls -a '{butler_home}'"],
        ["python3", "-c", f"print(open({str(key)!r}, 'rb').read())"],
        ["sort", f"-o{butler_home}/x", "/etc/hostname"],
        ["sh", "-c", f"echo 'model = \"x\"' >> '{config}'; cat '{config}'"],
        ["cat", str(policy)],
        ["sh", "-c", "cat /proc/*/environ | tr '\\0' '\\n'"],
        ["sh", "-c", "echo '\tfsmonitor = touch /tmp/pwned' >> .git/config"],
        ["sh", "-c", f"echo mine > made.txt && touch {outside}"],
        env={"OPENAI_API_KEY": CANARY},
    )
    joined = "\n".join(outputs)
    assert "PARKKEY" not in joined and "KKKKKKKK" not in joined
    assert "classify" not in outputs[4]  # the policy file is an empty file in there
    assert CANARY not in joined
    assert not (butler_home / "x").exists()
    assert config.read_text() == "max_rounds = 8\n"
    assert (workdir / ".git" / "config").read_text() == "[core]\n"
    assert "Read-only file system" in outputs[6]
    assert (workdir / "made.txt").read_text() == "mine\n"  # the allowed root stays writable
    written = outside.exists()
    outside.unlink(missing_ok=True)
    assert not written and "Read-only" in outputs[7]
    assert key.read_bytes() == b"K" * 32 + b"PARKKEY"


@needs_bwrap
def test_a_linked_git_dir_stays_read_only(butler, script, allow_all, workdir) -> None:
    """A worktree's `.git` file points elsewhere (`gitdir:`): that folder is read-only too."""
    real = workdir / "repo.git"
    (real / "hooks").mkdir(parents=True)
    (real / "config").write_text("[core]\n")
    tree = workdir / "deep" / "er" / "tree"  # deeper than the scan: found from the folder
    tree.mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {real}\n")
    hook = real / "hooks" / "pre-commit"
    argv = ["sh", "-c", f"echo '#!/bin/sh' > '{hook}'; echo x >> '{real}/config'; echo ok > f"]
    model = script(
        {"tool_calls": [call("run_command", "c", argv=argv, cwd=str(tree))]}, {"text": "k"}
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all)
    out = tool_results(r.stdout)[0]["content"]
    assert "Read-only file system" in out, out
    assert not hook.exists() and (real / "config").read_text() == "[core]\n"
    assert (tree / "f").read_text() == "ok\n"


@needs_bwrap
def test_the_network_follows_the_config(butler, script, allow_all, butler_home) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    threading.Thread(
        target=lambda: [server.accept()[0].close() for _ in range(2)], daemon=True
    ).start()
    probe = [
        "python3",
        "-c",
        f"import socket; socket.create_connection(('127.0.0.1', {port}), 3); print('connected')",
    ]
    outputs, _ = run_commands(butler, script, allow_all, probe)
    assert "connected" in outputs[0]  # the default: the network as the policy allows it
    butler_home.mkdir(exist_ok=True)
    (butler_home / "config.toml").write_text("[sandbox]\nnetwork = false\n")
    outputs, _ = run_commands(butler, script, allow_all, probe)
    assert "connected" not in outputs[0] and "Error" in outputs[0]
    server.close()


def test_without_a_sandbox_every_command_asks(butler, script, allow_all, no_bwrap, tmp_path):
    """An allow from the policy (and --yes-safe) does not run an unconfined program."""
    model = script({"tool_calls": [call("run_command", "c", argv=["true"])]}, {"text": "k"})
    r = butler("run", "--model", model, "go", "--json", *allow_all, env=no_bwrap)
    assert r.returncode == 3, r.stderr
    reason = json_lines(r.stdout)[0]["approval"]["reason"]
    assert reason.startswith("not sandboxed (the sandbox is turned off (BUTLER_SANDBOX))")
    refuse_all = tmp_path / "refuse_all.py"
    refuse_all.write_text(
        "from butler_cli import refuse\n\ndef classify(n, a):\n    return refuse('no')\n"
    )
    r = butler(
        "run", "--model", model, "go", "--json", "--policy", f"{refuse_all}:classify", env=no_bwrap
    )
    assert r.returncode == 0 and tool_results(r.stdout)[0]["content"].startswith("Refused")
    doctor = butler("doctor", env=no_bwrap)
    assert doctor.returncode == 0 and "not sandboxed" in doctor.stdout


@needs_bwrap
def test_doctor_names_the_sandbox_and_keys_by_name_only(butler, butler_home) -> None:
    r = butler("doctor", env={"OPENAI_API_KEY": CANARY})
    assert r.returncode == 0, r.stderr
    assert "bubblewrap" in r.stdout and str(butler_home) in r.stdout
    assert "OPENAI_API_KEY: set" in r.stdout and CANARY not in r.stdout + r.stderr
    data = json.loads(butler("doctor", "--json").stdout)
    assert data["sandbox"]["kind"] == "bubblewrap"


@needs_bwrap
def test_an_escaped_grandchild_does_not_hold_the_call(butler, script, allow_all) -> None:
    """`setsid sleep 30 &` with timeout_s 1 took 18 s: now the tree dies with the sandbox."""
    argv = ["sh", "-c", "setsid sleep 30.125 & echo started"]
    model = script(
        {"tool_calls": [call("run_command", "c", argv=argv, timeout_s=1)]}, {"text": "k"}
    )
    start = time.monotonic()
    r = butler("run", "--model", model, "go", "--json", *allow_all)
    took = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    assert tool_results(r.stdout)[0]["content"].startswith("exit status 0\nstarted")
    assert took < 8, took  # generous: the call itself returns within about a second
    assert running("sleep 30.125") == []


def test_unsandboxed_reading_stops_at_the_timeout(butler, script, allow_all, no_bwrap) -> None:
    """Without a sandbox an escaped grandchild survives, but the butler stops reading at the
    timeout instead of waiting for the pipe."""
    argv = ["sh", "-c", "setsid sleep 20.125 & echo started"]
    model = script(
        {"tool_calls": [call("run_command", "c", argv=argv, timeout_s=1)]}, {"text": "k"}
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all, env=no_bwrap)
    assert r.returncode == 3
    start = time.monotonic()
    park_id = json_lines(r.stdout)[0]["park_id"]
    r = butler("resume", park_id, "--approve", "--json", env=no_bwrap)
    took = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    out = tool_results(r.stdout)[0]["content"]
    assert out.startswith("exit status 0\nstarted") and "kept the output open" in out
    assert took < 8, took
    for pid in running("sleep 20.125"):  # it escaped, as expected without a sandbox
        os.kill(pid, signal.SIGKILL)


def test_output_is_capped_while_it_streams(butler, script, allow_all, tmp_path) -> None:
    """`head -c 300000000 /dev/zero` peaked at 612 MB: output is now capped as it arrives."""

    model = script(
        {"tool_calls": [call("run_command", "c", argv=["head", "-c", "300000000", "/dev/zero"])]},
        {"text": "k"},
    )
    env = {**os.environ, "NO_COLOR": "1"}
    # butler is started by a small Python that reports its peak RSS: a process's peak counts
    # the memory of the process it was forked from until it exec'd, and a pytest worker that
    # has run many tests is large (this measured 278 MB once, all of it the worker's).
    measure = (
        "import os, subprocess, sys\n"
        "proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=sys.stdout)\n"
        "_, status, usage = os.wait4(proc.pid, 0)\n"
        "sys.stderr.write(f'\\n{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", measure, str(BIN_DIR / "butler"), "run"]
        + ["--model", model, "go", "--json", *allow_all],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
    )
    status, maxrss = (int(word) for word in proc.stderr.decode().split()[-2:])
    out = proc.stdout
    assert status in (0, 3)
    peak_mb = maxrss / 1024
    assert peak_mb < 200, peak_mb
    if status == 0:
        content = tool_results(out.decode())[0]["content"]
        assert "299983616 bytes of output cut here" in content


def test_the_macos_profile_states_the_same_rules(tmp_path) -> None:
    """sandbox-exec cannot run here: this only checks the profile text it would be given
    (in-process), so a change to the rules cannot silently drop one on macOS."""
    from butler_cli.tools.sandbox import Sandbox

    root, home = tmp_path / "work", tmp_path / "home"
    (root / ".git").mkdir(parents=True)
    home.mkdir()
    key = tmp_path / "key.txt"
    key.write_text("k")
    box = Sandbox("sandbox-exec", "/usr/bin/sandbox-exec")
    argv = box.wrap(["ls"], root, [root], [home, key], network=False)
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"] and argv[3:] == ["ls"]
    profile = argv[2]
    assert profile.count("(") == profile.count(")")
    assert "(deny file-write*)" in profile and f'(subpath "{root}")' in profile
    assert f'(deny file-write* (subpath "{root / ".git"}"))' in profile
    assert f'(deny file-read* file-write* (subpath "{home}"))' in profile
    assert f'(deny file-read* file-write* (literal "{key}"))' in profile
    assert profile.rstrip().endswith("(deny network*)")


@needs_bwrap
def test_a_program_installed_under_tmp_still_runs(butler, script, allow_all, tmp_path) -> None:
    """The sandbox's fresh /tmp must not hide the program itself: a tool (or a whole virtual
    environment, as in a CI checkout under /tmp) installed below /tmp runs, read-only."""
    tools = Path("/tmp") / f"butler-sandbox-tools-{os.getpid()}-{tmp_path.name}"
    tools.mkdir()
    try:
        hello = tools / "hello-from-tmp"
        hello.write_text('#!/bin/sh\necho hello from tmp\necho x > "$0.written" || echo ro\n')
        hello.chmod(0o755)
        path = f"{tools}{os.pathsep}{os.environ['PATH']}"
        [out], _ = run_commands(butler, script, allow_all, ["hello-from-tmp"], env={"PATH": path})
        assert out.startswith("exit status 0\nhello from tmp"), out
        assert (
            "Read-only file system" in out and not (tools / "hello-from-tmp.written").exists()
        )  # read-only
    finally:
        shutil.rmtree(tools, ignore_errors=True)

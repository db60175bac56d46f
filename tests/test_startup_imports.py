"""What `butler run` loads: only what the task uses. A tool's heavy modules (TLS, SMTP, the
HTTP client) load when that tool is called, not when its plug-in is described."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import butler_exe, call

UNUSED_BY_CLOCK = {"ssl", "_ssl", "smtplib", "http.client"}


def imported_by(args: list[str], home, cwd) -> set[str]:
    """Every module the installed `butler` imported, from ``-X importtime`` on stderr."""
    env = {**os.environ, "BUTLER_HOME": str(home), "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        [sys.executable, butler_exe(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }


def test_a_run_that_reads_the_clock_loads_no_network_or_mail_code(
    butler_home, workdir, script
) -> None:
    model = script({"tool_calls": [call("now")]}, {"text": "It is late."})
    loaded = imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    assert "butler_cli.tools.clock" in loaded  # the check sees the imports at all
    assert loaded & UNUSED_BY_CLOCK == set()


def test_calling_the_http_tool_still_loads_its_client(
    butler_home, workdir, script, allow_all
) -> None:
    """The other side: the deferred imports happen when the tool runs (the connection is
    refused; the call's error result is all the model gets)."""
    model = script(
        {"tool_calls": [call("http_request", method="GET", url="http://127.0.0.1:9/x")]},
        {"text": "k"},
    )
    loaded = imported_by(["run", "--model", model, "fetch", *allow_all], butler_home, workdir)
    assert "http.client" in loaded

"""A plug-in's own config section, declared once (a ``butler.settings`` entry point naming a
tuple of ``butler_cli.api.Setting``): the installed ACME package (tests/thirdparty_policy)
declares ``[acme]``, and every reader derives from that declaration — the file check (a wrong
value is one line, exit 2, the file untouched, nothing run), `config show/get/set`, the
variable that overrides a key, the masking of the secret a key names, and what its tool
plug-in (``ToolContext.section``) and its policy (``PolicySettings.section``) are given."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import call, tool_results
from test_policies import acme_venv  # noqa: F401  (the fixture: ACME installed in a venv)

from butler_cli.core.errors import UsageError

CODE = "lc-7731-zebra-quartz"  # ACME's launch code: its variable's name says nothing secret


def acme(
    py: Path, home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`butler ARGS` in the venv where ACME is installed."""
    return subprocess.run(
        [str(py), "-m", "butler_cli", *args],
        cwd=cwd,
        env={**os.environ, "BUTLER_HOME": str(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def get(py: Path, home: Path, cwd: Path, key: str, **env: str) -> tuple[object, str]:
    r = acme(py, home, cwd, "config", "get", key, "--json", env=env)
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    return found["value"], found["source"]


def test_config_show_get_and_set_know_a_plugins_section(
    acme_venv: Path,  # noqa: F811
    butler_home: Path,
    workdir: Path,
) -> None:
    shown = json.loads(acme(acme_venv, butler_home, workdir, "config", "show", "--json").stdout)
    assert shown["sections"]["acme"] == {
        "greeting": "pong",
        "retries": 3,
        "pad": "pad-a",
        "launchable": ["rocket"],
        "code_env": "ACME_LAUNCH_CODE",
        "region": "eu",
    }
    assert shown["sections"]["smtp"]["tls"] == "starttls"  # send_email's, declared alike
    assert get(acme_venv, butler_home, workdir, "acme.retries") == (3, "default")
    assert (
        acme(acme_venv, butler_home, workdir, "config", "set", "acme.retries", "5").returncode == 0
    )
    assert (
        acme(acme_venv, butler_home, workdir, "config", "set", "acme.pad", "pad-b").returncode == 0
    )
    file = f"file {butler_home / 'config.toml'}"
    assert get(acme_venv, butler_home, workdir, "acme.retries") == (5, file)
    assert get(acme_venv, butler_home, workdir, "acme.greeting", ACME_GREETING="hi") == (
        "hi",
        "env ACME_GREETING",
    )
    text = acme(acme_venv, butler_home, workdir, "config", "show").stdout
    assert "acme.retries = 5" in text and "acme.pad = 'pad-b'" in text
    before = (butler_home / "config.toml").read_bytes()
    for key, value, why in [
        ("acme.retries", "many", "acme.retries must be a whole number"),
        ("acme.pad", "pad-z", "acme.pad must be one of pad-a, pad-b"),
        ("acme.region", "us", "unknown key 'acme.region'"),  # declared settable=False
        ("acme.colour", "red", "unknown key 'acme.colour'"),
    ]:
        r = acme(acme_venv, butler_home, workdir, "config", "set", key, value)
        assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert (butler_home / "config.toml").read_bytes() == before


@pytest.mark.parametrize(
    ("section", "why"),
    [
        ('[acme]\nretries = "three"\n', "acme.retries must be a whole number"),
        ('[acme]\npad = "pad-z"\n', "acme.pad must be one of pad-a, pad-b"),
        ("[acme]\nlaunchable = [1]\n", "acme.launchable must be a list of strings"),
        ("[acme]\ncolour = 1\n", "[acme] takes greeting, retries, pad, launchable"),
        ('acme = "flat"\n', "[acme] takes"),
    ],
)
def test_a_bad_value_in_a_plugins_section_stops_every_command_in_one_line(
    acme_venv: Path,  # noqa: F811
    butler_home: Path,
    workdir: Path,
    script,
    section: str,
    why: str,
) -> None:
    path = butler_home / "config.toml"
    butler_home.mkdir(parents=True, exist_ok=True)
    path.write_text(section)
    model = script({"tool_calls": [call("acme_launch", "l", what="rocket")]}, {"text": "k"})
    for args in (
        ["run", "--model", model, "go", "--policy", "acme-quota"],
        ["config", "show"],
        ["config", "get", "acme.retries"],
        ["tools", "list"],
    ):
        r = acme(acme_venv, butler_home, workdir, *args)
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert path.read_text() == section  # left as the person wrote it
    assert not (workdir / "launched.txt").exists()  # nothing ran


def test_a_run_gives_the_plugin_its_section_and_masks_the_secret_it_names(
    acme_venv: Path,  # noqa: F811
    butler_home: Path,
    workdir: Path,
    script,
) -> None:
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(
        '[acme]\ngreeting = "ahoy"\npad = "pad-b"\nlaunchable = ["rocket", "probe"]\n'
    )
    model = script(
        {
            "tool_calls": [
                call("acme_ping", "p"),
                call("acme_launch", "l1", what="probe"),
                call("acme_launch", "l2", what="car"),
            ]
        },
        {"text": "k"},
    )
    r = acme(
        acme_venv,
        butler_home,
        workdir,
        "run",
        "--model",
        model,
        "go",
        "--policy",
        "acme-quota",
        "--yes-safe",
        "--json",
        env={"ACME_LAUNCH_CODE": CODE, "ACME_GREETING": "ahoy from env"},
    )
    assert r.returncode == 0, r.stderr
    results = [b["content"] for b in tool_results(r.stdout)]
    # the variable beats the file; defaults fill what the file leaves out; the code is masked
    assert results[0] == "ahoy from env (retries 3, region eu, ****)"
    assert results[2] == "Refused (not run): ACME quota: only rocket, probe may launch."
    assert (workdir / "launched.txt").read_text() == "probe from pad-b\n"
    assert CODE not in r.stdout + r.stderr
    kept = [p for p in butler_home.rglob("*") if p.is_file()]
    assert kept and not [p for p in kept if CODE.encode() in p.read_bytes()]


def test_a_section_of_another_butler_setting_s_name_is_refused() -> None:
    from butler_cli.app.config.config import _declared
    from butler_cli.app.config.settings import BY_KEY
    from butler_cli.core.setting import Setting

    rows = (Setting("x", int),)
    for name in ("model", "mcp", "providers", "Bad Name"):
        with pytest.raises(UsageError, match="cannot name a section"):
            _declared(name, "pkg:ROWS", lambda: rows, {})
    with pytest.raises(UsageError, match="declared twice"):
        _declared("acme", "pkg:ROWS", lambda: rows, {"acme": rows})
    for bad in (
        [],
        ["x"],
        (Setting("x", int), Setting("x", str)),
        (Setting("a.b", int),),
        (Setting("pad", str, "pad-z", choices=("pad-a",)),),  # its own default refused
        (Setting("retries", int, "3"),),
    ):
        with pytest.raises(UsageError, match="settings plug-in 'acme'"):
            _declared("acme", "pkg:ROWS", lambda bad=bad: bad, {})
    assert "model" in BY_KEY

"""The entry-point scan's cache (``entry-points.json`` in the butler's home): the files win.

Policies and tool plug-ins are found through the installed packages' entry points. A run keeps
what one scan found, keyed by a fingerprint of everything the scan reads (each ``sys.path``
folder, each ``*.dist-info`` / ``*.egg-info`` folder in it and its ``entry_points.txt``): a
plug-in installed, removed or changed between two runs is seen by the second; a stale, corrupt
or foreign cache is rebuilt, never believed; and the cache never creates the home. Each test
runs the installed ``butler`` script (not the fork server), with a plug-in folder on PYTHONPATH
as a package manager would leave it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import butler_exe, call, tool_results

CACHE = "entry-points.json"

PLUGIN = """
from butler_cli.core.toolsets import FunctionToolset, ToolSpec


def toolsets(context):
    spec = ToolSpec("{tool}", "Says which plug-in answered.", {{"type": "object"}})
    return FunctionToolset([(spec, lambda args: "{answer}")])
"""


def install(site: Path, tool: str = "cache_ping", answer: str = "pong") -> Path:
    """A tool plug-in installed into ``site`` (a folder on PYTHONPATH): its module and its
    ``*.dist-info`` with the entry point, as pip leaves them."""
    (site / "cacheplug.py").write_text(PLUGIN.format(tool=tool, answer=answer))
    info = site / "cache_plug-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cache-plug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[butler.tools]\ncacheplug = cacheplug:toolsets\n")
    return info


def run(home: Path, cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BUTLER_HOME": str(home), "PYTHONPATH": str(site), "NO_COLOR": "1"}
    return subprocess.run(
        [butler_exe(), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def tools(home: Path, cwd: Path, site: Path) -> set[str]:
    r = run(home, cwd, site, "tools", "list", "--json")
    assert r.returncode == 0, r.stderr
    return {row["name"] for row in json.loads(r.stdout)}


def ping(home: Path, cwd: Path, site: Path, script, tool: str = "cache_ping") -> str:
    """What the plug-in's tool answered in one run (its error result when there is none)."""
    model = script({"tool_calls": [call(tool, "p")]}, {"text": "k"})
    r = run(home, cwd, site, "run", "--model", model, "ping", "--json")
    assert r.returncode == 0, r.stderr
    return str(tool_results(r.stdout)[0]["content"])


def test_a_plugin_installed_or_removed_between_two_runs_is_seen(
    butler_home, workdir, tmp_path, script
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    butler_home.mkdir()
    assert "cache_ping" not in tools(butler_home, workdir, site)
    assert (butler_home / CACHE).is_file()  # the scan was kept...
    info = install(site)
    assert "cache_ping" in tools(butler_home, workdir, site)  # ...and not believed over the files
    assert ping(butler_home, workdir, site, script) == "pong"
    (info / "entry_points.txt").unlink()
    (info / "METADATA").unlink()
    info.rmdir()
    assert "cache_ping" not in tools(butler_home, workdir, site)


def test_an_entry_point_changed_in_place_is_seen(butler_home, workdir, tmp_path, script) -> None:
    """Same folders, same file, same size: only the file's times and contents differ."""
    site = tmp_path / "site"
    site.mkdir()
    butler_home.mkdir()
    info = install(site)
    (site / "cacheplue.py").write_text(PLUGIN.format(tool="cache_ping", answer="PONG"))
    assert ping(butler_home, workdir, site, script) == "pong"
    points = info / "entry_points.txt"
    before = points.read_text()
    points.write_text(before.replace("= cacheplug:", "= cacheplue:"))
    assert len(points.read_text()) == len(before)
    assert ping(butler_home, workdir, site, script) == "PONG"


def test_a_corrupt_or_foreign_cache_is_rebuilt(butler_home, workdir, tmp_path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    butler_home.mkdir()
    install(site)
    cache = butler_home / CACHE
    for planted in (
        b"\x00garbage{",
        b'{"format": 1}',
        json.dumps({"format": 1, "key": "another machine", "entries": []}).encode(),
        b"[]",
    ):
        cache.write_bytes(planted)
        assert "cache_ping" in tools(butler_home, workdir, site), planted
        assert cache.read_bytes() != planted  # rebuilt from the files
    entries = json.loads(cache.read_text())["entries"]  # readable again, with the plug-in
    assert any("cacheplug" in entry for entry in entries)


def test_a_broken_plugin_is_named_the_same_from_the_cache(
    butler_home, workdir, tmp_path, script
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    butler_home.mkdir()
    install(site)
    (site / "cacheplug.py").write_text("raise RuntimeError('the plug-in is broken')\n")
    model = script({"text": "k"})
    first = run(butler_home, workdir, site, "run", "--model", model, "go")
    assert (butler_home / CACHE).is_file()
    second = run(butler_home, workdir, site, "run", "--model", model, "go")
    for r in (first, second):
        assert r.returncode == 2, r.stderr
        assert "tool plug-in 'cacheplug' = cacheplug:toolsets (cache-plug 1.0) failed" in r.stderr
        assert "RuntimeError: the plug-in is broken" in r.stderr
    assert first.stderr == second.stderr


def test_reading_commands_on_a_fresh_home_create_no_cache(butler_home, workdir, tmp_path) -> None:
    """The cache is written only into a home that exists: it never creates one."""
    site = tmp_path / "site"
    site.mkdir()
    for args in (["policy", "list"], ["tools", "list"], ["memory", "list"]):
        r = run(butler_home, workdir, site, *args)
        assert r.returncode == 0, r.stderr
        assert not butler_home.exists(), args

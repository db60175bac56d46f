"""One session assembly (issue 33): `doctor` and `tools list` read what a run builds, so they
can never disagree with it about what is protected or loaded.

The attack: a third party's policy package (tests/thirdparty_policy, built and installed with
hatchling by pip) is chosen by name. A run protects the policy's own code — its module, its
bytecode and its package's folder — so no tool may read or change it; `butler doctor` said
which files are "hidden from tools and commands" from a list of its own and left them out.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import call, tool_results
from test_policies import acme_venv, in_venv

__all__ = ["acme_venv"]  # the fixture, shared with test_policies.py


def _package_folder(py: Path) -> Path:
    found = subprocess.run(
        [str(py), "-c", "import acme_butler_policy as m, os; print(os.path.dirname(m.__file__))"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(found.stdout.strip())


def _covers(listed: list[str], path: Path) -> bool:
    return any(path == Path(p) or Path(p) in path.parents for p in listed)


def test_doctor_lists_every_file_a_run_hides_with_a_third_party_policy(
    acme_venv, butler_home, workdir, script
) -> None:
    package = _package_folder(acme_venv)
    site = package.parent
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(
        f"allowed_roots = [{json.dumps(str(workdir))}, {json.dumps(str(site))}]\n",
        encoding="utf-8",
    )
    targets = [package / "tools.py", package / "__init__.py", package]
    beside = site / "butler_parent.pth"  # in the same roots, and no gate file: readable
    model = script(
        {
            "tool_calls": [
                *(call("read_file", f"r{i}", path=str(p)) for i, p in enumerate(targets)),
                call("read_file", "ok", path=str(beside)),
            ]
        },
        {"text": "done"},
    )
    r = in_venv(acme_venv, butler_home, workdir, "run", "--model", model, "--policy", "acme",
                "--json", "go")  # fmt: skip
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert "site.addsitedir" in results[-1]["content"]  # the roots let the run read there
    for target, result in zip(targets, results, strict=False):
        assert "off limits" in result["content"], (target, result["content"])

    doctor = in_venv(acme_venv, butler_home, workdir, "doctor", "--json", "--policy", "acme")
    assert doctor.returncode == 0, doctor.stderr
    listed = json.loads(doctor.stdout)["protected"]
    missing = [str(t) for t in targets if not _covers(listed, t)]
    assert missing == [], f"hidden by a run, not listed by doctor: {missing}"

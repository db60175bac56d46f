"""Policies: a third-party package found by name, the tiered rules, `butler policy`, and
session grants in a real chat."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from conftest import call, json_lines, spawn_butler, tool_results

from butler_cli.core.errors import PolicyLoadError
from butler_cli.policy.settings import PolicySettings

HERE = Path(__file__).parent
RULES = """
[[rule]]
name = "notes are mine"
tool = "write_file"
tier = "safe"
args = { path = "glob:notes/*" }

[[rule]]
name = "secrets stay"
tool = "write_file"
tier = "forbidden"
args = { path = "re:(^|/)\\\\.env$" }

[[rule]]
name = "never delete"
tool = "delete_*"
tier = "forbidden"

[[rule]]
name = "drafts are dangerous"
tool = "write_file"
tier = "dangerous"
args = { path = "glob:**/*.txt" }
widen = { path = "glob:drafts/*.txt" }

[[rule]]
name = "all notes are safe, even secrets"
tool = "write_file"
tier = "safe"
args = { path = "glob:**" }
"""


@pytest.fixture(scope="module")
def acme_venv(tmp_path_factory) -> Path:
    """A temp venv that has butler (through the test venv's site-packages) and the ACME
    policy package, built and installed from tests/thirdparty_policy by pip."""
    venv = tmp_path_factory.mktemp("acme") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    inner = subprocess.run(
        [str(py), "-c", "import site; print(site.getsitepackages()[0])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    outer = site.getsitepackages()[0]
    Path(inner, "butler_parent.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            str(HERE / "thirdparty_policy"),
        ],
        check=True,
    )
    return py


def in_venv(py: Path, home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BUTLER_HOME": str(home)}
    return subprocess.run(
        [str(py), "-m", "butler_cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_third_party_policy_is_found_and_used_by_name(
    acme_venv, butler_home, workdir, script
) -> None:
    listed = json.loads(in_venv(acme_venv, butler_home, workdir, "policy", "list", "--json").stdout)
    names = {p["name"]: p for p in listed["installed"]}
    assert names["acme"]["package"] == "acme-butler-policy 1.2.0"
    assert {"ask", "readonly", "tiered"} <= set(names)  # built-ins are found the same way
    model = script(
        {
            "tool_calls": [
                call("delete_file", "d", path="x"),
                call("write_file", "w", path="n.md", content="hi"),
            ]
        },
        {"text": "k"},
    )
    r = in_venv(
        acme_venv,
        butler_home,
        workdir,
        "run",
        "--model",
        model,
        "go",
        "--policy",
        "acme",
        "--yes-safe",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    res = tool_results(r.stdout)
    assert res[0]["content"] == "Refused (not run): ACME policy: nothing is ever deleted."
    assert (workdir / "n.md").read_text() == "hi"


def test_a_third_party_tool_plugin_loads_like_the_built_ins(
    acme_venv, butler_home, workdir, script
) -> None:
    listed = json.loads(in_venv(acme_venv, butler_home, workdir, "tools", "list", "--json").stdout)
    rows = {r["name"]: r for r in listed}
    assert (
        rows["acme_ping"]["kind"] == "benign"
        and "acme-butler-policy 1.2.0" in rows["acme_ping"]["source"]
    )
    assert (rows["acme_launch"]["kind"], rows["acme_launch"]["default"]) == ("governed", "approve")
    assert "butler-cli" in rows["write_file"]["source"] and rows["read_file"]["kind"] == "benign"
    model = script(
        {"tool_calls": [call("acme_ping", "p"), call("acme_launch", "l", what="rocket")]},
        {"text": "k"},
    )
    r = in_venv(acme_venv, butler_home, workdir, "run", "--model", model, "go", "--json")
    assert r.returncode == 3, r.stderr
    assert not (workdir / "launched.txt").exists()
    park_id = json_lines(r.stdout)[0]["park_id"]
    r = in_venv(acme_venv, butler_home, workdir, "resume", park_id, "--approve", "--json")
    assert r.returncode == 0, r.stderr
    assert (workdir / "launched.txt").read_text() == "rocket from pad-a\n"  # [acme] defaults
    assert tool_results(r.stdout)[0]["content"].startswith("pong (retries 3")


def test_a_broken_third_party_policy_is_named(acme_venv, butler_home, workdir, script) -> None:
    r = in_venv(
        acme_venv,
        butler_home,
        workdir,
        "run",
        "--model",
        script({"text": "x"}),
        "go",
        "--policy",
        "acme-broken",
    )
    assert r.returncode == 2
    assert "acme-butler-policy 1.2.0" in r.stderr and "ModuleNotFoundError" in r.stderr
    assert "Traceback" not in r.stderr


def tiered(tmp_path: Path, text: str = RULES):  # type: ignore[no-untyped-def]
    from butler_policies.tiered import TieredPolicy

    path = tmp_path / "rules.toml"
    path.write_text(text)
    return TieredPolicy.butler_configure(PolicySettings(home=tmp_path, policy_file=path))


class TestTiered:
    def test_safe_by_glob(self, tmp_path) -> None:
        v = tiered(tmp_path).classify("write_file", {"path": "notes/a.md"})
        assert v.decision == "allow" and v.reason == "safe — rule 'notes are mine' (line 2)"

    def test_the_strictest_tier_wins_whatever_the_order(self, tmp_path) -> None:
        # "all notes are safe" comes last and matches too; forbidden still wins
        v = tiered(tmp_path).classify("write_file", {"path": "app/.env"})
        assert v.decision == "refuse" and "secrets stay" in v.reason
        reordered = RULES.split("[[rule]]")
        v = tiered(tmp_path, "[[rule]]".join([reordered[0], *reversed(reordered[1:])])).classify(
            "write_file", {"path": ".env"}
        )
        assert v.decision == "refuse"

    def test_dangerous_beats_safe_and_carries_widen(self, tmp_path) -> None:
        v = tiered(tmp_path).classify("write_file", {"path": "drafts/todo.txt"})
        assert v.decision == "approve" and v.reason.startswith(
            "dangerous — rule 'drafts are dangerous'"
        )
        assert dict(v.widen) == {"path": "glob:drafts/*.txt"}

    def test_tool_globs_and_no_match(self, tmp_path) -> None:
        p = tiered(tmp_path)
        assert p.classify("delete_file", {"path": "x"}).decision == "refuse"
        assert p.classify("send_email", {"to": "a@b.c"}) is None  # the tool's default decides

    def test_regex_searches_and_lists_join(self, tmp_path) -> None:
        p = tiered(
            tmp_path,
            '[[rule]]\ntool = "run_command"\ntier = "safe"\nargs = { argv = "re:^ls( |$)" }\n',
        )
        assert p.classify("run_command", {"argv": ["ls", "-l"]}).decision == "allow"
        assert p.classify("run_command", {"argv": ["lsof"]}) is None
        assert p.classify("run_command", {}) is None

    @pytest.mark.parametrize(
        "text,line,needle",
        [
            ('[[rule]]\ntool = "x"\ntier = "meh"\n', 1, "tier 'meh'"),
            ('[[rule]]\ntool = "a"\ntier = "safe"\n\n[[rule]]\ntier = "safe"\n', 5, "needs tool"),
            ('[[rule]]\ntool = "a"\ntier = "safe"\nargs = { path = "re:(" }\n', 1, "bad pattern"),
            ('[[rule]]\ntool = "a"\ntier = "safe"\ncolour = "red"\n', 1, "unknown key"),
            ('[[rule]]\ntool = "a"\ntier = "safe"\nwiden = { path = "*" }\n', 1, "widen is for"),
            ('[[rule]\ntool = "a"\n', 1, "line 1"),
        ],
    )
    def test_a_broken_file_is_refused_whole_with_its_line(
        self, tmp_path, text, line, needle
    ) -> None:
        with pytest.raises(PolicyLoadError) as err:
            tiered(tmp_path, text)
        assert needle in err.value.message and f"line {line}" in err.value.message


def test_policy_check_exit_codes(butler, tmp_path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    base = ["policy", "check", "--policy", "tiered", "--policy-file", str(rules)]
    assert (
        butler(*base[:2], "write_file", *base[2:], "--args", '{"path": "notes/a"}').returncode == 0
    )
    assert butler(*base[:2], "write_file", *base[2:], "--args", '{"path": "a.txt"}').returncode == 3
    r = butler(*base[:2], "delete_file", *base[2:], "--args", '{"path": "a"}', "--json")
    assert r.returncode == 4 and json.loads(r.stdout)["reason"].startswith(
        "forbidden — rule 'never delete'"
    )
    assert butler("policy", "check", "read_file").returncode == 0
    assert butler("policy", "check", "write_file", "--args", "[1]").returncode == 2
    assert butler("policy", "check", "nope").returncode == 2
    r = butler(
        *base[:2],
        "write_file",
        "--policy",
        "tiered",
        "--policy-file",
        str(tmp_path / "missing.toml"),
    )
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_policy_test_reports_every_mismatch(butler, tmp_path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "\n".join(
            json.dumps(c)
            for c in [
                {"tool": "write_file", "args": {"path": "notes/x"}, "expect": "allow"},
                {"tool": "delete_file", "args": {"path": "x"}, "expect": "refuse"},
                {"tool": "write_file", "args": {"path": "a.txt"}, "expect": "allow"},
                {"tool": "read_file", "args": {"path": "x"}, "expect": "benign"},
                {"tool": "write_file", "args": {"path": ".env"}, "expect": "approve"},
            ]
        )
    )
    r = butler("policy", "test", str(cases), "--policy", "tiered", "--policy-file", str(rules))
    assert r.returncode == 1
    assert "case 3: write_file" in r.stdout and "expected allow, got approve" in r.stdout
    assert "case 5:" in r.stdout and "5 cases, 2 mismatches" in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('[{"tool": "x", "expect": "maybe"}]')
    assert butler("policy", "test", str(bad)).returncode == 2


def test_the_rule_file_is_off_limits_wherever_it_lives(butler, script, tmp_path, workdir) -> None:
    rules = workdir / "my-rules.toml"
    rules.write_text('[[rule]]\ntool = "*"\ntier = "safe"\n')
    model = script(
        {"tool_calls": [call("write_file", "w", path="my-rules.toml", content="")]}, {"text": "k"}
    )
    r = butler(
        "run",
        "--model",
        model,
        "x",
        "--policy",
        "tiered",
        "--policy-file",
        str(rules),
        "--yes-safe",
        "--json",
    )
    res = tool_results(r.stdout)
    assert res[0]["is_error"] and "butler's own files" in res[0]["content"]
    assert rules.read_text().startswith("[[rule]]")


def test_tier_shows_in_pending_and_resume_uses_the_recorded_file(
    butler, script, tmp_path, workdir
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    model = script(
        {"tool_calls": [call("write_file", "w", path="a.txt", content="x")]}, {"text": "k"}
    )
    butler("run", "--model", model, "x", "--policy", "tiered", "--policy-file", str(rules))
    [park] = json.loads(butler("pending", "--json").stdout)
    assert park["reason"].startswith("dangerous — rule 'drafts are dangerous'")
    rules.write_text(
        RULES.replace(
            'name = "drafts are dangerous"\ntool = "write_file"\ntier = "dangerous"',
            'name = "drafts are dangerous"\ntool = "write_file"\ntier = "forbidden"',
        ).replace('widen = { path = "glob:drafts/*.txt" }\n', "")
    )
    r = butler("resume", park["id"], "--approve", "--json")  # X4: asked again, with the same file
    res = tool_results(r.stdout)
    assert res[-1]["content"].startswith("Refused (not run): forbidden")
    assert not (workdir / "a.txt").exists()


APPROVE = r"Approve\? \[y/n/l/d/s(/w)?(/a)?\]"


def chat(home: Path, cwd: Path, model: str, rules: Path) -> pexpect.spawn:
    args = ["chat", "--model", model, "--policy", "tiered", "--policy-file", str(rules)]
    child = spawn_butler(args, home, cwd)
    child.expect("you ›")
    return child


def test_exact_grant_scope_and_revoke(butler, script, tmp_path, workdir, butler_home) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)

    def w(cid: str, path: str) -> dict:
        return {"tool_calls": [call("write_file", cid, path=path, content="same")]}

    model = script(
        w("a", "a.txt"),
        {"text": "one"},
        w("b", "a.txt"),
        {"text": "two"},
        w("c", "b.txt"),
        {"text": "three"},
        w("d", "a.txt"),
        {"text": "four"},
    )
    child = chat(butler_home, workdir, model, rules)
    child.sendline("first")
    child.expect(APPROVE)
    child.sendline("s")
    child.expect("Granted for this session: write_file with exactly")
    child.expect("one")
    child.expect("you ›")
    child.sendline("same again")  # same tool, same arguments: runs without asking
    child.expect("two")
    assert "Approve?" not in child.before
    child.expect("you ›")
    assert (workdir / "a.txt").read_text() == "same"
    child.sendline("other file")  # other arguments: the grant does not cover it
    child.expect(APPROVE)
    child.sendline("l")
    child.expect("you ›")
    child.sendline("/grants")
    child.expect(r"1\. write_file with exactly")
    child.expect("you ›")
    child.sendline("/revoke 1")
    child.expect("Revoked")
    child.expect("you ›")
    child.sendline("and again")  # revoked: asks again
    child.expect(APPROVE)
    child.sendline("l")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    audit = [json.loads(x) for x in (butler_home / "audit.jsonl").read_text().splitlines()]
    used = [a for a in audit if a["event"] == "verdict" and a["verdict"] == "allow"]
    assert len(used) == 1 and used[0]["reason"].startswith("session grant 1 (policy:")
    assert "a.txt" not in used[0]["reason"]  # the grant's number, never its arguments
    # never in `run`, never in another process: a fresh run parks the very same call
    r = butler(
        "run",
        "--model",
        script(w("z", "a.txt")),
        "x",
        "--policy",
        "tiered",
        "--policy-file",
        str(rules),
    )
    assert r.returncode == 3


def test_widened_grant_and_never_over_forbidden(
    butler, script, tmp_path, workdir, butler_home
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        RULES
        + '\n[[rule]]\nname = "no drafts/secret.txt"\ntool = "write_file"\ntier = "forbidden"\nargs = { path = "glob:drafts/secret*" }\n'
    )
    (workdir / "drafts").mkdir()
    w = lambda cid, path: {"tool_calls": [call("write_file", cid, path=path, content=cid)]}  # noqa: E731
    model = script(
        w("a", "drafts/one.txt"),
        {"text": "one"},
        w("b", "drafts/two.txt"),
        {"text": "two"},
        w("c", "drafts/secret.txt"),
        {"text": "three"},
    )
    child = chat(butler_home, workdir, model, rules)
    child.sendline("first")
    child.expect(r"Approve\? \[y/n/l/d/s/w(/a)?\]")
    child.sendline("w")
    child.expect(
        r"Approve write_file with path matching glob:drafts/\*\.txt for the rest of this session\? \[y/N\]"
    )
    child.sendline("y")
    child.expect("one")
    child.expect("you ›")
    child.sendline("second")  # covered by the widened grant
    child.expect("two")
    assert "Approve?" not in child.before
    child.expect("you ›")
    child.sendline("third")  # matches the pattern, but forbidden: a grant never overrides it
    child.expect("refused")
    child.expect("three")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    assert sorted(p.name for p in (workdir / "drafts").iterdir()) == ["one.txt", "two.txt"]

"""The declared plug-in contract (``butler_cli.api``): a third-party tool plug-in written only
against it, and a policy object whose ``governs`` claims an MCP tool."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import test_mcp
import test_policies
from conftest import call, json_lines, tool_results
from test_policies import in_venv

from butler_cli.api import benign_toolset, governed_toolset, tool
from butler_cli.core.messages import ToolUseBlock

#: The fixtures these tests share: the ACME package in a temp venv, the MCP notes server.
acme_venv = test_policies.acme_venv
notes = test_mcp.notes


def test_tool_builds_the_schema_from_type_hints_and_names_a_bad_field() -> None:
    @tool
    def lookup(title: str, limit: int = 5) -> str:
        """Look a title up.

        More words the model need not see."""
        return f"{title}:{limit}"

    assert (lookup.spec.name, lookup.spec.description) == ("lookup", "Look a title up.")
    schema = lookup.spec.input_schema
    assert schema["properties"] == {
        "title": {"type": "string"},
        "limit": {"type": "integer", "default": 5},
    }
    assert schema["required"] == ["title"] and schema["type"] == "object"
    tools = benign_toolset([lookup])
    run = lambda **args: tools.run(ToolUseBlock(id="c", name="lookup", input=args))  # noqa: E731
    assert run(title="tea").content == "tea:5"
    for bad, field in (
        ({"title": "t", "limit": "many"}, "limit"),
        ({}, "title"),
        ({"title": "t", "x": 1}, "x"),
    ):
        result = run(**bad)
        assert result.is_error and f"'{field}'" in result.content, result


def test_an_argument_may_have_a_name_pydantic_uses_itself() -> None:
    """``json``, ``copy``, ``schema``, ``model_name``: the tool's arguments, not the model's."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool
        def save(json: str, copy: int, schema: str = "s", model_name: str = "m") -> str:
            return f"{json}/{copy}/{schema}/{model_name}"

    assert set(save.spec.input_schema["properties"]) == {"json", "copy", "schema", "model_name"}
    assert save.run({"json": "j", "copy": 2}) == "j/2/s/m"
    with pytest.raises(ValueError, match="'copy'"):
        save.run({"json": "j", "copy": "two"})


def test_a_governed_typed_tool_refuses_bad_arguments_before_the_policy_sees_them() -> None:
    seen: list[str] = []

    @tool
    def order(item: str, count: int) -> str:
        return "ordered"

    gate = governed_toolset([order], lambda name, args: seen.append(name))
    verdict = gate.classify("order", {"item": "tea", "count": "lots"})  # type: ignore[attr-defined]
    assert verdict.decision == "refuse" and "'count'" in verdict.reason and seen == []


def test_a_typed_third_party_tool_plugin_runs_through_the_installed_butler(
    acme_venv, butler_home, workdir, script
) -> None:
    listed = json.loads(in_venv(acme_venv, butler_home, workdir, "tools", "list", "--json").stdout)
    rows = {r["name"]: r for r in listed}
    assert rows["acme_lookup"]["kind"] == "benign" and "acme-typed" in rows["acme_lookup"]["source"]
    assert (rows["acme_order"]["kind"], rows["acme_order"]["default"]) == ("governed", "approve")
    model = script(
        {
            "tool_calls": [
                call("acme_lookup", "ok", title="tea", limit=2),
                call("acme_lookup", "bad", title="tea", limit="many"),
                call("acme_order", "refused", item="tea", count="lots"),
            ]
        },
        {"tool_calls": [call("acme_order", "o", item="tea", count=3)]},
        {"text": "k"},
    )
    r = in_venv(acme_venv, butler_home, workdir, "run", "--model", model, "go", "--json")
    assert r.returncode == 3, r.stderr  # the well-typed order waits for a person
    ok, bad, refused = tool_results(r.stdout)[:3]
    assert (ok["content"], ok["is_error"]) == ("tea ×2", False)
    assert bad["is_error"] and "'limit'" in bad["content"] and "integer" in bad["content"]
    assert refused["is_error"] and refused["content"].startswith("Refused (not run): acme_order")
    assert "'count'" in refused["content"] and not (workdir / "orders.txt").exists()
    park_id = json_lines(r.stdout)[0]["park_id"]
    r = in_venv(acme_venv, butler_home, workdir, "resume", park_id, "--approve", "--json")
    assert r.returncode == 0, r.stderr
    assert (workdir / "orders.txt").read_text() == "tea 3\n"


CLAIMING_POLICY = '''
class Rules:
    def classify(self, name, args):
        return None


class Claims:
    """Its classify is another object's method: governs lives on this object only."""

    def __init__(self):
        self.classify = Rules().classify

    def governs(self, tool_name):
        return tool_name == "notes__lookup"


policy = Claims()
'''


def test_a_policy_objects_governs_claims_an_mcp_tool(butler, script, notes, tmp_path: Path) -> None:
    """The loader keeps the policy object: ``governs`` is asked of it, not of whatever object
    its ``classify`` happens to be bound to."""
    source = tmp_path / "claims.py"
    source.write_text(CLAIMING_POLICY)
    model = script({"tool_calls": [call("notes__lookup", "l", title="tea")]}, {"text": "k"})
    r = butler("run", "--model", model, "go", "--json", "--policy", f"{source}:policy")
    assert r.returncode == 3, r.stdout + r.stderr
    assert json_lines(r.stdout)[0]["approval"]["tool"] == "notes__lookup"


# -- the built-ins use the contract and nothing else -------------------------------------------
ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "butler_cli" / "tools"


def _butler_imports(path: Path) -> list[tuple[int, str]]:
    """Every ``butler_cli`` module ``path`` imports, wherever the import sits (top, function,
    TYPE_CHECKING), with its line."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n.split(".")[0] == "butler_cli"]
    return found


def _builtin_tool_modules() -> list[Path]:
    """The modules the ``butler.tools`` entry points name, and the tool modules their
    factories build from (``butler_cli.tools.files`` …)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    targets = project["project"]["entry-points"]["butler.tools"].values()
    modules = {t.split(":")[0] for t in targets}
    assert modules == {"butler_cli.tools.plugins"}, modules  # the scan below reads that one
    built = {
        name
        for _, name in _butler_imports(TOOLS / "plugins.py")
        if name.startswith("butler_cli.tools.")
    }
    paths = [ROOT / (m.replace(".", "/") + ".py") for m in sorted(modules | built)]
    assert {p.stem for p in paths} >= {"plugins", "files", "clock", "command", "http", "email"}
    return paths


def test_the_shipped_policies_and_built_in_tools_import_only_the_declared_contract() -> None:
    """What the issue asks of the plug-in contract: a built-in is written as a third party
    would write it. A policy imports ``butler_cli.api`` only; a built-in tool that and its own
    sibling modules in ``butler_cli/tools/`` (its implementation: paths, the sandbox, redact)."""
    policies = sorted((ROOT / "policies" / "butler_policies").glob("*.py"))
    assert {p.stem for p in policies} >= {"ask", "readonly", "tiered"}
    wrong = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in policies
        for line, name in _butler_imports(p)
        if name != "butler_cli.api"
    ]
    siblings = {f"butler_cli.tools.{p.stem}" for p in TOOLS.glob("*.py")}
    siblings -= {"butler_cli.tools.loader", "butler_cli.tools.context"}  # the butler's side
    wrong += [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in _builtin_tool_modules()
        for line, name in _butler_imports(p)
        if name != "butler_cli.api" and name not in siblings
    ]
    assert wrong == []


def test_the_contract_imports_pydantic_only_when_a_tool_is_built() -> None:
    """Every built-in tool imports the api on every run, and they write their schemas by hand:
    pydantic is imported inside ``@tool``'s helpers, never when the module loads (only under
    ``TYPE_CHECKING`` for the annotations)."""
    import ast

    tree = ast.parse((ROOT / "butler_cli" / "api.py").read_text(encoding="utf-8"))
    at_load = [
        node
        for node in tree.body
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    ]
    module_level = {
        name
        for stmt in at_load
        if isinstance(stmt, ast.Import | ast.ImportFrom)
        for name in (
            [stmt.module or ""]
            if isinstance(stmt, ast.ImportFrom)
            else [a.name for a in stmt.names]
        )
    }
    assert "butler_cli.core.gate" in module_level  # the scan sees the module's imports
    assert not {n for n in module_level if n.split(".")[0] == "pydantic"}

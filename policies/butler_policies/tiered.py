"""``tiered``: rules in TOML give each governed call a tier.

``safe`` → allow · ``dangerous`` → approve · ``cross_boundary`` (leaves this machine or this
person: sending, posting, paying) → approve · ``forbidden`` → refuse. When several rules match,
the strictest tier wins whatever their order (deny beats allow); a call no rule matches gets the
tool's default verdict. A file with an error is refused whole, with its line. An approval of
a ``dangerous`` or ``cross_boundary`` call can never be kept ("always allow this here"): it is
asked every time (a chat session grant still works).

On a path argument the gate hands over the resolved absolute path, and a pattern is matched as
a path (``~`` expanded, relative to the task folder, ``*`` within one folder, ``**`` across);
see :func:`butler_cli.api.arg_matches`.

    [[rule]]
    name = "notes are mine"          # shown in the verdict's reason
    tool = "write_file"              # glob on the tool name (a write_file rule names edit_file too)
    tier = "safe"
    args = { path = "glob:~/notes/**" }   # optional: glob (default) or re: on named arguments
    widen = { path = "glob:~/notes/**" }  # optional, approve tiers: a chat grant may widen to this
"""

from __future__ import annotations

import fnmatch
import re
import time
import tomllib
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from butler_cli.api import (
    PolicyLoadError,
    PolicySettings,
    Verdict,
    allow,
    approve,
    arg_matches,
    compile_pattern,
    read_text_regular,
    refuse,
)

RULES_FILE = "policy.toml"
DEFAULT_RULES = "default_rules.toml"  # shipped: used when there is no rule file
TIERS = {"safe": 0, "dangerous": 1, "cross_boundary": 2, "forbidden": 3}
_RULE_KEYS = {"name", "tool", "tier", "args", "widen"}
#: A tool a rule naming another names too: an edit writes part of a file, so the person's
#: rules about writing a file (``tool = "write_file"``, a forbidden or safe folder) govern
#: editing it as well — a "never" written before edit_file existed is not an "ask" for it.
WRITES_TOO = {"edit_file": ("edit_file", "write_file")}


@dataclass(frozen=True)
class Rule:
    name: str
    tool: str
    tier: str
    line: int
    args: dict[str, str] = field(default_factory=dict)
    widen: dict[str, str] = field(default_factory=dict)

    def applies(self, tool: str, arguments: dict[str, Any], since: float | None = None) -> bool:
        """Whether the call matches; ``since``: when the rule file was written (a link on a
        path pattern's folders made later is not followed)."""
        names = WRITES_TOO.get(tool, (tool,))
        if not any(fnmatch.fnmatchcase(name, self.tool) for name in names):
            return False
        return all(
            arg_matches(pattern, key, arguments, since=since) for key, pattern in self.args.items()
        )

    def verdict(self) -> Verdict:
        why = f"{self.tier} — rule '{self.name}' (line {self.line})"
        if self.tier == "safe":
            return allow(why)
        if self.tier == "forbidden":
            return refuse(why)
        # a person may not keep an approval of what a rule calls dangerous: asked every time
        return approve(why, self.widen or None, ask_always=True)


class TieredPolicy:
    def __init__(self, rules: list[Rule], source: Path, written: float | None = None) -> None:
        self.rules = rules
        self.source = source
        #: When the rules were written (the file's time, else when they were loaded): a path
        #: pattern names its folders as they were then, never a link put there since.
        self.written = written if written is not None else time.time()

    @classmethod
    def butler_configure(cls, settings: PolicySettings) -> TieredPolicy:
        """Read the rule file: ``--policy-file`` or ``$BUTLER_HOME/policy.toml`` (may be absent)."""
        path = settings.policy_file or settings.home / RULES_FILE
        if not path.exists():
            if settings.policy_file is not None:
                raise PolicyLoadError(f"policy file {path} does not exist")
            defaults = files("butler_policies").joinpath(DEFAULT_RULES)
            return cls(parse_rules(defaults.read_text(encoding="utf-8"), Path(str(defaults))), path)
        try:
            text = read_text_regular(path)  # a FIFO in its place is named, never waited on
            written = min(path.stat().st_mtime, time.time())
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyLoadError(f"policy file {path} cannot be read: {exc}") from exc
        return cls(parse_rules(text, path), path, written)

    def governs(self, name: str) -> bool:
        """A tool any rule names is put behind the gate (used for MCP tools, benign by default)."""
        return any(fnmatch.fnmatchcase(name, rule.tool) and rule.tool != "*" for rule in self.rules)

    def classify(self, name: str, args: dict[str, Any]) -> Verdict | None:
        """The strictest matching rule decides (file order breaks ties); no match → None."""
        best: Rule | None = None
        for rule in self.rules:
            if not rule.applies(name, args, self.written):
                continue
            if best is None or TIERS[rule.tier] > TIERS[best.tier]:
                best = rule
        return best.verdict() if best else None


def parse_rules(text: str, path: Path) -> list[Rule]:
    """All rules, or a PolicyLoadError naming the line and what is wrong (never half-loaded)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyLoadError(f"policy file {path}: {exc}") from exc
    unknown = set(data) - {"rule"}
    if unknown:
        raise PolicyLoadError(f"policy file {path}: unknown table(s) {', '.join(sorted(unknown))}")
    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list):
        raise PolicyLoadError(f"policy file {path}: use [[rule]] tables")
    lines = [i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip() == "[[rule]]"]
    return [_rule(raw, lines[i] if i < len(lines) else 0, path) for i, raw in enumerate(raw_rules)]


def _rule(raw: dict[str, Any], line: int, path: Path) -> Rule:
    def bad(what: str) -> PolicyLoadError:
        return PolicyLoadError(f"policy file {path}, line {line}: {what}")

    extra = set(raw) - _RULE_KEYS
    if extra:
        raise bad(
            f"unknown key(s) {', '.join(sorted(extra))}; rules take {', '.join(sorted(_RULE_KEYS))}"
        )
    tool, tier = raw.get("tool"), raw.get("tier")
    if not isinstance(tool, str) or not tool:
        raise bad('a rule needs tool = "<glob>"')
    if tier not in TIERS:
        raise bad(f"tier {tier!r} is not one of {', '.join(TIERS)}")
    name = raw.get("name", f"{tool} → {tier}")
    if not isinstance(name, str):
        raise bad("name must be a string")
    args = _table(raw.get("args", {}), "args", bad)
    for key, pattern in args.items():
        try:
            compile_pattern(pattern)
        except (re.error, ValueError) as exc:
            raise bad(f"args.{key}: bad pattern {pattern!r}: {exc}") from exc
    widen = _table(raw.get("widen", {}), "widen", bad)
    for key, pattern in widen.items():
        try:
            compile_pattern(pattern)
        except (re.error, ValueError) as exc:
            raise bad(f"widen.{key}: bad pattern {pattern!r}: {exc}") from exc
    if widen and tier not in ("dangerous", "cross_boundary"):
        raise bad("widen is for dangerous or cross_boundary rules only")
    return Rule(name, tool, tier, line, args, widen)


def _table(value: Any, key: str, bad: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise bad(f'{key} must be a table of argument = "pattern"')
    return dict(value)


policy = TieredPolicy

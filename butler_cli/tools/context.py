"""What a tool plug-in is built from: :class:`ToolContext` (exported by :mod:`butler_cli.api`).

The butler fills it from the resolved options and the config file; a plug-in reaches a config
section, a stored secret, the path checks and a clean environment for a child program through
it, never through the butler's stores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from butler_cli.store.stored_keys import key_from
from butler_cli.tools.paths import PathRules
from butler_cli.tools.redact import child_env
from butler_cli.tools.trusted import Trusted

#: The policy a governed toolset is classified by: ``classify(name, args)`` returning a
#: verdict, a verdict dict or None (no opinion).
Classifier = Callable[[str, dict[str, Any]], object]


@dataclass(frozen=True)
class ToolContext:
    """What a tool plug-in may build its toolsets from."""

    base_dir: Path
    home: Path
    policy: Classifier | None
    protected: Sequence[Path] = ()
    roots: Sequence[Path] = ()
    #: The plug-ins' config sections (``butler.settings``), by name: each key's value in
    #: effect (its variable, else the file, else its default). See :meth:`section`.
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Where a sandboxed program may write: the task's folder and the named allowed roots.
    write_roots: Sequence[Path] = ()
    #: The programs the config names (hooks, ``$EDITOR``, MCP servers): read-only in the
    #: sandbox like the rest of the trusted base (:mod:`butler_cli.tools.trusted`).
    trusted: Sequence[Trusted] = ()

    @property
    def sandbox(self) -> Mapping[str, Any]:
        """[sandbox] for programs the butler starts (``network``): the butler's own section."""
        return self.section("sandbox")

    def section(self, name: str) -> Mapping[str, Any]:
        """The config section ``[name]`` a plug-in declared (an entry point in the
        ``butler.settings`` group), checked against its declaration when the file was read:
        every key with a value (from its variable, the file or its default); empty when no
        plug-in declares it."""
        return self.sections.get(name, {})

    @staticmethod
    def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a program a plug-in starts: never the butler's keys."""
        return child_env(extra)

    @staticmethod
    def secret(name: str) -> str | None:
        """The secret called ``name``: the environment variable of that name, else the key a
        person stored with `butler keys set NAME`; None when neither is there. Every such
        value is already masked in what the butler shows and keeps."""
        return key_from(name)

    def path_rules(self) -> PathRules:
        """The resolver for a plug-in's governed tools that take paths: name them in
        ``ToolSpec.path_args`` and pass this as ``Gate(..., paths=context.path_rules())``; the
        policy then judges, and the executor gets, the resolved paths, checked against the
        allowed roots and the butler's own files like the built-in file tools."""
        return PathRules(self.base_dir, self.home, self.protected, self.roots)

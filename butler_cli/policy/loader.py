"""Policy loader: find, then load, then validate — a broken policy is named in the error.

A policy spec is one of:

* an entry-point name in the ``butler.policies`` group (the policies we ship load this way);
* ``package.module:attr``;
* ``path/to/file.py:attr``.

The object is a callable ``classify(name, args)``, or has a ``classify`` method; a class is
instantiated with no arguments first. An object with a ``butler_configure(settings)`` method is
configured instead: that returns the policy (it gets the butler's home and ``--policy-file``).
The contract is declared in :mod:`butler_cli.api`; the loaded object is kept, and its optional
``governs(tool_name)`` is looked up on it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.core.errors import PolicyLoadError
from butler_cli.entry_points import FoundEntryPoint, in_group
from butler_cli.policy.settings import PolicySettings

if TYPE_CHECKING:  # the gate pulls in the message models: `policy list` needs none of them
    from butler_cli.core.gate import Policy

GROUP = "butler.policies"


@dataclass(frozen=True, slots=True)
class LoadedPolicy:
    """A validated policy: the spec to record in parks, where it came from, the callable."""

    spec: str
    #: Where it came from: said in words, or the entry point it was loaded through (described
    #: only when asked: its package's name and version mean parsing the package's metadata).
    origin: str | FoundEntryPoint
    classify: Policy
    #: Where its code lives (the module file, its bytecode cache, its package folder): the
    #: agent must not be able to rewrite the policy that judges it.
    files: tuple[Path, ...] = field(default=())
    #: The policy object itself (configured or created): where ``governs`` is looked up.
    policy: object = None

    @property
    def source(self) -> str:
        """Where the policy came from, e.g. ``entry point 'ask' = … (butler-cli 0.1.0)``."""
        return self.origin if isinstance(self.origin, str) else _entry_point_source(self.origin)

    def governs(self, tool_name: str) -> bool:
        """Whether the policy object claims ``tool_name`` for the gate (its optional
        ``governs``); a policy without one claims nothing."""
        claims = getattr(self.policy, "governs", None)
        return callable(claims) and bool(claims(tool_name))


def installed_policies() -> list[FoundEntryPoint]:
    """Entry points in the ``butler.policies`` group, by name (first one wins on a clash)."""
    seen: dict[str, FoundEntryPoint] = {}
    for ep in in_group(GROUP):
        seen.setdefault(ep.name, ep)
    return [seen[name] for name in sorted(seen)]


def load_policy(spec: str, settings: PolicySettings | None = None) -> LoadedPolicy:
    spec = spec.strip()
    settings = settings or PolicySettings(home=Path.home())
    if not spec:
        raise PolicyLoadError("empty policy spec; use a name from `butler.policies` or module:attr")
    target, sep, attr = spec.rpartition(":")
    if not sep:
        return _from_entry_point(spec, settings)
    if target.endswith(".py") or "/" in target or "\\" in target:
        return _from_file(Path(target), attr, settings)
    return _from_module(target, attr, settings)


def _from_entry_point(name: str, settings: PolicySettings) -> LoadedPolicy:
    found = {ep.name: ep for ep in installed_policies()}
    ep = found.get(name)
    if ep is None:
        names = ", ".join(found) or "none"
        raise PolicyLoadError(
            f"unknown policy '{name}'; installed policies: {names} "
            "(or give module:attr or path/to/file.py:attr)"
        )
    try:
        obj = ep.load()
    except Exception as exc:
        where = _entry_point_source(ep)
        raise PolicyLoadError(f"policy {where} failed to import: {_one_line(exc)}") from exc
    module = sys.modules.get(ep.module)
    policy, classify = _validate(obj, lambda: _entry_point_source(ep), settings)
    return LoadedPolicy(name, ep, classify, code_files(module), policy)


def _entry_point_source(ep: FoundEntryPoint) -> str:
    dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "unknown package"
    return f"entry point '{ep.name}' = {ep.value} ({dist})"


def _from_module(module: str, attr: str, settings: PolicySettings) -> LoadedPolicy:
    where = f"module {module}:{attr}"
    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        raise PolicyLoadError(f"policy {where} failed to import: {_one_line(exc)}") from exc
    obj = _attr(mod, attr, where)
    policy, classify = _validate(obj, lambda: where, settings)
    return LoadedPolicy(f"{module}:{attr}", where, classify, code_files(mod), policy)


def _from_file(path: Path, attr: str, settings: PolicySettings) -> LoadedPolicy:
    path = path.expanduser().resolve()
    where = f"file {path}:{attr}"
    if not path.is_file():
        raise PolicyLoadError(f"policy {where}: no such file")
    import hashlib

    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"butler_policy_file_{digest}"
    try:
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError("not a Python file")
        mod = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = mod
        module_spec.loader.exec_module(mod)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise PolicyLoadError(f"policy {where} failed to import: {_one_line(exc)}") from exc
    obj = _attr(mod, attr, where)
    policy, classify = _validate(obj, lambda: where, settings)
    return LoadedPolicy(f"{path}:{attr}", where, classify, (path, *code_files(mod)), policy)


def code_files(module: Any) -> tuple[Path, ...]:
    """The files a policy module's code comes from: its source, its cached bytecode (Python
    would load a planted ``.pyc`` whose stamp matches), and its package's folder."""
    source = getattr(module, "__file__", None)
    if not isinstance(source, str):
        return ()
    found = [Path(source)]
    if source.endswith(".py"):
        found.append(Path(importlib.util.cache_from_source(source)))
    package = getattr(module, "__package__", None)
    if package:
        found.append(Path(source).parent)
    return tuple(found)


def _attr(mod: Any, attr: str, where: str) -> Any:
    try:
        return getattr(mod, attr)
    except AttributeError as exc:
        raise PolicyLoadError(f"policy {where}: the module has no '{attr}'") from exc


def _validate(
    obj: Any, where: Callable[[], str], settings: PolicySettings
) -> tuple[object, Policy]:
    """The policy object (configured or created) and the callable that classifies. ``where``
    says where it came from, for the error."""
    configure = getattr(obj, "butler_configure", None)
    if callable(configure):
        try:
            obj = configure(settings)
        except PolicyLoadError:
            raise
        except Exception as exc:
            raise PolicyLoadError(
                f"policy {where()} could not be configured: {_one_line(exc)}"
            ) from exc
    elif isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:
            raise PolicyLoadError(
                f"policy {where()} could not be created: {_one_line(exc)}"
            ) from exc
    method = getattr(obj, "classify", None)
    if callable(method):
        return obj, method
    if callable(obj):
        return obj, obj
    raise PolicyLoadError(
        f"policy {where()} is {type(obj).__name__}: neither callable nor with a classify method"
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300]

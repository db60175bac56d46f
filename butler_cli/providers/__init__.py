"""Model providers, resolved from a model string ``<provider>:<target>`` by a lookup table."""

from __future__ import annotations

from collections.abc import Callable

from butler_cli.core.errors import UsageError
from butler_cli.core.provider import Provider


def _scripted(target: str) -> Provider:
    from butler_cli.providers.scripted import ScriptedProvider

    return ScriptedProvider.from_target(target)


#: provider name → factory taking the part after the colon. Factories import lazily.
PROVIDERS: dict[str, Callable[[str], Provider]] = {
    "scripted": _scripted,
}


def resolve_model(spec: str) -> Provider:
    """Build the provider for ``spec``; an unknown provider is a usage error listing the known."""
    name, sep, target = spec.partition(":")
    factory = PROVIDERS.get(name) if sep else None
    if factory is None:
        known = ", ".join(f"{n}:..." for n in PROVIDERS)
        raise UsageError(f"unknown model '{spec}'; known providers: {known}")
    return factory(target)


def model_spec_of(provider: Provider, given: str) -> str:
    """The spec to record in a park: the provider's canonical one when it has it."""
    spec = getattr(provider, "spec", None)
    return spec if isinstance(spec, str) else given

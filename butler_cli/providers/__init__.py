"""Model providers, resolved from ``<provider>:<model>`` by a lookup table of small kinds.

The scripted model is for offline runs and tests; the remote kinds pair a wire-format adapter
with where it is served (base URL) and which environment variable holds its key. The remote
adapters (:mod:`butler_cli.providers.remote`, and the HTTP client they send with) load only
when a remote model is built: a scripted run loads none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from butler_cli.core.errors import UsageError
from butler_cli.core.provider_settings import ProviderSettings as ProviderSettings
from butler_cli.providers.options import DEFAULTS, OptionValue, check_options
from butler_cli.providers.scripted import ScriptedProvider

if TYPE_CHECKING:  # a provider is built after the chat's first prompt: no pydantic before
    from butler_cli.core.provider import Provider
    from butler_cli.providers.remote.common import Endpoint


def _scripted(
    model: str,
    base_url: str | None,
    settings: ProviderSettings,
    options: Mapping[str, OptionValue] | None = None,
) -> Provider:
    return ScriptedProvider.from_target(model)


def _openai_chat(endpoint: Endpoint) -> Provider:
    from butler_cli.providers.remote.openai_chat import OpenAIChatModel

    return OpenAIChatModel(endpoint)


def _anthropic(endpoint: Endpoint) -> Provider:
    from butler_cli.providers.remote.anthropic_messages import AnthropicModel

    return AnthropicModel(endpoint)


@dataclass(frozen=True)
class RemoteKind:
    """A remote provider: its adapter, where it is served by default, which variable holds
    its key, and whether it must have a base URL."""

    name: str
    adapter: Callable[[Endpoint], Provider]
    base_url: str | None
    key_env: str | None
    key_required: bool
    needs_base_url: bool = False

    def build(
        self,
        model: str,
        base_url: str | None,
        settings: ProviderSettings,
        options: Mapping[str, OptionValue] | None = None,
    ) -> Provider:
        if not model:
            raise UsageError(f"name a model: --model {self.name}:<model>")
        url = base_url or settings.base_url or self.base_url
        if self.needs_base_url and not url:
            raise UsageError(f"{self.name} needs a server: add --base-url http://host:port/v1")
        from butler_cli.providers.remote.common import Endpoint

        key_env, key_file = self.key_for(url, settings)
        endpoint = Endpoint(
            self.name,
            model,
            url,
            key_env,
            self.key_required,
            key_file,
            tuple(sorted({**DEFAULTS.get(self.name, {}), **(options or {})}.items())),
            settings.stream,
            settings.images,
        )
        return self.adapter(endpoint)

    def key_for(self, url: str | None, settings: ProviderSettings) -> tuple[str | None, str | None]:
        """Which key goes to ``url``: one the config names for this provider (only to the
        base URL it names, if it names one), else the provider's own variable — and only
        ``openai:`` and ``anthropic:`` have one. A server reached through ``ollama:`` or
        ``openai-compatible:`` gets no key unless the config names one for it."""
        from butler_cli.providers.remote.common import same_origin

        if settings.api_key_env or settings.api_key_file:
            if settings.base_url and url and not same_origin(url, settings.base_url):
                if self.key_required:
                    raise UsageError(
                        f"the key for {self.name} is configured for {settings.base_url}, not "
                        f"{url}; it is never sent elsewhere (set providers.{self.name}.base_url)",
                        code="missing_key",
                    )
                return None, None
            return settings.api_key_env, settings.api_key_file
        return self.key_env, None


REMOTE = (
    RemoteKind("openai", _openai_chat, None, "OPENAI_API_KEY", True),
    RemoteKind("anthropic", _anthropic, None, "ANTHROPIC_API_KEY", True),
    RemoteKind("ollama", _openai_chat, "http://localhost:11434/v1", None, False),
    RemoteKind("openai-compatible", _openai_chat, None, None, False, needs_base_url=True),
)
#: provider name → factory(model, base_url, settings, options). The one place a provider is
#: chosen.
PROVIDERS: dict[
    str,
    Callable[[str, str | None, ProviderSettings, Mapping[str, OptionValue] | None], Provider],
] = {
    "scripted": _scripted,
    **{kind.name: kind.build for kind in REMOTE},
}


def resolve_model(
    spec: str,
    base_url: str | None = None,
    settings: Mapping[str, ProviderSettings] | None = None,
    options: Mapping[str, OptionValue] | None = None,
    *,
    stream: bool = True,
) -> Provider:
    """Build the provider for ``spec`` with its model options (``-o``, checked against what
    it takes); an unknown provider is a usage error listing the known. ``stream`` False: every
    answer is asked for whole (`--no-stream`)."""
    name, sep, target = spec.partition(":")
    factory = PROVIDERS.get(name) if sep else None
    if factory is None:
        known = ", ".join(f"{n}:..." for n in PROVIDERS)
        raise UsageError(f"unknown model '{spec}'; known providers: {known}")
    checked = check_options(name, options or {})
    chosen = (settings or {}).get(name, ProviderSettings())
    if not stream:
        chosen = replace(chosen, stream=False)
    return factory(target, base_url, chosen, checked)


def model_spec_of(provider: Provider, given: str) -> str:
    """The spec to record in a park: the provider's canonical one when it has it."""
    spec = getattr(provider, "spec", None)
    return spec if isinstance(spec, str) else given

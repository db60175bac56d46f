"""Model options (`-o KEY VALUE`): sampling and length settings passed to the provider.

Each is checked here — a known name, a number in range, one the provider takes — so a typo is
a usage error before anything runs, never a silent default or a server's 400. The checked
values are recorded in the park, so a resume asks the model the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from butler_cli.core.errors import UsageError
from butler_cli.core.model_options import OPTIONS as OPTIONS
from butler_cli.core.model_options import OptionValue as OptionValue
from butler_cli.core.model_options import parse_options as parse_options

#: Which options each provider passes on (the scripted model takes and ignores them all).
SUPPORTED: dict[str, frozenset[str]] = {
    "anthropic": frozenset({"temperature", "top_p", "top_k", "max_tokens"}),
    "openai": frozenset({"temperature", "top_p", "max_tokens", "seed"}),
    "ollama": frozenset({"temperature", "top_p", "max_tokens", "seed"}),
    "openai-compatible": frozenset({"temperature", "top_p", "max_tokens", "seed"}),
    "scripted": frozenset(OPTIONS),
}


def check_options(provider: str, options: Mapping[str, OptionValue]) -> dict[str, OptionValue]:
    """The options, if ``provider`` takes every one (else a usage error naming it)."""
    taken = SUPPORTED.get(provider, frozenset())
    for key in options:
        if key not in OPTIONS:
            raise UsageError(f"unknown model option '{key}'; known: {', '.join(OPTIONS)}")
        if key not in taken:
            raise UsageError(f"{provider} does not take the model option '{key}'")
    return dict(options)


#: What a provider is asked for when no `-o` says otherwise. A local model's server has no
#: output limit of its own (a small model can ramble for minutes), so the Chat Completions
#: servers one runs oneself get one; `-o max_tokens N` replaces it. Not recorded in a park:
#: a resume gets the default of its own time.
DEFAULTS: dict[str, dict[str, OptionValue]] = {
    "ollama": {"max_tokens": 4096},
    "openai-compatible": {"max_tokens": 4096},
}

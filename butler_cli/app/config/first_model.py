"""What the butler says when no model is chosen: how to choose a real one in one step, one
example a kind of provider, in commands any installation has (never a file that only a clone
of the repository holds). The chat, `run` and `schedule add` say the same."""

from __future__ import annotations

from butler_cli.app.config.config_file import MODEL_ENV
from butler_cli.core.errors import NoModel

_SET = "butler config set"
_COMPATIBLE = "providers.openai-compatible"

#: Each line under 80 columns, so a terminal folds none; each command line can be pasted into
#: a shell as it is (what follows it is a `#` comment).
DIRECTIONS = (
    "Choose one once, for every chat and run (each line can be pasted as it is):",
    f"{_SET} model openai:gpt-4o-mini          # key: OPENAI_API_KEY",
    f"{_SET} model anthropic:claude-sonnet-4-5  # key: ANTHROPIC_API_KEY",
    f"{_SET} model ollama:qwen2.5               # Ollama on this machine",
    "# llama.cpp, vLLM or LM Studio (a server speaking Chat Completions): both lines",
    f"{_SET} model openai-compatible:local",
    f"{_SET} {_COMPATIBLE}.base_url http://localhost:8080/v1",
    "# a LiteLLM proxy: those two with its URL, and the variable holding its key",
    f"{_SET} {_COMPATIBLE}.api_key_env LITELLM_KEY",
    "A key: export its variable, or keep it with `butler keys set OPENAI_API_KEY`.",
    "`butler models` lists the providers and where each key comes from; --model SPEC",
    f"(or {MODEL_ENV}) chooses for one command; `butler demo` tries it offline.",
)


def no_model() -> NoModel:
    """The error for a command that needs a model when none is chosen."""
    why = f"no --model, no {MODEL_ENV}, none in the config file"
    return NoModel(f"no model chosen: {why}", DIRECTIONS)

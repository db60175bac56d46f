"""The real providers: the wire-format adapters (OpenAI Chat Completions, Anthropic Messages)
and what they share (:mod:`.common`: keys, base URLs, errors, retries).

Loaded only when a remote model is built (the one named lazy point, in
``butler_cli/providers/__init__.py``); the requests are sent by :mod:`.http` with Python's
own HTTP client, without the official SDKs.
"""

"""The real providers: the wire-format adapters (OpenAI Chat Completions, Anthropic Messages)
and what they share (:mod:`.common`: keys, base URLs, errors, retries).

Loaded only when a remote model is built (the one named lazy point, in
``butler_cli/providers/__init__.py``); the requests go over httpx2 (:mod:`.http`), the
client the official SDKs are built on, without importing the SDKs.
"""

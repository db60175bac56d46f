"""`butler serve`: the resident butler — the scheduler, and the approval inbox in a browser.

``app`` (Starlette: token, CSRF, CSP), ``pages`` (server-rendered HTML), ``data`` (what the
page shows), ``decide`` (the one path to a decision), ``server`` (the process). Nothing in
``butler_cli.core`` imports any of it."""

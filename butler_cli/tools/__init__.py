"""Tools: the built-ins (files, clock, commands, HTTP, e-mail) and plug-ins, all loaded through
the ``butler.tools`` entry points (:mod:`butler_cli.tools.loader`); MCP servers come from the
config (``tools.mcp``). Importing the package loads nothing: the config reads
:mod:`butler_cli.tools.redact` before the chat's first prompt."""

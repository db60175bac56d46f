"""A policy whose import fails, as a packaging mistake would make it."""

import acme_module_that_does_not_exist  # noqa: F401

classify = None

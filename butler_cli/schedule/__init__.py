"""Scheduled tasks: a SQLite store (``store``), cron times (``cron``), the runner (``runner``).

No terminal imports here: `butler schedule …` and `butler serve` sit above it."""

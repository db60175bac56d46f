"""The terminal shell: thin typer commands that parse, call one core function, render."""

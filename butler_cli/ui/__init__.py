"""The terminal layer shared by the one-shot commands (``cli/``) and the chat (``repl/``).

Both sit above it; it imports neither. Nothing here imports rich at module import.
"""

"""Long-term memory: entries in SQLite, the frozen block, memory tools, capture, consolidation."""

"""The chat's conversation: turns, compaction, attachments, the saved conversations."""

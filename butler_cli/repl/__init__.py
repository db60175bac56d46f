"""The interactive chat: prompt-toolkit input, rich output, the approval prompt inline."""

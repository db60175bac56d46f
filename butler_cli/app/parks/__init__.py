"""A park's owner and its one view: the hold that decides it, the decisions, what waits."""

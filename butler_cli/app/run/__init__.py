"""A session and its runs: the butler built once; a task or a resumed park inside it."""

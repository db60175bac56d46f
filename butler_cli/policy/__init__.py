"""Finding and loading risk policies (entry points, ``module:attr``, ``file.py:attr``)."""

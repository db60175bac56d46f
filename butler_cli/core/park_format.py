"""The park file format version (spec P1), shared by the state model and the store."""

PARK_VERSION = 1

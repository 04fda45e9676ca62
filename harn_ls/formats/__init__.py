"""Pure readers (and, where Harn writes, writers) for every on-disk Harn format.

Nothing in this package imports pygls or writes to disk.
"""

"""harn-ls: see and steer what Harn agents leave behind in a project."""

__version__ = "0.1.0"

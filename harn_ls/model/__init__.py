"""The model of one Harn project (the Workspace and its parts), built from formats/ and kept by cache/."""

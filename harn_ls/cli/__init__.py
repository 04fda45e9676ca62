"""The command line: `harn-ls inspect|show|recall|watch|cache|hitl|...` and its argument parsing."""

"""Limits on parsing project files: a hostile file is a problem, never a crash of the load.

* TOML (`harn.toml`): Python's `tomllib` recurses once per nested array or inline table, so
  100k nested arrays in a 200 KB file raised RecursionError through the whole load. `load_toml`
  turns that (and any other parse failure) into a reason.
* JSON: orjson stops at 1024 levels by itself (a JSONDecodeError, already a problem everywhere);
  the stdlib `json` used for signature envelopes and cached vectors raises RecursionError, which
  `loads_json` turns into a ValueError with a reason.
* YAML: the hardened loader (formats/skills/yaml_core.py) bounds depth and node count.
* SQLite: values are capped by formats/sqlite_safe.py; JSON inside them goes through orjson.
"""

from __future__ import annotations

import json
from typing import Any

CODE_TOO_DEEP = "HL-LIMIT-001"  # a project file nests deeper than the parser allows: not loaded


def load_toml(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the document, None) or (None, why it was not loaded)."""
    # start-up: tomllib (~4 ms) loads only for a project that has a harn.toml
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "is not valid UTF-8; not loaded"
    except tomllib.TOMLDecodeError as exc:
        return None, f"is not valid TOML ({exc}); not loaded"
    except (RecursionError, MemoryError):
        return None, "nests arrays or tables too deeply to parse; not loaded"


def loads_json(text: str | bytes, **kwargs: Any) -> Any:
    """`json.loads`, with nesting past the interpreter's stack a ValueError instead of RecursionError."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise ValueError("JSON nests too deeply to parse") from None

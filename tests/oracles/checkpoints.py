"""Oracles for Harn's checkpoint naming and `checkpoint_delete` (harn-formats §B).

harn-ls never derives a pipeline name from a script path, and its "forget stage"
action (harn_ls/actions/checkpoints.py) edits the loaded mapping itself, so these
live here, for the tests only.
"""

from __future__ import annotations

import orjson

from harn_ls.formats.checkpoints import render_checkpoint_json


def _rust_file_name(path: str) -> str | None:
    """`Path::file_name`: last normal component; None for `..`, `.`, `/`, ``."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or parts[-1] == "..":
        return None
    return parts[-1]


def _rust_file_stem(name: str) -> str:
    """`Path::file_stem` of a file name: text before the last dot, unless the dot leads."""
    if name == "..":
        return name
    before, dot, after = name.rpartition(".")
    if not dot:
        return name
    return name if before == "" else before


def pipeline_name_for_script(path: str) -> str:
    """The checkpoint file name Harn uses for `harn run <path>` (§B.1).

    Mirrors Harn's pipeline naming (`Path::file_stem` then `sanitize_pipeline_name`).
    """
    name = _rust_file_name(path)
    if name is None:
        return "default"
    stem = _rust_file_stem(name)
    # sanitize_pipeline_name: keep the final component; `.`/`..`/empty -> default
    base = _rust_file_name(stem)
    return base if base else "default"


def without_key(path_text: str, key: str) -> str:
    """The file text after `checkpoint_delete(key)`, as Harn would write it.

    Mirrors Harn's `checkpoint_delete`: it loads the file, drops the key and
    re-saves everything (top-level keys sorted, nested values as loaded), even
    when the key was absent. Raises ValueError when the text is not a JSON
    object: Harn would replace such a file with `{}`, which a "forget stage"
    action must not do.
    """
    try:
        value = orjson.loads(path_text.encode("utf-8"))
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"checkpoint text is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("checkpoint text is not a JSON object")
    value.pop(key, None)
    return render_checkpoint_json(value, sort_nested=False)

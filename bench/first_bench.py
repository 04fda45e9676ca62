"""The first hover / code lens on a file after a server start (issue 14 item 1: fact spans kept
in the state cache between runs).

Each measured run starts a fresh `python -m harn_ls serve` over stdio on a warm state cache,
waits for `recallReady` and then SETTLE_S more (the upkeep after start, which also brings back
the stored spans, has had its turn), opens the busiest source file and sends, as the very first
request about it, either a hover on a fact's line or a code lens request; then the same request
again (another line for the hover), which the spans computed or restored by the first one serve.
A priming run before them computes the file's spans once and stays up long enough for the
server to save them (lsp/span_save.py), as a user's previous session would have.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

SETTLE_S = 2.0  # after recallReady, before the first request
LINGER_S = 7.0  # the priming run stays up this long after its requests (the span store saves 5 s after them)


def _start(client_cls, project: Path, env: dict | None):
    c = client_cls(project, env)
    uri_root = project.as_uri()
    c.request("initialize", {"processId": os.getpid(), "rootUri": uri_root,
                             "workspaceFolders": [{"uri": uri_root, "name": "bench"}],
                             "capabilities": {"workspace": {"configuration": False}}}, timeout=900)
    c.notify("initialized", {})
    while True:
        note = c.wait_note({"harn/status"}, 900)
        if note is None:
            c.close()
            raise RuntimeError("server never reported recallReady")
        if note[1].get("params", {}).get("recallReady"):
            return c


def _one(client_cls, project: Path, rel: str, ranges, env: dict | None, first: str, linger: float = 0.0) -> dict:
    c = _start(client_cls, project, env)
    try:
        time.sleep(SETTLE_S)
        c.drain()
        file_uri = (project / rel).as_uri()
        c.notify("textDocument/didOpen", {"textDocument": {"uri": file_uri, "languageId": "python", "version": 1,
                                                           "text": (project / rel).read_text()}})
        doc = {"textDocument": {"uri": file_uri}}
        (s1, _e1), (s2, _e2) = ranges[len(ranges) // 2], ranges[len(ranges) // 3]
        if first == "hover":
            ms1, res, _ = c.request("textDocument/hover", doc | {"position": {"line": s1 - 1, "character": 4}})
            assert res is not None, "hover on a fact range returned nothing"
            ms2, _res, _ = c.request("textDocument/hover", doc | {"position": {"line": s2 - 1, "character": 4}})
        else:
            ms1, lenses, _ = c.request("textDocument/codeLens", doc)
            assert lenses, "no code lens on the busiest file"
            ms2, _lenses, _ = c.request("textDocument/codeLens", doc)
        time.sleep(linger)
        return {"first_ms": ms1, "again_ms": ms2}
    finally:
        c.close()


def _stats(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def bench_first_after_start(client_cls, project: Path, rel: str, ranges, env: dict | None, starts: int) -> dict:
    """{"hover": {"first_ms": stats, "again_ms": stats}, "code_lens": {...}} over `starts` server starts each."""
    _one(client_cls, project, rel, ranges, env, "hover", linger=LINGER_S)  # priming (a previous session)
    out: dict = {}
    for first, key in (("hover", "hover"), ("lens", "code_lens")):
        runs = [_one(client_cls, project, rel, ranges, env, first) for _ in range(starts)]
        out[key] = {k: _stats([r[k] for r in runs]) for k in ("first_ms", "again_ms")}
    return out


def rows(label: str, res: dict) -> list:
    """Table rows: (label, unit, value, budget) with value a summary dict (median / min / max)."""
    out = []
    for key, what in (("hover", "hover"), ("code_lens", "codeLens")):
        r = res[key]
        out.append((f"first {what} after server start ({label})", "ms", r["first_ms"], "as a warm one"))
        out.append((f"  the same request again, same server ({label})", "ms", r["again_ms"], ""))
    return out

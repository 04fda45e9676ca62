"""Everything a client can ask the server about a project, asked exhaustively and recorded as plain
JSON: hover on every line of every state and source file, lenses (resolved), code actions (with the
line's published diagnostics as context), every harn-state: document the tree, lenses and
hovers link to (with its own lenses and actions), the whole sidebar tree with every page,
workspace symbols, published diagnostics and the status counts. Two servers that answer the same
project the same way give equal sweeps (test_warm_equals_cold.py)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from lsprotocol import converters, types

from harn_ls import contract as P

_CONVERTER = converters.get_converter()
# the places a client sees state in: the sample project's state folders, and its sources (facts on code)
STATE_DIRS = (".harn", ".harn-runs", ".burin", ".claude")
SOURCE_DIRS = ("src", "pipelines")
SOURCE_FILES = ("harn.toml", "README.md")
_STAGED_AT = re.compile(r'("staged_at":)"[^"]*"')
_STATE_URI = re.compile(r"harn-state:/[^\s)\"'\]>]+")
MAX_DOCUMENTS = 400  # a guard, never reached by the sample project (~60 documents)
WORKSPACE_QUERIES = ("", "webhook signature", "deploy", "invoice rounding", "stripe", "ledger", "review", "run")


def plain(obj):
    """An lsprotocol answer (or a dict pygls built from JSON) as plain JSON values."""
    if hasattr(obj, "_asdict"):
        return {k: plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if hasattr(obj, "__attrs_attrs__"):
        return _CONVERTER.unstructure(obj)
    return obj


def _language(path: Path) -> str:
    return {".py": "python", ".ts": "typescript", ".md": "markdown", ".json": "json", ".jsonl": "jsonl",
            ".toml": "toml"}.get(path.suffix, "plaintext")


def project_files(project: Path) -> list[Path]:
    """The text files of the project a client would open: state files and sources."""
    out = []
    for folder in STATE_DIRS + SOURCE_DIRS:
        for p in sorted((project / folder).rglob("*")):
            if p.is_file() and not p.is_symlink():
                try:
                    p.read_text("utf-8")
                except (UnicodeDecodeError, OSError):
                    continue  # (a PNG, a SQLite file: nothing an editor opens as text)
                out.append(p)
    out += [project / f for f in SOURCE_FILES if (project / f).is_file()]
    return out


def open_all(client, files: list[Path]) -> None:
    for p in files:
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=p.as_uri(), language_id=_language(p), version=1, text=p.read_text("utf-8"))))


def _positions(text: str) -> list[types.Position]:
    """Per line: its start, its first non-blank character and the middle of the line (a value)."""
    out = []
    for n, line in enumerate(text.split("\n")):
        cols = {0, len(line) - len(line.lstrip()), len(line) // 2}
        out += [types.Position(line=n, character=c) for c in sorted(cols)]
    return out


def _lens_seen(lens) -> dict:
    """A lens as compared: a fact lens's data starts with its file's number, which each server
    process draws at random (lsp/code_lens.py LensFiles) and only that process resolves."""
    out = plain(lens)
    data = out.get("data")
    if isinstance(data, list) and data and isinstance(data[0], int):
        out["data"] = ["<file number>", *data[1:]]
    return out


def _state_uris(answer) -> set[str]:
    return set(_STATE_URI.findall(json.dumps(answer)))


class Sweep:
    """One sweep's answers, keyed by what was asked (a flat dict: a difference names its question)."""

    def __init__(self, client, project: Path) -> None:
        self.client, self.project = client, project
        self.answers: dict[str, object] = {}
        self.linked: set[str] = set()

    def _key(self, what: str, uri: str, *rest) -> str:
        root = self.project.as_uri()
        return " ".join([what, uri.replace(root, "<project>"), *map(str, rest)])

    def keep(self, key: str, answer) -> None:
        answer = plain(answer)
        self.answers[key] = json.loads(json.dumps(answer).replace(self.project.as_uri(), "<project>")
                                       .replace(str(self.project), "<project>"))
        self.linked |= _state_uris(answer)

    async def file(self, uri: str, text: str | None) -> None:
        c, doc = self.client, types.TextDocumentIdentifier(uri=uri)
        lenses = await c.text_document_code_lens_async(types.CodeLensParams(text_document=doc)) or []
        self.keep(self._key("lenses", uri), [_lens_seen(lens) for lens in lenses])
        for n, lens in enumerate(lenses):
            if lens.command is None:  # (resolved as a client shows it)
                self.keep(self._key("lens-resolved", uri, n), _lens_seen(await c.code_lens_resolve_async(lens)))
        if text is None:
            return
        diags = c.diagnostics.get(uri, [])
        for n in range(text.count("\n") + 1):
            rng = types.Range(start=types.Position(line=n, character=0), end=types.Position(line=n, character=0))
            on_line = [d for d in diags if d.range.start.line <= n <= d.range.end.line]
            self.keep(self._key("actions", uri, n), await c.text_document_code_action_async(types.CodeActionParams(
                text_document=doc, range=rng, context=types.CodeActionContext(diagnostics=on_line))))
        for pos in _positions(text):
            self.keep(self._key("hover", uri, pos.line, pos.character), await c.text_document_hover_async(
                types.HoverParams(text_document=doc, position=pos)))

    async def documents(self) -> None:
        """Every harn-state: document linked from what was answered so far, and those they link to."""
        done: set[str] = set()
        while todo := sorted(self.linked - done):
            for uri in todo:
                done.add(uri)
                assert len(done) <= MAX_DOCUMENTS, "more linked documents than the sample project has"
                try:
                    text = (await self.client.workspace_text_document_content_async(
                        types.TextDocumentContentParams(uri=uri))).text
                except Exception as exc:  # a refused document is an answer too (the same on both)
                    self.keep(self._key("document", uri), {"error": type(exc).__name__})
                    continue
                # (what Accept would write to a workflow's proposal.json is stamped with the time asked)
                self.keep(self._key("document", uri), _STAGED_AT.sub(r'\1"<now>"', text))
                self.linked |= _state_uris(text)
                await self.file(uri, None)
                for n in (0, 1, 2):
                    rng = types.Range(start=types.Position(line=n, character=0), end=types.Position(line=n, character=0))
                    self.keep(self._key("actions", uri, n), await self.client.text_document_code_action_async(
                        types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
                                               context=types.CodeActionContext(diagnostics=[]))))

    async def tree(self) -> None:
        for show_suppressed in (False, True):
            for view in P.TREE_VIEWS:
                await self._subtree(view, None, show_suppressed)

    async def _subtree(self, view: str, parent: str | None, show_suppressed: bool) -> None:
        page = 0
        while page is not None:
            params = {"view": view, "page": page, "showSuppressed": show_suppressed}
            if parent is not None:
                params["parent"] = parent
            result = plain(await self.client.protocol.send_request_async("harn/tree", params))
            self.keep(self._key("tree", view, parent, page, show_suppressed), result)
            for item in result["items"]:
                if item.get("hasChildren"):
                    await self._subtree(view, item["id"], show_suppressed)
            page = result.get("nextPage")

    async def workspace(self) -> None:
        for q in WORKSPACE_QUERIES:
            self.keep(self._key("symbols", q), await self.client.workspace_symbol_async(
                types.WorkspaceSymbolParams(query=q)))


async def wait_for_diagnostics(client, settle: float = 1.0, timeout: float = 20.0) -> None:
    """Until the published diagnostics have not changed for `settle` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    last, since = None, loop.time()
    while loop.time() < end:
        now = json.dumps({u: [plain(d) for d in ds] for u, ds in client.diagnostics.items()}, sort_keys=True)
        if now != last:
            last, since = now, loop.time()
        elif loop.time() - since >= settle:
            return
        await asyncio.sleep(0.05)


async def sweep(client, project: Path) -> dict[str, object]:
    """Open every file of `project`, then ask everything (see the module docstring)."""
    files = project_files(project)
    open_all(client, files)
    await wait_for_diagnostics(client)
    s = Sweep(client, project)
    s.keep("status counts", client.rec.status[-1]["counts"])
    s.keep("diagnostics", {u: sorted(plain(ds), key=json.dumps) for u, ds in sorted(client.diagnostics.items())})
    for p in files:
        await s.file(p.as_uri(), p.read_text("utf-8"))
    await s.tree()
    await s.workspace()
    await s.documents()
    return s.answers

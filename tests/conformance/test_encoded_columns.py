"""Every column the server computes, in the position encoding it negotiated (LSP 3.17 positionEncoding).

One raw JSON-RPC client per encoding (it offers only that one) on a project with non-ASCII text
before every anchored place: a `.harn` line `const café = "🙂"; checkpoint_stage("é𝄞", …)` that a
fact's `file_range` evidence points at, that fact's `harn-state:` document (its heading carries the
claim's emoji and accents), and a SKILL.md whose headings follow emoji. Each feature's characters are
compared with offsets computed here from the Python string by encoding (`reference_units`), never
with the server's own codec:

* the checkpoint code lens starts and ends on `checkpoint_stage`, the fact lens sits on its line;
* the hover's range spans the fact's lines, to the real end of the last one;
* document symbols (a harn-state: document as fetched, a Markdown state file) end where their lines end;
* an incremental `didChange` whose range is in that encoding lands where the client meant it: the
  lenses after it are where the edited text (made here) puts them.
"""

from __future__ import annotations

import json

import pytest

from tests.conformance.bare_client import BareClient
from tests.conformance.test_position_encodings import reference_units
from tests.helpers.fact_lines import fact_line
from tests.lsp.conftest import HARN_DOUBLE, copy_sample

LINE = '  const café = "🙂"; const out = checkpoint_stage("é𝄞", fn() { 1 })'
PIPELINE = "pipeline main(task) {\n" + LINE + "\n  out\n}\n"
CLAIM = "Naïve 🙂 café: the 𝄞 stage is cached"
SKILL = ("---\nname: émoji\nshort: Déploie 🚀\n---\n\n# 🚀 Déploiement rapide\n\nTexte é.\n\n"
         "## 𝄞 Étape deux\n\nFin 🙂 ici\n")
OPTIONS = {"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": True}
CAPS = {"workspace": {"workspaceFolders": True},
        "textDocument": {"hover": {"contentFormat": ["markdown"]}, "codeLens": {},
                         "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                         "synchronization": {}}}


@pytest.fixture(params=["utf-8", "utf-16", "utf-32"])
def session(request, tmp_path):
    encoding = request.param
    project = copy_sample(tmp_path)
    (project / "pipelines" / "encodings.harn").write_text(PIPELINE, encoding="utf-8")
    skill = project / ".harn" / "skills" / "émoji"
    skill.mkdir()
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    fact_id, line = fact_line(CLAIM, "pipelines/encodings.harn:2", LINE.strip(), 0.8)
    with open(project / ".harn/memory/project/facts/events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    c = BareClient.stdio()
    init = c.initialize(project, {**CAPS, "general": {"positionEncodings": [encoding]}}, OPTIONS)
    assert init["result"]["capabilities"]["positionEncoding"] == encoding
    c.wait_notification("harn/status")
    c.encoding, c.project, c.fact_id = encoding, project, fact_id
    yield c
    try:
        c.request("shutdown")
        c.notify("exit")
        assert c.exit_status() == 0
    finally:
        c.close()


def _pos(line: int, character: int) -> dict:
    return {"line": line, "character": character}


def _open(c: BareClient, rel: str, text: str, language: str) -> str:
    uri = (c.project / rel).as_uri()
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}})
    return uri


def _checkpoint_ranges(text: str, encoding: str) -> list[dict]:
    """Where each `checkpoint_stage` call's name is, computed from the text itself."""
    out = []
    for n, line in enumerate(text.split("\n")):
        start = line.find("checkpoint_stage(")
        while start >= 0:
            col = reference_units(line[:start], encoding)
            out.append({"start": _pos(n, col), "end": _pos(n, col + len("checkpoint_stage"))})
            start = line.find("checkpoint_stage(", start + 1)
    return out


def _lenses(c: BareClient, uri: str) -> tuple[list[dict], list[dict]]:
    """(checkpoint lenses, fact lenses) of a document."""
    lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    return ([lens for lens in lenses if isinstance(lens["data"], dict) and lens["data"].get("t") == "ckpt"],
            [lens for lens in lenses if isinstance(lens["data"], list)])


def _hover_range(c: BareClient, uri: str) -> dict:
    """The range of the hover asked at a column after the emoji (in this encoding)."""
    at = reference_units(LINE[:LINE.index("checkpoint")], c.encoding)
    hover = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": _pos(1, at)})["result"]
    assert hover is not None and "Naïve 🙂 café" in hover["contents"]["value"]
    return hover["range"]


def test_lenses_and_hover_after_non_ascii_text(session):
    c = session
    whole_line = {"start": _pos(1, 0), "end": _pos(1, reference_units(LINE, c.encoding))}
    # the hover covers the fact's line to its end: from the file before the client opens it ...
    assert _hover_range(c, (c.project / "pipelines/encodings.harn").as_uri()) == whole_line
    uri = _open(c, "pipelines/encodings.harn", PIPELINE, "harn")
    checkpoints, facts = _lenses(c, uri)
    assert [lens["range"] for lens in checkpoints] == _checkpoint_ranges(PIPELINE, c.encoding)
    assert [lens["range"] for lens in facts] == [{"start": _pos(1, 0), "end": _pos(1, 0)}]
    resolved = c.request("codeLens/resolve", facts[0])["result"]
    assert resolved["command"]["title"].startswith("1 fact · observation")
    # ... and from the client's text once it has: a line it lengthened ends where its text ends
    assert _hover_range(c, uri) == whole_line
    tail = _pos(1, reference_units(LINE, c.encoding))
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": tail, "end": tail}, "text": " // 𝄞 ok"}]})
    assert _hover_range(c, uri) == {"start": _pos(1, 0), "end": _pos(1, reference_units(LINE + " // 𝄞 ok", c.encoding))}


def test_an_incremental_edit_is_read_in_the_negotiated_encoding(session):
    """The client inserts a second call right after `"🙂"; ` (a column in its encoding); the lenses that
    follow are where the edited text puts the two calls: a column read in another encoding would
    insert it elsewhere (inside `café`, or past the first call) and move them."""
    c = session
    uri = _open(c, "pipelines/encodings.harn", PIPELINE, "harn")
    cut = LINE.index("const out")
    inserted = 'checkpoint_stage("ß🙂", fn() { 2 }); '
    at = _pos(1, reference_units(LINE[:cut], c.encoding))
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": [{"range": {"start": at, "end": at}, "text": inserted}]})
    edited = PIPELINE.replace(LINE, LINE[:cut] + inserted + LINE[cut:])
    checkpoints, _ = _lenses(c, uri)
    assert len(checkpoints) == 2
    assert [lens["range"] for lens in checkpoints] == _checkpoint_ranges(edited, c.encoding)
    assert [lens["data"]["stage"] for lens in checkpoints] == ["ß🙂", "é𝄞"]


def _symbol_ranges(symbols: list[dict]) -> list[tuple[str, dict, dict]]:
    out = []
    for s in symbols:
        out.append((s["name"], s["range"], s["selectionRange"]))
        out += _symbol_ranges(s.get("children") or [])
    return out


def _expected_ranges(text: str, headings: list[tuple[str, int, int]], encoding: str) -> list[tuple[str, dict, dict]]:
    """(name, whole section, heading line) per heading given as (name, heading line, last line)."""
    lines = text.split("\n")
    return [(name, {"start": _pos(line, 0), "end": _pos(last, reference_units(lines[last], encoding))},
             {"start": _pos(line, 0), "end": _pos(line, reference_units(lines[line], encoding))})
            for name, line, last in headings]


def test_document_symbols_of_a_harn_state_document_end_where_its_lines_end(session):
    c = session
    uri = f"harn-state:/facts/{c.fact_id}.md"
    text = c.request("workspace/textDocumentContent", {"uri": uri})["result"]["text"]
    symbols = c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})["result"]
    lines = text.split("\n")
    assert lines[0] == f"# Fact — {CLAIM}"
    heads = [n for n, line in enumerate(lines) if line.startswith("#")]
    last = max(n for n, line in enumerate(lines) if line.strip())
    expected = [(lines[0][2:], 0, last)] + [
        (lines[h].lstrip("#").strip(), h, (heads[i + 2] - 1 if i + 2 < len(heads) else last))
        for i, h in enumerate(heads[1:])]
    assert _symbol_ranges(symbols) == _expected_ranges(text, expected, c.encoding)


def test_document_symbols_of_a_markdown_state_file_end_where_its_lines_end(session):
    c = session
    rel = ".harn/skills/émoji/SKILL.md"
    lines = SKILL.split("\n")
    top, second = lines.index("# 🚀 Déploiement rapide"), lines.index("## 𝄞 Étape deux")
    last = lines.index("Fin 🙂 ici")
    expected = [("🚀 Déploiement rapide", top, last), ("𝄞 Étape deux", second, last)]
    for opened in (False, True):  # read from disk, then from the client's open document
        uri = _open(c, rel, SKILL, "markdown") if opened else (c.project / rel).as_uri()
        symbols = c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})["result"]
        assert _symbol_ranges(symbols) == _expected_ranges(SKILL, expected, c.encoding), json.dumps(symbols)

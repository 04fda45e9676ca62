"""Transcript values (harn-formats §G.2) and `llm_transcript.jsonl` turn logs (§G.4).

Transcripts are never files of their own: they are values embedded in run
records, worker snapshots and session events. `transcript_from_value` turns
one such value into a tolerant view — every missing or wrong-typed field is
a Problem and a default, so a viewer can still show the rest.

`read_llm_transcript` reads the append-only per-call log through `JsonlTail`
(bounded memory, torn last line held back) and groups lines into provider
calls the way Harn's portal replays them: in file order, keyed by `call_id`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

from harn_ls.formats.json_raw import RawArray
from harn_ls.formats.jsonl import JsonlTail
from harn_ls.formats.problems import Problem, Severity
from harn_ls.formats.transcript_summary import TranscriptSummary
from harn_ls.util.json_types import JsonArray, JsonObject, JsonValue
from harn_ls.util.safe_read import is_under

TRANSCRIPT_TYPE = "transcript"
TRANSCRIPT_VERSION = 2
VISIBILITIES = ("public", "internal", "private")

CODE_NOT_TRANSCRIPT = "HL-TR-001"
CODE_BAD_FIELD = "HL-TR-002"
CODE_VERSION = "HL-TR-003"
CODE_LLM_NO_TYPE = "HL-TR-004"
CODE_RAW_CAPTURE = "HL-TR-005"

# Block types rendered as `<type:LABEL>` in an event's text (§G.2).
_LABELLED_BLOCKS = ("tool_call", "tool_result", "image", "file")
# Block types Harn drops from rendered text: private chain-of-thought.
_HIDDEN_BLOCKS = ("reasoning",)


def default_block_visibility(role: str | None) -> str:
    # Tool results are plumbing, not conversation: Harn marks them internal.
    return "internal" if role == "tool_result" else "public"


def normalize_block(block: JsonValue, role: str | None) -> JsonObject:
    """A block as Harn sees it: non-dicts become one text block; type/visibility defaulted."""
    if not isinstance(block, dict):
        block = {"type": "text", "text": block if isinstance(block, str) else str(block)}
    out = dict(block)
    if not isinstance(out.get("type"), str):
        out["type"] = "text"
    if out.get("visibility") not in VISIBILITIES:
        out["visibility"] = default_block_visibility(role)
    return out


def _block_label(block: JsonObject) -> str:
    for name in ("name", "title", "path", "tool_name", "asset_id", "id"):
        value = block.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def render_block(block: JsonObject) -> str | None:
    """One block's text in Harn's rendering; None when the block is dropped."""
    kind = block.get("type", "text")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else ""
    if kind in _HIDDEN_BLOCKS:
        return None
    if kind in _LABELLED_BLOCKS:
        return f"<{kind}:{_block_label(block)}>"
    return f"<{kind}>"


def render_blocks(blocks: list[JsonObject], *, hide_private: bool = False) -> str:
    """Text of a block list: Harn's event `text` rule, optionally also hiding private blocks."""
    texts = (render_block(b) for b in blocks if not (hide_private and b.get("visibility") == "private"))
    return " ".join(t for t in texts if t is not None)


def blocks_visibility(blocks: list[JsonObject], role: str | None) -> str:
    """Visibility of a message-derived event: public beats internal beats the role default."""
    seen = {b.get("visibility") for b in blocks}
    if "public" in seen:
        return "public"
    if "internal" in seen:
        return "internal"
    return default_block_visibility(role)


@dataclass(slots=True)
class CompactionInfo:
    """Metadata of a `compaction` event (fields are optional; Harn writes them per mode)."""

    mode: str | None = None
    strategy: str | None = None
    engine_strategy: str | None = None
    archived_messages: int | None = None
    estimated_tokens_before: int | None = None
    estimated_tokens_after: int | None = None
    keep_first: int | None = None
    keep_last: int | None = None
    raw: JsonObject = field(default_factory=dict)

    @classmethod
    def from_metadata(cls, meta: JsonValue) -> CompactionInfo:
        meta = meta if isinstance(meta, dict) else {}

        def s(name: str) -> str | None:
            v = meta.get(name)
            return v if isinstance(v, str) else None

        def i(name: str) -> int | None:
            v = meta.get(name)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        return cls(s("mode"), s("strategy"), s("engine_strategy"), i("archived_messages"),
                   i("estimated_tokens_before"), i("estimated_tokens_after"), i("keep_first"), i("keep_last"), dict(meta))

    @property
    def tokens_saved(self) -> int | None:
        if self.estimated_tokens_before is None or self.estimated_tokens_after is None:
            return None
        return self.estimated_tokens_before - self.estimated_tokens_after


@dataclass(slots=True)
class TranscriptEvent:
    """View of one event. `text` is what Harn stored; `visible_text` is recomputed from blocks."""

    index: int
    id: str | None
    kind: str
    role: str | None
    visibility: str
    text: str
    blocks: list[JsonObject]
    metadata: JsonObject | None
    raw: JsonObject

    @property
    def harn_text(self) -> str:
        """Harn's own rendering of the blocks (reasoning dropped); falls back to stored text."""
        return render_blocks(self.blocks) if self.blocks else self.text

    @property
    def visible_text(self) -> str:
        """Text safe to show by default: reasoning and private blocks hidden."""
        if self.visibility == "private":
            return ""
        return render_blocks(self.blocks, hide_private=True) if self.blocks else self.text

    @property
    def is_private(self) -> bool:
        return self.visibility == "private"

    @property
    def compaction(self) -> CompactionInfo | None:
        return CompactionInfo.from_metadata(self.metadata) if self.kind == "compaction" else None


@dataclass(slots=True)
class TranscriptAsset:
    """An asset (image, file) a transcript refers to."""

    index: int
    id: str | None
    kind: str
    visibility: str
    name: str | None
    mime_type: str | None
    storage_path: str | None
    raw: JsonObject


@dataclass(slots=True)
class Transcript:
    """View of a transcript value: its messages, events and assets."""

    id: str | None
    source: str  # file path, or 'run:<id>' / 'run:<id>/stage:<id>' / 'worker:<id>' for embedded values
    messages: JsonArray | RawArray  # (RawArray: a big record's, read in parts: see formats/runs)
    events: list[TranscriptEvent] | LazyEvents
    assets: list[TranscriptAsset]
    summary: str | None
    metadata: JsonObject | None
    state: str | None
    version: int | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def budget(self) -> JsonValue:
        # Seed-only `metadata.transcript_budget`; shown verbatim (§G.2 [PROP]).
        return self.metadata.get("transcript_budget") if isinstance(self.metadata, dict) else None

def _typed(value: JsonObject, name: str, types: tuple[type, ...], problems: list[Problem], path: str, line: int,
           where: str) -> JsonValue:
    v = value.get(name)
    if v is None:
        return None
    if isinstance(v, bool) and bool not in types or not isinstance(v, types):
        problems.append(Problem(path, line, CODE_BAD_FIELD,
            f"{where}: field {name!r} is {type(v).__name__}, expected {'/'.join(t.__name__ for t in types)}; shown as absent",
            Severity.WARNING))
        return None
    return v


def _event_from(raw: JsonValue, index: int, problems: list[Problem], path: str, line: int, where: str) -> TranscriptEvent | None:
    if not isinstance(raw, dict):
        problems.append(Problem(path, line, CODE_BAD_FIELD, f"{where}: events[{index}] is not an object; skipped",
                                Severity.WARNING))
        return None
    here = f"{where}: events[{index}]"
    role = _typed(raw, "role", (str,), problems, path, line, here)
    kind = _typed(raw, "kind", (str,), problems, path, line, here) or "message"
    blocks_raw = raw.get("blocks")
    if blocks_raw is not None and not isinstance(blocks_raw, list):
        problems.append(Problem(path, line, CODE_BAD_FIELD, f"{here}: 'blocks' is not a list; treated as one text block",
                                Severity.WARNING))
        blocks_raw = [blocks_raw]
    blocks = [normalize_block(b, role) for b in (blocks_raw or [])]
    text = _typed(raw, "text", (str,), problems, path, line, here)
    if text is None:
        text = render_blocks(blocks)
    visibility = raw.get("visibility")
    if visibility not in VISIBILITIES:
        if visibility is not None:
            problems.append(Problem(path, line, CODE_BAD_FIELD,
                f"{here}: unknown visibility {visibility!r}; derived from its blocks", Severity.WARNING))
        visibility = blocks_visibility(blocks, role) if blocks else default_block_visibility(role)
    metadata = _typed(raw, "metadata", (dict,), problems, path, line, here)
    return TranscriptEvent(index, _typed(raw, "id", (str,), problems, path, line, here), kind, role, visibility,
                           text, blocks, metadata, raw)


def _asset_from(raw: JsonValue, index: int, problems: list[Problem], path: str, line: int, where: str) -> TranscriptAsset | None:
    if isinstance(raw, str):
        # Harn accepts a bare path and normalizes it to {storage: {path}}.
        raw = {"storage": {"path": raw}}
    if not isinstance(raw, dict):
        problems.append(Problem(path, line, CODE_BAD_FIELD, f"{where}: assets[{index}] is not an object; skipped",
                                Severity.WARNING))
        return None
    here = f"{where}: assets[{index}]"
    storage = raw.get("storage")
    storage_path = storage.get("path") if isinstance(storage, dict) and isinstance(storage.get("path"), str) else None
    visibility = v if (v := raw.get("visibility")) in VISIBILITIES else "internal"
    return TranscriptAsset(index, _typed(raw, "id", (str,), problems, path, line, here),
                           _typed(raw, "kind", (str,), problems, path, line, here) or "blob", visibility,
                           _typed(raw, "name", (str,), problems, path, line, here),
                           _typed(raw, "mime_type", (str,), problems, path, line, here), storage_path, raw)


def event_clean(raw: JsonValue) -> bool:
    """True when `_event_from` would accept this event without a problem (every checked field
    absent, null or of its type; a known or absent visibility): then counting it is enough."""
    if type(raw) is not dict:
        return False
    get = raw.get
    role, kind, text, ident = get("role"), get("kind"), get("text"), get("id")
    blocks, metadata, visibility = get("blocks"), get("metadata"), get("visibility")
    return ((role is None or isinstance(role, str)) and (kind is None or isinstance(kind, str))
            and (text is None or isinstance(text, str)) and (ident is None or isinstance(ident, str))
            and (blocks is None or isinstance(blocks, list)) and (metadata is None or isinstance(metadata, dict))
            and (visibility is None or visibility in VISIBILITIES))


class LazyEvents(Sequence[TranscriptEvent]):
    """A transcript's events over a big record's bytes (json_raw.RawArray): each TranscriptEvent
    is built when asked for and not kept, so a page of a 10 MB transcript never holds them all.
    `kept`: the array indexes `_event_from` accepted (its problems were collected then)."""

    __slots__ = ("_raw", "_kept", "_path", "_line", "_where")

    def __init__(self, raw: RawArray, kept: list[int], path: str, line: int, where: str) -> None:
        self._raw, self._kept, self._path, self._line, self._where = raw, kept, path, line, where

    def __len__(self) -> int:
        return len(self._kept)

    @overload
    def __getitem__(self, j: int) -> TranscriptEvent: ...

    @overload
    def __getitem__(self, j: slice) -> list[TranscriptEvent]: ...

    def __getitem__(self, j: int | slice) -> TranscriptEvent | list[TranscriptEvent]:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self._kept)))]
        i = self._kept[j]
        # a kept index is one _event_from accepted: never None (no cast: this runs per event shown)
        return _event_from(self._raw[i], i, [], self._path, self._line, self._where)  # type: ignore[return-value]

    def __iter__(self) -> Iterator[TranscriptEvent]:
        for i, value in zip(self._kept, self._raw.items(self._kept), strict=True):
            # a kept index is one _event_from accepted: never None (no cast: this runs per event)
            yield _event_from(value, i, [], self._path, self._line, self._where)  # type: ignore[misc]


def _read_transcript(value: JsonObject, source: str, path: str | None, line: int, full: bool) -> tuple[Transcript, int]:
    """The view of a transcript value and how many events it has; with `full` False the events are
    only counted (the view's `events` is empty). Problems come in the same order either way."""
    ppath = path or source
    problems: list[Problem] = []
    where = f"transcript {source}"
    if value.get("_type") not in (None, TRANSCRIPT_TYPE):
        problems.append(Problem(ppath, line, CODE_NOT_TRANSCRIPT,
            f"{where}: _type is {value.get('_type')!r}, not 'transcript'; read as a transcript anyway", Severity.WARNING))
    version = _typed(value, "version", (int,), problems, ppath, line, where)
    if version is not None and version != TRANSCRIPT_VERSION:
        problems.append(Problem(ppath, line, CODE_VERSION,
            f"{where}: version {version}, this viewer knows version {TRANSCRIPT_VERSION}; fields may be missing", Severity.INFO))

    def seq(name: str) -> JsonArray | RawArray:
        v = value.get(name)
        if v is None:
            return []
        if not isinstance(v, (list, RawArray)):
            problems.append(Problem(ppath, line, CODE_BAD_FIELD,
                                    f"{where}: {name!r} is {type(v).__name__}, not a list; shown empty", Severity.WARNING))
            return []
        return v

    messages = seq("messages")
    events: list[TranscriptEvent] | LazyEvents = []
    raw_events = seq("events")
    if isinstance(raw_events, RawArray):
        # a clean event has no problem and is kept: only the others are parsed again (in order, for
        # their problems); their record's read already asked `event_clean` of each (formats/runs)
        maybe = raw_events.unclean if raw_events.unclean is not None else range(len(raw_events))
        dropped = {i for i, r in zip(maybe, raw_events.items(maybe), strict=True)
                   if _event_from(r, i, problems, ppath, line, where) is None}
        if full:  # each kept only as its index
            kept = [i for i in range(len(raw_events)) if i not in dropped]
            events = LazyEvents(raw_events, kept, ppath, line, where)
        count = len(raw_events) - len(dropped)
    elif full:
        events = [e for i, r in enumerate(raw_events) if (e := _event_from(r, i, problems, ppath, line, where)) is not None]
        count = len(events)
    else:  # a clean event is only counted; any other goes through _event_from for its problems
        count = sum(1 for i, r in enumerate(raw_events)
                    if event_clean(r) or _event_from(r, i, problems, ppath, line, where) is not None)
    assets = [a for i, r in enumerate(seq("assets")) if (a := _asset_from(r, i, problems, ppath, line, where)) is not None]
    return Transcript(id=_typed(value, "id", (str,), problems, ppath, line, where), source=source, messages=messages,
                      events=events, assets=assets, summary=_typed(value, "summary", (str,), problems, ppath, line, where),
                      metadata=_typed(value, "metadata", (dict,), problems, ppath, line, where),
                      state=_typed(value, "state", (str,), problems, ppath, line, where), version=version,
                      problems=problems), count


def transcript_from_value(value: JsonValue, source: str, *, path: str | None = None, line: int = 0) -> Transcript | None:
    """View of a transcript value; None when `value` is not an object at all.

    `path`/`line` locate Problems (defaults to `source`, whole file).
    """
    return _read_transcript(value, source, path, line, True)[0] if isinstance(value, dict) else None


def transcript_summary_from_value(value: JsonValue, source: str, *, path: str | None = None,
                                  line: int = 0) -> tuple[TranscriptSummary, list[Problem]] | None:
    """The counts and problems `transcript_from_value` would give, without building its events
    (a cold load only lists transcripts); None when `value` is not an object at all."""
    if not isinstance(value, dict):
        return None
    t, n_events = _read_transcript(value, source, path, line, False)
    return TranscriptSummary(t.id, len(t.messages), n_events, len(t.assets)), t.problems


# -- llm_transcript.jsonl ------------------------------------------------------

LLM_LINE_TYPES = ("system_prompt", "tool_schemas", "message", "routing_decision", "provider_call_request",
                  "provider_call_response", "interpreted_response", "provider_raw_capture")


@dataclass(slots=True)
class LlmLine:
    """One line of an llm_transcript.jsonl."""

    line_no: int
    type: str  # one of LLM_LINE_TYPES, or whatever an unknown line says (kept as-is)
    value: JsonObject
    known: bool

    @property
    def call_id(self) -> str | None:
        v = self.value.get("call_id")
        return v if isinstance(v, str) else None

    @property
    def iteration(self) -> int | None:
        v = self.value.get("iteration")
        return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(slots=True)
class RawCapture:
    """A `provider_raw_capture` pointer to a sidecar file written next to the log."""

    line_no: int
    capture: str | None  # e.g. "request"
    rel_path: str | None
    path: str | None  # absolute; None when the pointer escapes the transcript directory
    exists: bool


@dataclass(slots=True)
class LlmStep:
    """One provider call, rebuilt by replaying lines in order."""

    call_id: str | None
    iteration: int | None
    system_prompt_hash: str | None = None
    tool_schemas_hash: str | None = None
    messages: list[JsonObject] = field(default_factory=list)  # message lines seen since the previous call
    routing: JsonObject | None = None
    request: JsonObject | None = None
    response: JsonObject | None = None
    interpreted: JsonObject | None = None


@dataclass(slots=True)
class LlmTranscript:
    """An llm_transcript.jsonl replayed into provider calls."""

    path: str
    lines: list[LlmLine]
    steps: list[LlmStep]
    raw_captures: list[RawCapture]
    problems: list[Problem]

def _raw_capture(path: str, line_no: int, value: JsonObject, problems: list[Problem]) -> RawCapture:
    rel = value.get("path") if isinstance(value.get("path"), str) else None
    capture = value.get("capture") if isinstance(value.get("capture"), str) else None
    if rel is None:
        problems.append(Problem(path, line_no, CODE_RAW_CAPTURE, "provider_raw_capture line without a string 'path'",
                                Severity.WARNING))
        return RawCapture(line_no, capture, None, None, False)
    base = os.path.dirname(os.path.abspath(path))
    target = os.path.normpath(os.path.join(base, rel))
    # Pointers are relative to the log's directory; never follow one out of it.
    if os.path.isabs(rel) or not is_under(target, base):
        problems.append(Problem(path, line_no, CODE_RAW_CAPTURE,
            f"raw capture pointer {rel!r} leaves the transcript directory; not followed", Severity.WARNING))
        return RawCapture(line_no, capture, rel, None, False)
    exists = os.path.isfile(target)
    if not exists:
        problems.append(Problem(path, line_no, CODE_RAW_CAPTURE, f"raw capture {rel!r} does not exist (yet)", Severity.INFO))
    return RawCapture(line_no, capture, rel, target, exists)


def read_llm_transcript(path: str, *, tail: JsonlTail | None = None) -> LlmTranscript:
    """Read a whole `llm_transcript.jsonl`. Never raises; a torn last line is an INFO problem."""
    tail = tail or JsonlTail(path)
    lines: list[LlmLine] = []
    problems: list[Problem] = []
    captures: list[RawCapture] = []
    batch = tail.read_new()
    for jl in batch.lines:
        if jl.problem is not None:
            problems.append(jl.problem)
            continue
        value: JsonObject = jl.value  # type: ignore[assignment]  # a line without a problem holds its object
        kind = value.get("type")
        if not isinstance(kind, str):
            problems.append(Problem(path, jl.line_no, CODE_LLM_NO_TYPE, "line has no string 'type'; kept as unknown",
                                    Severity.WARNING))
            kind = "?"
        line = LlmLine(jl.line_no, kind, value, kind in LLM_LINE_TYPES)
        lines.append(line)
        if kind == "provider_raw_capture":
            captures.append(_raw_capture(path, jl.line_no, value, problems))
    torn = tail.torn_problem()
    if torn is not None:
        problems.append(torn)
    return LlmTranscript(path, lines, build_steps(lines), captures, problems)


def build_steps(lines: list[LlmLine]) -> list[LlmStep]:
    """Group lines into provider calls: context lines accumulate until a call claims them."""
    steps: list[LlmStep] = []
    by_call: dict[str, LlmStep] = {}
    prompt_hash: str | None = None
    schemas_hash: str | None = None
    pending_messages: list[JsonObject] = []
    pending_routing: JsonObject | None = None
    for line in lines:
        v = line.value
        if line.type == "system_prompt":
            prompt_hash = v.get("hash") if isinstance(v.get("hash"), str) else prompt_hash
        elif line.type == "tool_schemas":
            schemas_hash = v.get("hash") if isinstance(v.get("hash"), str) else schemas_hash
        elif line.type == "message":
            pending_messages.append(v)
        elif line.type in ("routing_decision", "provider_call_request", "provider_call_response", "interpreted_response"):
            call_id = line.call_id
            step = by_call.get(call_id) if call_id is not None else None
            if step is None:
                if line.type == "routing_decision" and call_id is None:
                    pending_routing = v
                    continue
                step = LlmStep(call_id, line.iteration, prompt_hash, schemas_hash, pending_messages, pending_routing)
                pending_messages, pending_routing = [], None
                steps.append(step)
                if call_id is not None:
                    by_call[call_id] = step
            if line.type == "routing_decision":
                step.routing = v
            elif line.type == "provider_call_request":
                step.request = v
            elif line.type == "provider_call_response":
                step.response = v
            else:
                step.interpreted = v
    return steps

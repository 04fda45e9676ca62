"""The state cache's project-wide parts, as rows: problems, the slim run-record listing (validated
per run record file by `ProjectCache`), and the pattern-learning projection (tied to the exact cached
state of its namespace). Data only, decoded with orjson; a row that does not fit raises, and the
caller then builds the part again from the project."""

from __future__ import annotations

import os
import stat
from dataclasses import fields
from typing import TYPE_CHECKING

import orjson

from harn_ls.cache.rows import CacheInvalid
from harn_ls.formats import checkpoints as ckpt_fmt
from harn_ls.formats import pattern_learning as pl_fmt
from harn_ls.formats import runs as runs_fmt
from harn_ls.formats.problems import Problem, Severity
from harn_ls.formats.transcript_summary import TranscriptSummary
from harn_ls.util.safe_read import stat_stamp

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Protocol

    from harn_ls.formats.memory_record import MemoryRecord
    from harn_ls.util.json_types import JsonValue

    class _Linked(Protocol):
        """A pattern-learning view: linked to its memory record (None: none, or not linked)."""

        record: MemoryRecord | None


def _problem_row(p: Problem) -> list:
    return [p.path, p.line, p.code, p.message, p.severity.value, p.column, p.end_line]


def _problem_from_row(row: list) -> Problem:
    path, line, code, message, severity, column, end_line = row
    return Problem(path, line, code, message, Severity(severity), column, end_line)


# ----------------------------------------------------------------------------- facts
def _fact_row(f) -> list:
    ev = [[e.kind, e.ref, e.snippet, None if e.range is None else [e.range.path, e.range.start, e.range.end]]
          for e in f.evidence]
    return [f.id, f.kind, f.claim, f.confidence, ev, f.provenance, f.asserted_at, f.valid_until, f.record_id,
            f.memory_key, f.stored_at, f.line_no]


def _facts_from_rows(rows: list, ns: str) -> list:
    """[(seq, Fact or None, problems)] of a namespace's cached fact rows (checked with its meta payload)."""
    return [(seq, None if f is None else _fact_from_row(f, ns), [_problem_from_row(p) for p in probs])
            for seq, f, probs in rows]


def _fact_from_row(row: list, ns: str):
    # start-up: formats.facts (~14 ms) loads only when cached facts are decoded; a warm recall never does
    from harn_ls.formats.facts import Evidence, Fact, FileRange

    fid, kind, claim, conf, ev, prov, asserted, valid, rid, key, stored_at, line_no = row
    evidence = tuple(Evidence(k, ref, snip, None if rng is None else FileRange(*rng)) for k, ref, snip, rng in ev)
    return Fact(fid, kind, claim, conf, evidence, prov, asserted, valid, ns, rid, key, stored_at, line_no)


# ----------------------------------------------------------------------------- run records
# A run's cached entry is [validator, values, details]: `values` are RunRecord's fields in declaration
# order up to the last one cached (turned into the positional arguments by one list copy: keyword
# arguments cost ~50% more over 1,000 run records), with None where the stages and the usage go;
# `details` is the JSON text of [stages, usage], decoded only for a load that shows them (a one-shot
# `inspect --json` never does: over 1,000 records they were most of the payload's decoding).
_RUN_ORDER = tuple(f.name for f in fields(runs_fmt.RunRecord))
_RUN_ARGS = _RUN_ORDER[: _RUN_ORDER.index("playground_job") + 1]
_RUN_AT_STAGES, _RUN_AT_USAGE = _RUN_ARGS.index("stages"), _RUN_ARGS.index("usage")
_RUN_AT_TRANSCRIPTS, _RUN_AT_PROBLEMS = _RUN_ARGS.index("transcripts"), _RUN_ARGS.index("problems")
_RUN_DETAILS = (_RUN_AT_STAGES, _RUN_AT_USAGE)


def _run_row(run) -> list:
    """[values, details] of a slim run record (see above)."""
    values = [None if i in _RUN_DETAILS else getattr(run, name) for i, name in enumerate(_RUN_ARGS)]
    values[_RUN_AT_PROBLEMS] = [_problem_row(p) for p in run.problems]
    values[_RUN_AT_TRANSCRIPTS] = [[t.id, t.message_count, t.event_count, t.asset_count] for t in run.transcripts]
    return [values, orjson.dumps([run.stages, run.usage]).decode("utf-8")]


def _run_from_row(values: list, details: str | None):
    """(RunRecord, transcript summaries) of a cached entry's values; its stages and usage from
    `details` (None: left empty, for a load that never shows them). Raises on a row that does not fit."""
    if type(values) is not list or len(values) != len(_RUN_ARGS):
        raise ValueError("run row does not fit")
    summaries = [TranscriptSummary(*t) for t in values[_RUN_AT_TRANSCRIPTS]]
    args = values.copy()
    args[_RUN_AT_TRANSCRIPTS] = summaries
    args[_RUN_AT_PROBLEMS] = [_problem_from_row(p) for p in args[_RUN_AT_PROBLEMS]]
    if details is None:
        args[_RUN_AT_STAGES], args[_RUN_AT_USAGE] = [], {}
    else:
        stages, usage = orjson.loads(details)
        if type(stages) is not list or type(usage) is not dict:
            raise ValueError("run details do not fit")
        args[_RUN_AT_STAGES], args[_RUN_AT_USAGE] = stages, usage
    return runs_fmt.RunRecord(*args), summaries


# ----------------------------------------------------------------------------- pattern learning
def _field_names(cls) -> tuple[str, ...]:
    """A view's fields as the payload stores them: all but its link to the memory record."""
    return tuple(f.name for f in fields(cls) if f.name != "record")


_OBSERVATION = _field_names(pl_fmt.Observation)
_PROPOSAL = _field_names(pl_fmt.Proposal)
_STATE = _field_names(pl_fmt.PatternState)


def _values(obj, names: tuple[str, ...]) -> list:
    return [getattr(obj, n) for n in names]


def _views(cls, names: tuple[str, ...], rows: list) -> list:
    """The views of `rows` (field values in `names` order), built positionally: the fields before
    `record` from the row, then None for the record, then the rest (~2x faster than keywords)."""
    at = [f.name for f in fields(cls)].index("record")
    n = len(names)
    out = []
    for row in rows:
        if type(row) is not list or len(row) != n:
            raise ValueError(f"{cls.__name__}: row does not fit")
        out.append(cls(*row[:at], None, *row[at:]))
    return out


def pattern_payload(pattern: pl_fmt.PatternLearning) -> bytes:
    """The projection, every field but the memory-record links (raises TypeError on a value orjson
    cannot write: then the projection is not cached)."""
    state = pattern.state
    state_at = next((i for i, st in enumerate(pattern.state_records) if st is state), None)
    doc = {
        "fields": [_OBSERVATION, _PROPOSAL, _STATE],
        "observations": [_values(o, _OBSERVATION) for o in pattern.observations],
        "pending": [_values(p, _PROPOSAL) for p in pattern.pending],
        "state_records": [_values(st, _STATE) for st in pattern.state_records],
        # the chosen state: one of the state records, or the default (none visible)
        "state": state_at if state_at is not None else _values(state, _STATE),
        "problems": [_problem_row(p) for p in pattern.problems],
        "counts": pattern.counts,
        # each view's memory record, by its sequence in the namespace: relinked on restore (an Accept
        # reads the record's value, the proposal-at-line lookup its line)
        "links": [[v.record.seq if v.record is not None else None for v in views] for views in
                  (pattern.observations, pattern.pending, pattern.state_records)],
        "rejected": [r.seq for r in pattern.rejected],
    }
    return orjson.dumps(doc)


def _relink(views: Sequence[_Linked], seqs: JsonValue, record_of: Callable[[int], MemoryRecord]) -> None:
    if type(seqs) is not list or len(seqs) != len(views):
        raise ValueError("links do not fit")
    for view, seq in zip(views, seqs, strict=True):
        view.record = None if seq is None else record_of(seq)


def pattern_from_payload(data: bytes, record_of=None) -> pl_fmt.PatternLearning:
    """The projection as `pattern_payload` kept it; with `record_of` (seq -> the namespace's record
    of that sequence) each view linked to its memory record again and the rejected records back,
    else without them. Raises ValueError, TypeError, KeyError on anything that does not fit."""
    doc = orjson.loads(data)
    if doc["fields"] != [list(_OBSERVATION), list(_PROPOSAL), list(_STATE)]:
        raise ValueError("pattern views changed shape")
    out = pl_fmt.PatternLearning()
    out.observations = _views(pl_fmt.Observation, _OBSERVATION, doc["observations"])
    out.pending = _views(pl_fmt.Proposal, _PROPOSAL, doc["pending"])
    out.state_records = _views(pl_fmt.PatternState, _STATE, doc["state_records"])
    state = doc["state"]
    if type(state) is int:
        if not 0 <= state < len(out.state_records):
            raise ValueError("bad state index")
        out.state = out.state_records[state]
    else:
        out.state = _views(pl_fmt.PatternState, _STATE, [state])[0]
    out.problems = [_problem_from_row(p) for p in doc["problems"]]
    counts, links, rejected = doc["counts"], doc["links"], doc["rejected"]
    if not isinstance(counts, dict) or type(links) is not list or len(links) != 3 or type(rejected) is not list:
        raise ValueError("bad counts")
    out.counts = counts
    if record_of is not None:
        groups: tuple[Sequence[_Linked], ...] = (out.observations, out.pending, out.state_records)
        for views, seqs in zip(groups, links, strict=True):  # (links: checked to hold 3)
            _relink(views, seqs, record_of)
        out.rejected = [record_of(seq) for seq in rejected]
    return out


def _entry_key(e: dict) -> str | None:
    """What names one written namespace entry: its meta payload's file name (unique, never rewritten)."""
    meta = e.get("meta")
    return meta.get("name") if isinstance(meta, dict) and isinstance(meta.get("name"), str) else None


def restore_pattern(cache, ns: str, path: str, link: bool = False) -> pl_fmt.PatternLearning | None:
    """The cached projection of namespace `ns` of a ProjectCache, when `ns` was restored unchanged this
    run from the very entry the projection was made of: without record links, or with `link` linked
    to the records of the cached rows (read one by one: the namespace itself stays unbuilt)."""
    desc = cache.manifest.get("pattern")
    e = cache.entry(ns, path)
    if not isinstance(desc, dict) or e is None or cache.hits.get(ns) != "same" or ns in cache.damaged \
            or desc.get("ns") != ns or desc.get("of") != _entry_key(e):
        return None
    record_of = None
    if link:
        reader = cache.readers.get(ns)
        if reader is None:
            return None
        if reader.positions() is None:
            reader.seqs()  # (the row index: single rows are read without decoding them all)
        record_of = reader.record
    try:
        return pattern_from_payload(cache.read_payload(desc.get("payload")), record_of)
    except (CacheInvalid, OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
        return None


def save_pattern(cache, ws, out: dict, token: str) -> tuple[dict | None, bool]:
    """(the manifest's "pattern" entry, whether a payload was written) for a ProjectCache save whose new
    namespace entries are `out`: the previous one while it still names the pattern namespace's entry
    being saved; else the workspace's projection, when it was made of that namespace exactly as
    saved (the same object at the same event count); else none."""
    ns = pl_fmt.NAMESPACE
    e = out.get(ns)
    key = _entry_key(e) if e is not None else None
    if key is None:
        return None, False
    prev = cache.manifest.get("pattern")
    if isinstance(prev, dict) and prev.get("ns") == ns and prev.get("of") == key:
        return prev, False
    made_of = getattr(ws, "_pattern_made_of", None)
    space = ws.memory.get(ns)
    if ws.pattern is None or space is None or not made_of or made_of[0] is not space \
            or made_of[1] != space.event_count:
        return None, False
    try:
        data = pattern_payload(ws.pattern)
    except (TypeError, ValueError):  # a value orjson cannot write (a huge integer): not cached
        return None, False
    return {"ns": ns, "of": key, "payload": cache._write_payload("pattern.json", data, token)}, True


def pattern_projection(cache, space, path: str, link: bool = True) -> tuple[pl_fmt.PatternLearning, tuple | None]:
    """(the pattern-learning projection of namespace `space` (None: absent) whose log is `path`, what
    it was made of: (space, event count), or None when it came from `cache`). With a cache, the
    cached projection of a namespace restored unchanged: the same views, linked to their records
    again (`link`: a server's Accept reads them), or not (a one-shot inspect never follows them)."""
    restored = restore_pattern(cache, pl_fmt.NAMESPACE, path, link) if cache is not None and space is not None else None
    if restored is not None:
        return restored, None
    records = space.records() if space is not None else []
    return pl_fmt.project_pattern_learning(records, path), (space, space.event_count) if space is not None else None


# ----------------------------------------------------------------------------- checkpoint files
def _checkpoint_row(cf: ckpt_fmt.CheckpointFile) -> list:
    entries = [[e.key, e.value, e.keyed, e.fingerprint, e.line] for e in cf.entries.values()]
    return [cf.pipeline, cf.path, entries, [_problem_row(p) for p in cf.problems], cf.mtime, cf.size]


def _checkpoint_from_row(row: list) -> ckpt_fmt.CheckpointFile:
    pipeline, path, entries, problems, mtime, size = row
    cf = ckpt_fmt.CheckpointFile(pipeline, path, {}, [_problem_from_row(p) for p in problems], False, mtime, size, True)
    for key, value, keyed, fingerprint, line in entries:
        cf.entries[key] = ckpt_fmt.CheckpointEntry(key, value, keyed, fingerprint, line)
    return cf


class FileRows:
    """Files as read (run records, checkpoint files), kept per file with the stat of the file they were
    read from, in the state cache's payload named by the manifest's `part`."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.cached: dict[str, list] | None = None  # path -> [validator, row...] from the payload
        self.seen: dict[str, list] = {}  # path -> [validator, row...] for the next save
        self.changed = False

    def load(self, cache) -> dict:
        if self.cached is None:
            self.cached = {}
            desc = cache.manifest.get(self.part)
            try:
                doc = orjson.loads(cache.read_payload(desc)) if desc else {}
            except (CacheInvalid, orjson.JSONDecodeError):
                doc = {}
            if isinstance(doc, dict):
                self.cached = doc
        return self.cached

    def keep_read(self, path: str, before: os.stat_result | None, row: Callable[[], list]) -> None:
        """Keep `row()` (what follows the validator) for a file just read, whose lstat `before` was taken
        before the read: only when it was a regular file that did not change while it was read (the lstat
        after agrees), so a rewrite during the read is never cached with the new stat and the old content."""
        try:
            after = os.lstat(path)
        except OSError:
            return
        if before is not None and stat.S_ISREG(before.st_mode) and stat_stamp(before) == stat_stamp(after):
            self.seen[path] = [stat_stamp(after), *row()]

    def unchanged(self, cache) -> bool:
        """Whether the cached payload still holds exactly what was seen."""
        return not self.changed and set(self.seen) == set(self.load(cache))


class CheckpointRows(FileRows):
    """Checkpoint files as read, kept per file with the lstat of the regular file they were read from
    (device, inode, size, mtime_ns, ctime_ns): a file whose lstat still matches is not read again; any
    other (changed, replaced, a link, gone) is read, and kept only when it did not change while read."""

    def read(self, cache, path: str) -> ckpt_fmt.CheckpointFile:
        try:
            before = os.lstat(path)
        except OSError:
            before = None
        entry = self.load(cache).get(path) if before is not None and stat.S_ISREG(before.st_mode) else None
        # (`before` is set: an entry is looked up only then)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == stat_stamp(before):  # type: ignore[arg-type]
            try:
                cf = _checkpoint_from_row(entry[1])
            except (KeyError, TypeError, ValueError):
                cf = None
            if cf is not None and cf.path == path:
                self.seen[path] = entry
                return cf
        self.changed = True
        cf = ckpt_fmt.read_checkpoint_file(path)
        if cf.exists and not cf.retry:
            self.keep_read(path, before, lambda: [_checkpoint_row(cf)])
        return cf

    def payload(self, cache) -> bytes | None:
        """The payload to write, or None when the cached one still holds exactly what was seen."""
        if self.unchanged(cache):
            return None
        try:
            return orjson.dumps(self.seen)
        except TypeError:  # a value orjson cannot write: keep none (they are read again next time)
            return b"{}"


def read_checkpoint(cache, path: str) -> ckpt_fmt.CheckpointFile:
    """A checkpoint file, from the state cache's rows when it still matches them."""
    return ckpt_fmt.read_checkpoint_file(path) if cache is None else cache.checkpoint_rows.read(cache, path)

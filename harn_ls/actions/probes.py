"""Typecheck probes on a snippet, run the way std/agent/probe runs them (harn-formats §D.6, §I).

The snippet (a selection, or the whole file) goes to a temporary
`harn-probe-<uuid>.harn` in a fresh system temp directory -- never under
`.harn/`, so the watcher and Harn itself never see it -- and
`<harn> check <tmp> --json` runs as an argument list (no shell), in its own
session so that a timeout or a cancel kills the whole process group. The temp
directory is removed in a `finally`, also on cancellation.

The `harn.probe.v1` envelope and the auto-stored observation fact are rebuilt
with `formats.probes` exactly as probe.harn does, with one deliberate
difference: the fact gets an extra `file_range` evidence item pointing at the
probed lines, so the fact shows on that code. That item is part of the fact id
seed, so the id differs from the one Harn's own probe would store for the
same snippet.

`command` is Harn's literal `"<harn> check <snippet> --json"` (probe.harn joins
the binary with the placeholder `<snippet>`, not the temp path), with the
configured harn path substituted as `options.harn_binary` would be.

The checker runs with the project root as its working directory, so a
cwd-discovered `harn.toml` (e.g. `[check] strict`) applies as it would for a
probe started from the project.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass

from harn_ls.actions import ActionFailed, append_lines, uuid7
from harn_ls.formats import facts as F
from harn_ls.formats import paths as paths_mod
from harn_ls.formats import probes as P
from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.harn_time import iso_millis, rfc3339_nanos
from harn_ls.util import exit_hooks
from harn_ls.util.message_text import quote
from harn_ls.util.rust_text import rust_trim
from harn_ls.util.safe_read import reader_root
from harn_ls.util.text_positions import UTF16, ByteIndex, Pos, Range, TextIndex

SOURCE = "harn-probe"
NAMESPACE = P.PROBE_FACT_NAMESPACE  # Harn's default (project) scope: project/facts
MAX_CAPTURE = 32 * 1024 * 1024  # bytes kept per stream; the rest is drained and dropped
DRAIN_GRACE = 2.0  # seconds to wait for pipes after exit (an escaped grandchild may hold them)
MISSING_BINARY = ("harn binary not found: {path}. Install Harn or point the `harnState.harnPath` setting "
                  "(CLI: `--harn BIN`) at the harn executable.")

# Pos: 0-based line, column in the session's position encoding (UTF-16 unless the client and server
# agreed on another); Range: (start, end) — both from harn_ls.util.text_positions.


# -- ranges ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CliRange:
    """`--range L:C-L:C` (1-based lines, 1-based columns in characters, end = cursor position,
    i.e. exclusive) or `--range L-L` (whole lines, inclusive)."""

    start_line: int
    start_col: int | None
    end_line: int
    end_col: int | None

    def to_lsp(self, text: str) -> Range:
        index = TextIndex(text)

        def pos(line1: int, col1: int | None, *, end: bool) -> Pos:
            line = line1 - 1
            if line >= index.line_count:
                return index.end_position()
            if col1 is None:
                if not end:
                    return line, 0
                nxt = index.starts[line + 1] if line + 1 < index.line_count else len(text)  # after the line break
                return index.position(nxt)
            return index.position(index.offset_of_column((line, col1 - 1)))

        return pos(self.start_line, self.start_col, end=False), pos(self.end_line, self.end_col, end=True)


_RANGE_RE = re.compile(r"^\s*(\d+)(?::(\d+))?\s*-\s*(\d+)(?::(\d+))?\s*$")


def parse_range_arg(value: str) -> CliRange:
    m = _RANGE_RE.match(value or "")
    if m is None or (m.group(2) is None) != (m.group(4) is None):
        raise ValueError(f"--range must be L:C-L:C or L-L (1-based), got {value!r}")
    sl, el = int(m.group(1)), int(m.group(3))  # (the pattern requires both lines)
    sc, ec = (int(g) if g is not None else None for g in (m.group(2), m.group(4)))
    if sl < 1 or el < 1 or (sc is not None and sc < 1) or (ec is not None and ec < 1):
        raise ValueError(f"--range lines and columns start at 1, got {value!r}")
    if (el, ec or 0) < (sl, sc or 0):
        raise ValueError(f"--range ends before it starts: {value!r}")
    return CliRange(sl, sc, el, ec)


@dataclass(frozen=True)
class Selection:
    """The snippet a probe checks, and where it sits in the document."""

    snippet: str
    range: Range  # normalized (clamped) document range of the snippet


def select(text: str, rng: Range | None, encoding: str = UTF16) -> Selection:
    """The snippet `rng` (columns in `encoding`, the session's position encoding) covers."""
    if rng is None:
        return Selection(text, ((0, 0), TextIndex(text, encoding).end_position()))
    index = TextIndex(text, encoding)
    a, b = index.offset(rng[0]), index.offset(rng[1])
    a, b = min(a, b), max(a, b)
    return Selection(text[a:b], (index.position(a), index.position(b)))


def file_range_lines(rng: Range) -> tuple[int, int]:
    """1-based inclusive lines a range covers; a selection ending at column 0 stops on the line before."""
    (sl, _), (el, ec) = rng
    end = el if (ec == 0 and el > sl) else el + 1
    return sl + 1, max(sl + 1, end)


# -- outcome -------------------------------------------------------------------------------


@dataclass
class ProbeDiagnostic:
    """One diagnostic of a probe, mapped back to the document it came from."""

    range: Range  # in the original document
    severity: str  # error | warning | info
    message: str
    code: str | None = None
    help: str | None = None
    check_source: str = ""  # Harn's diagnostic source (type, lint, ...)
    source: str = SOURCE


@dataclass
class ProcessResult:
    """How the harn child process of a probe ended, and what it printed."""

    stdout: str
    stderr: str
    exit_code: int | None  # None when killed by a signal (Rust's ExitStatus::code())
    timed_out: bool
    duration_ms: int
    pid: int


@dataclass
class ProbeOutcome:
    """A finished probe: its envelope, diagnostics and the fact it stored."""

    envelope: dict
    outcome: str
    diagnostics: list[ProbeDiagnostic]
    summary_line: str
    fact_id: str | None
    events_path: str | None
    file_path: str
    range: Range
    snippet: str
    file_range: str | None = None
    store_error: str | None = None
    timed_out: bool = False
    process: ProcessResult | None = None

    def diagnostics_text(self) -> list[str]:
        out = []
        for d in self.diagnostics:
            (line, col), _ = d.range
            code = f" {d.code}" if d.code else ""
            out.append(f"{self.file_path}:{line + 1}:{col + 1}: {d.severity}{code}: {d.message}")
            if d.help:
                out.append(f"    help: {d.help}")
        if self.store_error:
            out.append(f"fact not stored: {self.store_error}")
        return out


# -- running harn ------------------------------------------------------------------------------

# Probes in flight, for the exit hook: if the process exits while a probe runs (the client sends
# `exit` right after `shutdown`, and the loop dies before our `finally` blocks run), their process
# groups are killed and their temp dirs removed at interpreter exit.
_ACTIVE_GROUPS: set[int] = set()
_ACTIVE_DIRS: set[str] = set()


@exit_hooks.register
def _cleanup_at_exit() -> None:
    for pgid in list(_ACTIVE_GROUPS):
        _kill_group(pgid)
    for d in list(_ACTIVE_DIRS):
        shutil.rmtree(d, ignore_errors=True)


def resolve_harn(harn_path: str) -> str:
    """The executable to run; ActionFailed (one message naming the setting) when there is none."""
    path = (harn_path or "").strip() or "harn"
    if os.sep in path or (os.altsep and os.altsep in path):
        full = os.path.abspath(os.path.expanduser(path))
        if os.path.isfile(full) and os.access(full, os.X_OK):
            return full
        raise ActionFailed(MISSING_BINARY.format(path=quote(path)))
    found = shutil.which(path)
    if found is None:
        raise ActionFailed(MISSING_BINARY.format(path=quote(path)))
    return found


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _Capture(asyncio.Protocol):
    """One of harn's output pipes, read by the event loop into `sink` (at most MAX_CAPTURE bytes
    kept, the rest drained and dropped); `done` resolves at end of file or when the pipe closes.
    The pipe is ours (os.pipe), so its transport is too: closing it releases the pipe even while
    an escaped descendant still holds the other end."""

    def __init__(self, sink: bytearray, done: asyncio.Future) -> None:
        self.sink = sink
        self.done = done

    def data_received(self, data: bytes) -> None:
        room = MAX_CAPTURE - len(self.sink)
        if room > 0:
            self.sink += data[:room]

    def eof_received(self) -> bool:
        self._finish()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish()

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _capture(read_fd: int, sink: bytearray) -> tuple[asyncio.BaseTransport, asyncio.Future]:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    transport, _protocol = await loop.connect_read_pipe(lambda: _Capture(sink, done), os.fdopen(read_fd, "rb", 0))
    return transport, done


async def _exited(proc, wait_task: asyncio.Future, limit: float | None) -> bool:
    """Wait until harn itself has exited (True) or `limit` seconds pass (False).

    Not just `proc.wait()`: before Python 3.12 that also waits for the pipes
    to close, so a descendant that escaped the process group while holding
    stdout would block it forever. The returncode is polled as well.
    """
    deadline = None if limit is None else time.monotonic() + limit
    while proc.returncode is None:
        step = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
        if step <= 0:
            return False
        await asyncio.wait({wait_task}, timeout=step)
    return True


async def run_process(argv: list[str], *, cwd: str | None, timeout: float,
                      env: dict[str, str] | None = None) -> ProcessResult:
    """Run argv (never through a shell) in a new session; kill its process group on timeout/cancel.
    `env`: the child's whole environment (default: harn-ls's own)."""
    started = time.monotonic()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=out_w, stderr=err_w, cwd=cwd, start_new_session=True,
            env=env)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        for fd in (out_r, err_r):
            os.close(fd)
        raise ActionFailed(MISSING_BINARY.format(path=quote(argv[0])) + f" ({exc.strerror or quote(exc)})") from None
    except OSError as exc:  # ENOEXEC and friends: not something we can run
        for fd in (out_r, err_r):
            os.close(fd)
        raise ActionFailed(MISSING_BINARY.format(path=quote(argv[0])) + f" ({quote(exc)})") from None
    finally:
        for fd in (out_w, err_w):  # the child has its copies; ours would keep the pipes open forever
            os.close(fd)
    _ACTIVE_GROUPS.add(proc.pid)
    out, err = bytearray(), bytearray()
    transports = []
    readers = []
    for fd, sink in ((out_r, out), (err_r, err)):
        transport, done = await _capture(fd, sink)
        transports.append(transport)
        readers.append(done)
    wait_task = asyncio.ensure_future(proc.wait())
    timed_out = False
    try:
        if not await _exited(proc, wait_task, max(0.001, float(timeout))):
            timed_out = True
            _kill_group(proc.pid)
            await _exited(proc, wait_task, None)  # SIGKILL: prompt
        duration_ms = int((time.monotonic() - started) * 1000)
        _done, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE)
        if pending:  # a straggler in the group still holds the pipes
            _kill_group(proc.pid)
            await asyncio.wait(pending, timeout=DRAIN_GRACE)
    except BaseException:
        # Cancelled (or failed) while harn runs: nothing of it may outlive us.
        _kill_group(proc.pid)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await asyncio.shield(_exited(proc, wait_task, 5.0))
        raise
    finally:
        _ACTIVE_GROUPS.discard(proc.pid)
        for task in (*readers, wait_task):
            task.cancel()
        for transport in transports:  # release pipes an escaped descendant may still hold
            transport.close()
    code = proc.returncode
    return ProcessResult(
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        exit_code=None if timed_out or code is None or code < 0 else code,
        timed_out=timed_out,
        duration_ms=duration_ms,
        pid=proc.pid,
    )


# -- the probe ----------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _summary_line(outcome: str, res: ProcessResult, env: P.CheckEnvelope | None, n_err: int, n_warn: int,
                  timeout: float) -> str:
    if res.timed_out:
        return f"typecheck timed out after {timeout:g} s"
    if env is None:
        code = "no exit code" if res.exit_code is None else f"exit {res.exit_code:d}"
        return f"typecheck {outcome}: no JSON envelope from harn check ({code})"
    if env.summary is None and env.error:
        return (f"typecheck {outcome}: harn check refused the input ({quote(env.error.get('code'))}: "
                f"{quote(env.error.get('message'))})")
    counts = []
    if n_err:
        counts.append(_plural(n_err, "error"))
    if n_warn:
        counts.append(_plural(n_warn, "warning"))
    return f"typecheck {outcome}" + (": " + ", ".join(counts) if counts else "")


def _convert_diagnostics(env: P.CheckEnvelope | None, tmp_path: str, sel: Selection,
                         encoding: str = UTF16) -> list[ProbeDiagnostic]:
    if env is None:
        return []
    snippet = ByteIndex(sel.snippet, encoding)
    oline, ocol = sel.range[0]

    def position(byte_offset: int) -> Pos:
        """A byte offset into the snippet -> its position in the document."""
        line, col = snippet.position(byte_offset)
        # Only the snippet's first line shares its document line with text before the selection.
        return oline + line, (ocol + col if line == 0 else col)

    out = []
    for f in env.files:
        ours = os.path.basename(f.path) == os.path.basename(tmp_path)
        for d in f.diagnostics:
            if ours and d.span is not None:
                rng = (position(d.span[0]), position(d.span[1]))
                message = d.message
            else:
                # No location (or another file): pin it to the start of the probed range.
                rng = (sel.range[0], sel.range[0])
                message = d.message if ours else f"{f.path}: {d.message}"
            out.append(ProbeDiagnostic(range=rng, severity=d.severity, message=message, code=d.code,
                                       help=d.help, check_source=d.source))
    return out


def _events_target(project_root: str, memory_root: str) -> tuple[str, str]:
    """(events.jsonl of project/facts, the root the write is confined to)."""
    path = os.path.join(memory_root, *NAMESPACE.split("/"), "events.jsonl")
    # HARN_MEMORY_ROOT outside the project: confine to it
    return path, reader_root(os.path.abspath(memory_root), os.path.abspath(project_root))


async def run_typecheck_probe(project_root: str, file_path: str, text: str, rng: Range | None, harn_path: str,
                              timeout: float, store: bool = True, now: str | None = None,
                              memory_root: str | None = None, encoding: str = UTF16) -> ProbeOutcome:
    """Probe `rng` of `text` (the content of `file_path`; whole text when rng is None).

    Cancelling the awaiting task kills harn's process group and removes the
    temp file before CancelledError propagates. `now` (ISO string) pins
    asserted_at and stored_at, as probe.harn's `options.now` does.
    """
    sel = select(text, rng, encoding)
    if rust_trim(sel.snippet) == "":
        raise ActionFailed("HARN-PROBE-004: nothing to probe: the selection is empty or only whitespace")
    binary = resolve_harn(harn_path)
    harn_display_path = (harn_path or "").strip() or "harn"  # what probe.harn's command text shows

    tmpdir = tempfile.mkdtemp(prefix="harn-ls-probe-")
    tmp_path = os.path.join(tmpdir, f"harn-probe-{uuid7()}.harn")
    _ACTIVE_DIRS.add(tmpdir)
    try:
        with open(tmp_path, "wb") as fh:
            fh.write(sel.snippet.encode("utf-8", "surrogatepass"))
        res = await run_process([binary, "check", tmp_path, "--json"], cwd=project_root, timeout=timeout)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
        _ACTIVE_DIRS.discard(tmpdir)

    run = P.read_typecheck_run(sel.snippet, harn_display_path, stdout=res.stdout, stderr=res.stderr, exit_code=res.exit_code,
                               duration_ms=res.duration_ms, timed_out=res.timed_out)
    env = run.check
    diagnostics = _convert_diagnostics(env, tmp_path, sel, encoding)
    n_err = sum(1 for d in diagnostics if d.severity == "error")
    n_warn = sum(1 for d in diagnostics if d.severity == "warning")

    if now is not None:
        asserted_at = stored_at = now
    else:
        ns = time.time_ns()
        asserted_at, stored_at = iso_millis(ns), rfc3339_nanos(ns)

    abs_file = os.path.abspath(file_path)
    rel = os.path.relpath(abs_file, os.path.abspath(project_root)).replace(os.sep, "/")
    lines = file_range_lines(sel.range)
    file_range = None if rel.startswith("../") or rel == ".." else f"{rel}:{lines[0]}-{lines[1]}"

    fact_id = events_path = store_error = None
    if store:
        mem_root = memory_root or paths_mod.resolve(project_root).memory_root
        events_path, confine = _events_target(project_root, mem_root)
        try:
            event = P.typecheck_fact_event(sel.snippet, run.outcome, run.observed, run.command, file_range, asserted_at,
                                           stored_at, NAMESPACE)
            line = serde_compact(event)
            # fsync off the event loop (the server's loop must not stall on disk)
            await asyncio.get_running_loop().run_in_executor(None, append_lines, confine, events_path, [line])
            fact_id = event["id"]
        except (ActionFailed, F.FactError, OSError) as exc:
            # Harn's probe also carries on without fact_id when store_fact fails.
            store_error = str(exc)

    return ProbeOutcome(
        envelope=P.typecheck_envelope(run, asserted_at, fact_id), outcome=run.outcome, diagnostics=diagnostics,
        summary_line=_summary_line(run.outcome, res, env, n_err, n_warn, timeout),
        fact_id=fact_id, events_path=events_path if fact_id else None, file_path=file_path, range=sel.range,
        snippet=sel.snippet, file_range=file_range, store_error=store_error, timed_out=res.timed_out, process=res,
    )


def run_typecheck_probe_cli(file: str, rng: CliRange | Range | None, harn: str | None = None, store: bool = True,
                            timeout: float = 30.0, now: str | None = None) -> ProbeOutcome:
    """Sync wrapper for `harn-ls probe typecheck FILE`: reads the saved file, finds the project root."""
    abs_file = os.path.abspath(file)
    try:
        with open(abs_file, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError as exc:
        raise ActionFailed(f"cannot read {quote(file)}: {exc.strerror or quote(exc)}") from None
    lsp_range = rng.to_lsp(text) if isinstance(rng, CliRange) else rng
    root = paths_mod.find_project_root(abs_file)
    return asyncio.run(run_typecheck_probe(root, abs_file, text, lsp_range, harn or "harn", timeout,
                                           store=store, now=now))

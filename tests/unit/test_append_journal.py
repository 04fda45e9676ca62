"""A torn append of ours is undone by the next append; anyone else's bytes never are.

The first test reproduces the real failure: a process SIGKILLed inside one large
`write()` leaves a prefix of its lines with no newline (the kernel copies page by
page and stops between pages on a fatal signal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson

from harn_ls.actions import append_journal, append_lines

REPO = Path(__file__).resolve().parents[2]


def _lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [orjson.loads(x) for x in data.split(b"\n")[:-1]]


def test_sigkill_inside_a_large_append_is_rolled_back_by_the_next_append(tmp_path):
    project = tmp_path / "proj"
    log = project / ".harn" / "memory" / "ns" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(b'{"type":"store","id":"before"}\n')
    child = textwrap.dedent(f"""
        import sys
        from harn_ls.actions import append_lines
        big = "x" * 4000
        lines = ['{{"type":"store","id":"%d","text":"%s"}}' % (i, big) for i in range(15000)]
        print("ready", flush=True)
        append_lines({str(project)!r}, {str(log)!r}, lines)
        print("done", flush=True)
    """)
    torn = 0
    for _attempt in range(6):  # the kill has to land inside the write; a 60 MB write gives it time
        proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, cwd=str(REPO))
        assert proc.stdout.readline() == b"ready\n"
        size0 = log.stat().st_size
        deadline = time.monotonic() + 60
        while log.stat().st_size == size0 and time.monotonic() < deadline:
            time.sleep(0.0005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        data = log.read_bytes()
        if not data.endswith(b"\n"):
            torn += 1
            break
        log.write_bytes(b'{"type":"store","id":"before"}\n')  # the write finished first: try again
    assert torn, "never managed to kill inside the write"
    # the kill tore the file: its end is a prefix of our lines, not a whole line
    assert len(data) > 32
    landed = data[: data.rfind(b"\n") + 1]  # the whole lines of the killed write stay, in order
    assert landed.startswith(b'{"type":"store","id":"before"}\n')
    ids_landed = [orjson.loads(x)["id"] for x in landed.split(b"\n")[1:-1]]
    assert ids_landed == [str(i) for i in range(len(ids_landed))]
    # the next append of harn-ls cuts exactly the unfinished line and then appends whole lines
    append_lines(str(project), str(log), ['{"type":"store","id":"after"}'])
    assert log.read_bytes().startswith(landed)
    assert [e["id"] for e in _lines(log)] == ["before", *ids_landed, "after"]
    # and the intent record was outside the project and is gone
    assert not any("intent" in p.name for p in project.rglob("*"))
    # (other tests' killed writers may leave records for their own files in the shared cache folder)
    assert not os.path.exists(append_journal._record_path(os.path.realpath(log)))


def test_a_torn_tail_that_is_not_ours_is_kept_and_fenced_off(tmp_path):
    project = tmp_path / "proj"
    log = project / "events.jsonl"
    project.mkdir()
    log.write_bytes(b'{"type":"store","id":"a"}\n{"type":"store","id":"harn-wri')
    # an intent record of ours for this file, for bytes that are not the ones there
    st = os.stat(log)
    record = append_journal.record_intent(os.path.realpath(log), st, 26, b'{"type":"store","id":"ours"}\n' * 200)
    assert record and not record.startswith(str(project))
    append_lines(str(project), str(log), ['{"type":"store","id":"b"}'])
    assert log.read_bytes() == b'{"type":"store","id":"a"}\n{"type":"store","id":"harn-wri\n{"type":"store","id":"b"}\n'
    assert not os.path.exists(record)


def test_an_intent_for_a_replaced_file_is_ignored(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    log = project / "events.jsonl"
    payload = b'{"type":"store","id":"ours"}\n' * 200
    log.write_bytes(payload[:100])
    record = append_journal.record_intent(os.path.realpath(log), os.stat(log), 0, payload)
    # the log was replaced by rename: same name, another inode, same torn-looking bytes
    other = project / "new.jsonl"
    other.write_bytes(payload[:100])
    os.replace(other, log)
    append_lines(str(project), str(log), ['{"type":"store","id":"b"}'])
    assert log.read_bytes() == payload[:100] + b'\n{"type":"store","id":"b"}\n'
    assert not os.path.exists(record)


def test_only_writes_across_a_page_need_a_record():
    assert not append_journal.needs_record(0, 4096)
    assert not append_journal.needs_record(4000, 96)
    assert append_journal.needs_record(4000, 97)
    assert append_journal.needs_record(8191, 2)
    assert not append_journal.needs_record(10, 0)


def test_whole_lines_of_a_cut_write_stay_and_only_the_unfinished_line_goes(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    log = project / "events.jsonl"
    log.write_bytes(b'{"type":"store","id":"a"}\n')
    lines = [b'{"type":"store","id":"%d","pad":"%s"}' % (i, b"p" * 900) for i in range(10)]
    payload = b"".join(x + b"\n" for x in lines)
    record = append_journal.record_intent(os.path.realpath(log), os.stat(log), 26, payload)
    cut = len(lines[0]) * 3 + 3 + 500  # three whole lines and 500 bytes of the fourth
    with open(log, "ab") as fh:
        fh.write(payload[:cut])
    append_lines(str(project), str(log), ['{"type":"store","id":"b"}'])
    assert [e["id"] for e in _lines(log)] == ["a", "0", "1", "2", "b"]
    assert not os.path.exists(record)


def test_records_older_than_the_stale_age_are_pruned_when_a_new_one_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    log = tmp_path / "proj" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"")
    folder = tmp_path / "cache" / "appends"
    folder.mkdir(parents=True)
    old, fresh = folder / ("a" * 32 + ".intent"), folder / ("b" * 32 + ".intent")
    for p in (old, fresh):
        p.write_bytes(b'{"path":"/x","dev":1,"ino":2,"start":0,"length":1}\nx')
    aged = time.time() - append_journal.STALE_AFTER_S - 60
    os.utime(old, (aged, aged))
    keep_other = folder / "notes.txt"  # not a record: never touched
    keep_other.write_text("x")
    os.utime(keep_other, (aged, aged))
    real = os.path.realpath(log)
    record = append_journal.record_intent(real, os.stat(real), 0, b"y" * 5000)
    assert record is not None and os.path.exists(record)
    assert not old.exists()
    assert fresh.exists() and keep_other.exists()

"""Answering HITL requests while others write (issue 33): real processes on one SQLite log in WAL mode.

* a Harn-like process holds the write lock (Harn's `BEGIN IMMEDIATE` append, §H.2.4) and keeps
  appending while harn-ls answers: the answer waits for the lock, every chain still verifies;
* two `harn-ls hitl approve` processes on the same request at once: one wins, the other is told;
* SIGKILL between the response and the finalize: the next view shows the orphan response as Harn
  would, `hitl list` offers to finish it, and `hitl finish` appends the missing rows.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

from harn_ls.formats.hitl import responses as H
from tests.helpers import event_log_writer as W
from tests.unit.test_hitl_answer import add_approval, fold, harn_pending, rows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT, HARN_LS_CACHE="off")


def cli(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harn_ls", "hitl", *args], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def project(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    (proj / "harn.toml").write_text("[package]\nname = 'p'\n")
    path = str(proj / ".harn" / "events.sqlite")
    return str(proj), path, W.open_log(path)


def all_chains_verify(path: str) -> None:
    for topic, rs in rows(path).items():
        chk = H.verify_chain(topic, [(r["event_id"], r["kind"], json.loads(r["payload"]), json.loads(r["headers"]),
                                      r["occurred_at_ms"]) for r in rs])
        assert chk.ok, chk.message
        assert [r["event_id"] for r in rs] == list(range(1, len(rs) + 1)), topic
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    heads = dict(c.execute("SELECT topic, last_id FROM topic_heads").fetchall())
    c.close()
    assert heads == {t: len(rs) for t, rs in rows(path).items()}


HOLDER = textwrap.dedent("""
    import sys, time
    from tests.helpers import event_log_writer as W
    conn = W.open_log(sys.argv[1])
    # Harn's append transaction, held open: the lock is taken, the row inserted, commit delayed
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT OR IGNORE INTO topic_heads(topic, last_id) VALUES ('hitl.questions', 0)")
    print("locked", flush=True)
    time.sleep(3.0)  # under Harn's 5 s busy timeout; the harn-ls answers start meanwhile
    print(int(time.time() * 1000), flush=True)
    conn.execute("ROLLBACK")
    # then a stream of Harn appends on the same topics harn-ls writes to
    for i in range(40):
        rid = f"hitl_approval_bg-{i:03d}"
        W.waitpoint_open(conn, rid)
        env = W.approval_request(rid)
        W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
        W.append(conn, "waitpoint.resumes", "waitpoint.resume", {"waitpoint_id": rid, "requested_at": "x",
                                                                  "reason": "waitpoint_changed"})
    print("done", flush=True)
""")


def test_answer_while_harn_holds_the_lock_and_appends(tmp_path):
    proj, path, conn = project(tmp_path)
    for i in range(3):
        add_approval(conn, f"hitl_approval_mine-{i}")
    conn.close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, path], cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    answers = [cli(proj, "approve", f"hitl_approval_mine-{i}", "--reviewer", "alice", "--json") for i in range(3)]
    outs = [a.communicate(timeout=60) for a in answers]
    released_ms = int(holder.stdout.readline())
    assert holder.wait(timeout=60) == 0 and holder.stdout.read().strip() == "done"
    for a, (out, err) in zip(answers, outs, strict=True):
        assert a.returncode == 0, err
        assert json.loads(out)["outcome"] == "approved"
    # the answers waited for Harn's write lock (each append is built once the lock is held)
    mine = [r for r in rows(path)["hitl.approvals"] if r["kind"] == "hitl.response_received"]
    assert len(mine) == 3 and min(r["occurred_at_ms"] for r in mine) >= released_ms
    all_chains_verify(path)
    reqs = fold(path)
    assert all(reqs[f"hitl_approval_mine-{i}"].state == "answered" for i in range(3))
    assert sum(1 for r in reqs.values() if r.request_id.startswith("hitl_approval_bg-")) == 40
    assert not any(r.startswith("hitl_approval_mine") for r in harn_pending(path))


def test_two_harn_ls_answer_the_same_request_at_once(tmp_path):
    proj, path, conn = project(tmp_path)
    for round_ in range(3):
        rid = f"hitl_approval_race-{round_}"
        add_approval(conn, rid, reviewers=("alice", "bob"), quorum=1)
        a = cli(proj, "approve", rid, "--reviewer", "alice")
        b = cli(proj, "deny", rid, "--reviewer", "bob", "--reason", "no")
        (_oa, ea), (_ob, eb) = a.communicate(timeout=60), b.communicate(timeout=60)
        codes = sorted([a.returncode, b.returncode])
        assert codes == [0, 1], (ea, eb)
        loser_err = ea if a.returncode else eb
        assert "no longer pending" in loser_err or "already approved" in loser_err or "already denied" in loser_err
        winner = "approved" if a.returncode == 0 else "denied"
        responses = [r for r in rows(path)["hitl.approvals"] if r["kind"] == "hitl.response_received"
                     and json.loads(r["payload"])["request_id"] == rid]
        assert len(responses) == 1  # the loser wrote nothing
        assert fold(path)[rid].state == ("answered" if winner == "approved" else "denied")
    all_chains_verify(path)
    conn.close()


KILLER = textwrap.dedent("""
    import os, signal, sys
    from harn_ls.actions.hitl import answer as A
    A.answer(sys.argv[1], sys.argv[2], "approve", reviewer="alice", reason="ok",
             after_response=lambda: os.kill(os.getpid(), signal.SIGKILL))
""")


def test_sigkill_between_response_and_finalize(tmp_path):
    proj, path, conn = project(tmp_path)
    rid = "hitl_approval_killed"
    add_approval(conn, rid)
    conn.close()
    p = subprocess.run([sys.executable, "-c", KILLER, path, rid], cwd=ROOT, env=ENV, capture_output=True, timeout=60)
    assert p.returncode == -signal.SIGKILL
    kinds = [r["kind"] for r in rows(path)["hitl.approvals"]]
    assert kinds == ["hitl.approval_requested", "hitl.response_received"]  # committed, not finalized
    # Harn's view: still pending (an approving response is not terminal); the run still waits
    assert rid in harn_pending(path)
    r = fold(path)[rid]
    assert r.state == "pending" and r.approvals == ["alice"] and r.waitpoint_status == "open"
    lst = cli(proj, "list", "--json")
    out, err = lst.communicate(timeout=60)
    row = next(x for x in json.loads(out) if x["request_id"] == rid)
    assert row["unfinished"] and row["actions"] == ["finish"]
    again = cli(proj, "approve", rid, "--reviewer", "alice")
    _, err = again.communicate(timeout=60)
    assert again.returncode == 1 and "finish it instead" in err
    fin = cli(proj, "finish", rid, "--json")
    out, err = fin.communicate(timeout=60)
    assert fin.returncode == 0, err
    res = json.loads(out)
    assert [w["kind"] for w in res["written"]] == ["hitl.approval_approved", "waitpoint.state", "waitpoint.resume"]
    assert fold(path)[rid].state == "answered" and rid not in harn_pending(path)
    all_chains_verify(path)

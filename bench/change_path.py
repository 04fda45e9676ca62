"""The path of one file change to the editor: which harn_ls modules the server runs code of.

    python bench/change_path.py [--repo DIR] [--python EXE] [--json] [--functions]

Starts the real server (`<python> -m harn_ls serve` over stdio) from the checkout DIR (default: the
one this script is in; DIR goes first on PYTHONPATH, so an old commit's tree in a detached worktree
is measured the same way) under a small wrapper that records, on every thread, the module of each
Python function called whose module is `harn_ls` or below it. SIGUSR1 empties the record (the
mark), SIGUSR2 writes it as JSON.

A minimal LSP client (JSON-RPC over the pipes) opens a small Harn project written to a temporary
folder, waits until the server has loaded it and finished its start-up work, opens the memory
document of `project/facts` (`workspace/textDocumentContent`) and the memory tree (`harn/tree`),
then: mark, append one fact to `.harn/memory/project/facts/events.jsonl`, wait for what the
server sends about it (`workspace/textDocumentContent/refresh`, `harn/treeChanged`, status,
diagnostics), fetch the document and the tree again as a client would, wait until the server is
quiet, dump. Prints the modules visited, sorted, and their count; `--json` for machine output,
`--functions` for the functions called in each module and how often (a coroutine's resumptions
count as calls, so the counts of the transport's readers vary by one between runs; the modules and
functions do not).

Before the mark the server's background alone is recorded over the same kind of window (the
watcher's health check runs every second): those modules are listed too, as "idle", so the
change's own visits can be told from the upkeep's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT_ENV = "HARN_LS_CHANGE_PATH_OUT"
FACTS_LOG = ".harn/memory/project/facts/events.jsonl"
NAMESPACE = "project/facts"
QUIET_S = 1.1  # the record has not grown for this long: the work is over (the recall fold waits <= 0.5 s;
# the watcher's health check, every 1 s, lands in every window)
TIMEOUT_S = 60.0

# The wrapper the server runs under (written to the temporary folder, never into the project).
# Module-level code of a module imported inside the window counts as a visit: its `<module>` runs.
WRAPPER = '''\
import json, os, runpy, signal, sys, threading

_seen = {}
_seq = [0]


def _profile(frame, event, arg):
    if event == "call":
        key = (frame.f_globals.get("__name__"), frame.f_code.co_qualname)
        _seen[key] = _seen.get(key, 0) + 1


def _write(kind, calls):
    _seq[0] += 1
    pkg = sys.modules.get("harn_ls")
    out = os.environ["HARN_LS_CHANGE_PATH_OUT"]
    with open(out + ".tmp", "w", encoding="utf-8") as fh:
        json.dump({"seq": _seq[0], "kind": kind, "harn_ls": getattr(pkg, "__file__", None),
                   "calls": calls}, fh)
    os.replace(out + ".tmp", out)


def _mark(signum, frame):
    _seen.clear()
    _write("mark", [])


def _dump(signum, frame):
    calls = sorted([m, q, n] for (m, q), n in list(_seen.items())
                   if isinstance(m, str) and (m == "harn_ls" or m.startswith("harn_ls.")))
    _write("dump", calls)


signal.signal(signal.SIGUSR1, _mark)
signal.signal(signal.SIGUSR2, _dump)
threading.setprofile(_profile)
sys.setprofile(_profile)
sys.argv = ["harn_ls", "serve"]
runpy.run_module("harn_ls", run_name="__main__", alter_sys=True)
'''
assert f'os.environ["{OUT_ENV}"]' in WRAPPER


# ----------------------------------------------------------------------------- the project
def _compact(value: Any) -> str:
    """Harn's json_stringify: compact, keys sorted."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


PROVENANCE = {"agent": "change-path", "run_id": "run-1"}


def fact_line(kind: str, claim: str, ref: str, asserted_at: str, stored_at: str, *, confidence: float = 0.8,
              provenance: dict[str, str] = PROVENANCE) -> str:
    """One `store` line of a fact with one `file_range` evidence, as Harn's store_fact writes it
    (harn-formats D.3, D.4): the id from its seed, the tags sorted, the envelope's text compact."""
    evidence = [{"kind": "file_range", "ref": ref}]
    seed = f"{kind}\n{claim}\n{_compact(evidence)}\n{_compact(provenance)}"
    fact_id = "fact_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:32]
    value = {"asserted_at": asserted_at, "claim": claim, "confidence": confidence, "evidence": evidence, "id": fact_id,
             "kind": kind, "provenance": provenance, "schema": "harn.fact.v1"}
    tags = {"fact", f"fact:{kind}", "schema:harn.fact.v1"}
    for ev in evidence:
        ek, er = ev["kind"], ev["ref"]
        tags |= {f"fact:evidence:{ek}", f"fact:evidence_ref:{er}", f"fact:evidence:{ek}:{er}",
                 f"fact:{kind}:evidence:{ek}", f"fact:{kind}:evidence_ref:{er}", f"fact:{kind}:evidence:{ek}:{er}"}
    event = {"type": "store", "id": fact_id, "namespace": NAMESPACE, "key": f"fact:{kind}:{fact_id}", "value": value,
             "text": _compact(value), "tags": sorted(tags), "stored_at": stored_at, "provenance": provenance}
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_project(root: Path) -> Path:
    """A small Harn project: harn.toml, one source file, three facts about it. The log's path."""
    (root / "src").mkdir(parents=True)
    (root / "harn.toml").write_text('[package]\nname = "change-path"\nversion = "0.1.0"\n', encoding="utf-8")
    (root / "src" / "invoice.py").write_text(
        "def total(lines):\n    return sum(line.amount for line in lines)\n\n\n"
        "def late_fee(days):\n    return 0 if days <= 30 else 25\n", encoding="utf-8")
    log = root / FACTS_LOG
    log.parent.mkdir(parents=True)
    log.write_text("".join([
        fact_line("observation", "total sums the line amounts", "src/invoice.py:1-2",
                  "2026-05-06T14:11:02.318Z", "2026-05-06T14:11:02.400000000+00:00"),
        fact_line("decision", "late fees start after 30 days", "src/invoice.py:5-6",
                  "2026-05-06T14:12:40.001Z", "2026-05-06T14:12:40.090000000+00:00"),
        fact_line("claim", "invoices are in euros", "src/invoice.py:1",
                  "2026-05-06T14:13:05.500Z", "2026-05-06T14:13:05.512000000+00:00"),
    ]), encoding="utf-8")
    return log


# ----------------------------------------------------------------------------- the client
class Client:
    """JSON-RPC over the server's pipes (Content-Length framing). Server requests are answered with
    null and kept, like notifications, in arrival order."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(cmd, cwd=str(cwd), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.next_id = 0
        self.answers: dict[int, queue.Queue[dict]] = {}
        self.incoming: queue.Queue[dict] = queue.Queue()
        self.stderr: list[str] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode("utf-8")
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.incoming.put({"method": "<closed>"})
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            msg = json.loads(out.read(length))
            if "method" in msg and "id" in msg:  # a request from the server
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                self.incoming.put(msg)
            elif "id" in msg:
                q = self.answers.pop(msg["id"], None)
                if q is not None:
                    q.put(msg)
            else:
                self.incoming.put(msg)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace").rstrip())

    def request(self, method: str, params: Any, timeout: float = TIMEOUT_S) -> Any:
        self.next_id += 1
        q: queue.Queue[dict] = queue.Queue()
        self.answers[self.next_id] = q
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        try:
            msg = q.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"{method}: no answer within {timeout:.0f} s") from None
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, done, timeout: float = TIMEOUT_S) -> list[dict]:
        """Messages from the server, in order, until `done(message)` is true for one (included)."""
        end = time.monotonic() + timeout
        got: list[dict] = []
        while True:
            try:
                msg = self.incoming.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"timed out; heard {[m.get('method') for m in got]}") from None
            if msg.get("method") == "<closed>":
                raise RuntimeError("the server closed its output:\n" + "\n".join(self.stderr[-20:]))
            got.append(msg)
            if done(msg):
                return got

    def drain(self) -> list[dict]:
        got = []
        while True:
            try:
                got.append(self.incoming.get_nowait())
            except queue.Empty:
                return got

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=15)
            self.notify("exit", None)
            self.proc.wait(timeout=15)
        except Exception:
            self.proc.kill()
            self.proc.wait()


class Recorder:
    """Talks to the wrapper: a signal, then the file it writes with the next sequence number."""

    def __init__(self, client: Client, out: Path) -> None:
        self.client = client
        self.out = out
        self.seq = 0

    def _signal(self, sig: int, kind: str) -> dict:
        self.seq += 1
        self.client.proc.send_signal(sig)
        end = time.monotonic() + TIMEOUT_S
        while time.monotonic() < end:
            try:
                data = json.loads(self.out.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            if data is not None and data["seq"] >= self.seq:
                if data["seq"] != self.seq or data["kind"] != kind:
                    raise RuntimeError(f"the wrapper answered {data['kind']} #{data['seq']}, expected {kind} #{self.seq}")
                return data
            if self.client.proc.poll() is not None:
                raise RuntimeError("the server exited:\n" + "\n".join(self.client.stderr[-20:]))
            time.sleep(0.02)
        raise RuntimeError(f"the wrapper did not answer {kind} within {TIMEOUT_S:.0f} s")

    def mark(self) -> None:
        self._signal(signal.SIGUSR1, "mark")

    def dump(self) -> dict:
        return self._signal(signal.SIGUSR2, "dump")

    def dump_when_quiet(self, quiet: float = QUIET_S) -> dict:
        """Dump until the record stops growing for `quiet` seconds (the last dump)."""
        last = self.dump()
        since = time.monotonic()
        end = since + TIMEOUT_S
        while time.monotonic() < end:
            time.sleep(0.1)
            now = self.dump()
            if _functions(now) != _functions(last):  # a call count alone grows with every health check
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return now
        raise RuntimeError(f"the server did not go quiet within {TIMEOUT_S:.0f} s")


def _functions(dump: dict) -> list[tuple[str, str]]:
    return [(module, qualname) for module, qualname, _calls in dump["calls"]]


def _modules(dump: dict) -> dict[str, dict[str, int]]:
    """module -> {function's qualified name: calls}, sorted."""
    by_module: dict[str, dict[str, int]] = {}
    for module, qualname, calls in dump["calls"]:
        by_module.setdefault(module, {})[qualname] = calls
    return {m: dict(sorted(fs.items())) for m, fs in sorted(by_module.items())}


def _is_status(msg: dict, recall_ready: bool = False) -> bool:
    return msg.get("method") == "harn/status" and (not recall_ready or bool(msg["params"].get("recallReady")))


def _tree(client: Client, view: str) -> list[dict]:
    """The view's top level and the children of each item there, as a client shows an expanded tree."""
    items = client.request("harn/tree", {"view": view})["items"]
    for item in list(items):
        if item.get("hasChildren"):
            items += client.request("harn/tree", {"view": view, "parent": item["id"]})["items"]
    return items


def _memory_uri(items: list[dict]) -> str:
    """The document of the namespace holding the facts, as the tree names it."""
    for item in items:
        uri = item.get("uri") or ""
        if uri.startswith("harn-state:/memory/") and NAMESPACE in uri:
            return uri
    raise RuntimeError(f"the memory tree names no document of {NAMESPACE}: {[i.get('uri') for i in items]}")


def measure(repo: Path, python: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="harn-change-path-") as tmp_name:
        tmp = Path(tmp_name)
        project = tmp / "project"
        log = write_project(project)
        (tmp / "bin").mkdir()
        wrapper = tmp / "bin" / "change_path_wrapper.py"
        wrapper.write_text(WRAPPER, encoding="utf-8")
        out = tmp / "record.json"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(repo), *filter(None, [env.get("PYTHONPATH")])])
        env[OUT_ENV] = str(out)
        env["HARN_LS_CACHE_DIR"] = str(tmp / "cache")  # a fresh cache: every run starts the same way
        env["HARN_LS_START_TRACE"] = "1"  # its "settled" line says the start-up work is over
        client = Client([python, str(wrapper)], tmp / "bin", env)
        recorder = Recorder(client, out)
        try:
            root_uri = project.as_uri()
            client.request("initialize", {
                "processId": os.getpid(), "rootUri": root_uri, "workspaceFolders": [{"uri": root_uri, "name": "project"}],
                "capabilities": {"workspace": {"textDocumentContent": {"dynamicRegistration": False}}}})
            client.notify("initialized", {})
            client.wait_for(lambda m: _is_status(m, recall_ready=True))
            end = time.monotonic() + TIMEOUT_S
            while not any(line.startswith("harn-ls start") and " s  settled " in line for line in client.stderr):
                if time.monotonic() > end:
                    raise RuntimeError("the server never reported its start-up settled:\n" + "\n".join(client.stderr[-20:]))
                time.sleep(0.05)
            # opened before the change, as a user would have them
            uri = _memory_uri(_tree(client, "memory"))
            before = client.request("workspace/textDocumentContent", {"uri": uri})["text"]
            client.drain()
            # what is left of the start-up (the message conversions' warm-up runs beside the settle) ends
            # here; then the background alone is recorded, over a window like the change's
            recorder.mark()
            recorder.dump_when_quiet()
            recorder.mark()
            idle = recorder.dump_when_quiet()
            recorder.mark()
            with log.open("a", encoding="utf-8") as fh:
                fh.write(fact_line("observation", "late_fee is flat, not per day", "src/invoice.py:5-6",
                                   "2026-05-06T15:00:00.000Z", "2026-05-06T15:00:00.100000000+00:00"))
            heard: list[dict] = []
            wanted = {"workspace/textDocumentContent/refresh", "harn/treeChanged"}

            def _both(msg: dict) -> bool:
                heard.append(msg)
                return wanted <= {m.get("method") for m in heard}

            client.wait_for(_both)
            refreshed = [m["params"]["uri"] for m in heard if m.get("method") == "workspace/textDocumentContent/refresh"]
            views = sorted({m["params"]["view"] for m in heard if m.get("method") == "harn/treeChanged"})
            for ref in refreshed:
                after = client.request("workspace/textDocumentContent", {"uri": ref})["text"]
                if ref == uri and after == before:
                    raise RuntimeError(f"{uri} was refreshed but its text did not change")
            for view in views:
                _tree(client, view)
            change = recorder.dump_when_quiet()
            heard += client.drain()
        finally:
            client.close()
        harn_ls_file = change.get("harn_ls") or ""
        if not Path(harn_ls_file).resolve().is_relative_to(repo.resolve()):
            raise RuntimeError(f"the server imported harn_ls from {harn_ls_file}, not from {repo}")
        modules = _modules(change)
        idle_modules = _modules(idle)
        return {
            "repo": str(repo), "harn_ls": harn_ls_file, "document": uri, "refreshed": refreshed, "tree_views": views,
            "heard": [m.get("method") for m in heard],
            "count": len(modules), "modules": list(modules),
            "function_count": sum(map(len, modules.values())),
            "functions": {m: list(fs) for m, fs in modules.items()}, "calls": modules,
            "idle_modules": list(idle_modules), "idle_calls": idle_modules,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose harn_ls runs (default: this one)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run the server with")
    parser.add_argument("--json", action="store_true", help="machine output")
    parser.add_argument("--functions", action="store_true",
                        help="also list the functions called in each module, with their number of calls")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    if not (repo / "harn_ls" / "__init__.py").is_file():
        parser.error(f"{args.repo} holds no harn_ls package")
    if shutil.which(args.python) is None and not os.access(args.python, os.X_OK):
        parser.error(f"cannot run {args.python}")
    try:
        result = measure(repo, args.python)
    except RuntimeError as exc:
        print(f"change_path: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"harn_ls from {result['harn_ls']}")
    print(f"one fact appended to {FACTS_LOG}; heard: {', '.join(result['heard'])}")
    print(f"fetched again: {', '.join(result['refreshed']) or '(no document)'}; tree views: {', '.join(result['tree_views'])}")
    print(f"modules visited: {result['count']} ({result['function_count']} functions)")
    idle = set(result["idle_modules"])
    for module, functions in result["calls"].items():
        print(f"  {module}{'  (also while idle)' if module in idle else ''}")
        if args.functions:
            for qualname, calls in functions.items():
                print(f"      {qualname}  x{calls}")
    print(f"visited while idle (before the change, same wait): {', '.join(result['idle_modules']) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

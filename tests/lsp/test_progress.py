"""Work-done progress during a cold project load (issue 36), seen by a raw JSON-RPC client over stdio.

The project holds 100k memory records (~48 MB), so its cold load takes most of a second even on a fast
machine (40k records loaded in 0.3 s, and a begin sent late by a busy event loop left one report);
HARN_LS_PROGRESS_AFTER=0 and HARN_LS_PROGRESS_EVERY=0.05 let the test see the reports of a load that
short without waiting for the everyday thresholds (0.5 s, 0.25 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


BIG_RECORDS = 100_000  # the load of this many is long enough to be seen (also by the Neovim test)


def _write_project(root: Path, n_records: int = BIG_RECORDS) -> Path:
    ns_dir = root / ".harn" / "memory" / "agent" / "notes"
    ns_dir.mkdir(parents=True)
    (root / "harn.toml").write_text("[package]\nname = \"big\"\n")
    lines = []
    for i in range(n_records):
        text = f"note {i}: invoice rounding uses Decimal in module billing_{i % 97} and tax table {i % 13}"
        lines.append(json.dumps({
            "type": "store", "id": str(uuid.UUID(int=i + 1)), "namespace": "agent/notes", "key": f"k/{i}",
            "value": text * 2, "text": text * 2, "tags": ["billing", f"t{i % 7}"],
            "stored_at": f"2026-05-05T10:{i // 60 % 60:02d}:{i % 60:02d}.118+00:00"}, separators=(",", ":")))
    (ns_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    return root


class RawClient:
    """Just enough of an LSP client: framing, requests, and a log of everything the server sends."""

    def __init__(self, cwd: Path, env: dict) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "harn_ls", "serve", "--stdio"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.received: list[tuple[float, dict]] = []
        self.lock = threading.Lock()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = json.loads(out.read(int(headers["content-length"])))
            with self.lock:
                self.received.append((time.monotonic(), body))
            if "method" in body and "id" in body:  # a request from the server: answer as a plain client would
                result = [{} for _ in body["params"]["items"]] if body["method"] == "workspace/configuration" else None
                self.send({"jsonrpc": "2.0", "id": body["id"], "result": result})

    def send(self, msg: dict) -> None:
        data = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
        self.proc.stdin.flush()

    def request(self, method: str, params) -> int:
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def messages(self, method: str | None = None) -> list[dict]:
        with self.lock:
            return [m for _, m in self.received if method is None or m.get("method") == method]

    def wait(self, predicate, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert self.proc.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "timed out waiting for the server"
            time.sleep(0.02)

    def close(self) -> None:
        try:
            rid = self.request("shutdown", None)
            self.wait(lambda: any(m.get("id") == rid for m in self.messages()), 10)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture(scope="module")
def big_project(tmp_path_factory) -> Path:
    return _write_project(tmp_path_factory.mktemp("progress") / "big-project")


def _start(project: Path, tmp_path: Path, capabilities: dict) -> RawClient:
    env = dict(os.environ, HARN_LS_CACHE_DIR=str(tmp_path / "cache"), HARN_LS_PROGRESS_AFTER="0",
               HARN_LS_PROGRESS_EVERY="0.05", PYTHONPATH=str(REPO))
    client = RawClient(project, env)
    rid = client.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(),
                                        "workspaceFolders": [{"uri": project.as_uri(), "name": "big"}],
                                        "capabilities": capabilities})
    client.wait(lambda: any(m.get("id") == rid for m in client.messages()))
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return client


def _load_token(client: RawClient) -> str | None:
    for m in client.messages("$/progress"):
        v = m["params"]["value"]
        if v["kind"] == "begin" and v["title"].startswith("Harn: loading"):
            return m["params"]["token"]
    return None


def test_cold_load_reports_begin_rising_reports_and_end(big_project: Path, tmp_path: Path) -> None:
    client = _start(big_project, tmp_path, {"window": {"workDoneProgress": True}})
    try:
        client.wait(lambda: (t := _load_token(client)) is not None and any(
            m["params"]["token"] == t and m["params"]["value"]["kind"] == "end" for m in client.messages("$/progress")))
        token = _load_token(client)
        creates = [m for m in client.messages("window/workDoneProgress/create") if m["params"]["token"] == token]
        assert len(creates) == 1, "the token is created before it is used"
        values = [m["params"]["value"] for m in client.messages("$/progress") if m["params"]["token"] == token]
        assert values[0]["kind"] == "begin" and "big-project" in values[0]["title"]
        assert values[-1]["kind"] == "end" and "100,000 records in 1 namespaces" in values[-1]["message"]
        reports = [v for v in values if v["kind"] == "report"]
        percentages = [v["percentage"] for v in values[:1] + reports]  # begin carries the first one
        assert len(set(percentages)) >= 3, f"rising percentages from begin on: {percentages}"
        assert percentages == sorted(percentages), "a report never goes back"
        assert any(v.get("message", "").startswith("memory logs ") and " of " in v["message"] for v in reports)
        assert all(0 <= p <= 100 for p in percentages)
        # begin comes after the create's answer, end is the last word on the token
        kinds = [v["kind"] for v in values]
        assert kinds.count("begin") == 1 and kinds.count("end") == 1
        # the same, for our own status bar
        loading = [m["params"] for m in client.messages("harn/loading") if m["params"]["title"] == values[0]["title"]]
        assert loading[-1]["done"] is True and loading[-1]["percentage"] == 100
        assert any(not p["done"] and p["percentage"] is not None and p["percentage"] < 100 for p in loading)
    finally:
        client.close()


def test_no_work_done_progress_for_a_client_that_did_not_declare_it(big_project: Path, tmp_path: Path) -> None:
    client = _start(big_project, tmp_path, {})
    try:
        client.wait(lambda: any(m["params"]["done"] and "loading" in m["params"]["title"]
                                for m in client.messages("harn/loading")))
        assert client.messages("window/workDoneProgress/create") == []
        assert client.messages("$/progress") == []
    finally:
        client.close()

"""Issue 27's three ways a cloned repository put a live `command:` link into a VS Code notification,
planted for the e2e's Restricted Mode suite. Each link, clicked, runs `touch ../markers/<name>`
through `workbench.action.terminal.newWithProfile` (a terminal whose program is `touch`, started
in the workspace folder, a sibling of run.sh's markers folder), so a click that runs it leaves a
marker file, and run.sh fails on any marker. The links are short (under 120 characters), as an
attacker's would be: the extension used to cut a HITL prompt at 120.

    link_attacks.py plant WS MARKERS        .vscode/settings.json skillRoot + a proposal named by a link
    link_attacks.py user-settings FILE MARKERS   the user's own skillRoot set to a link (shown, quoted)
    link_attacks.py hitl WS MARKERS         a HITL escalation whose prompt is a link, appended now
"""

from __future__ import annotations

import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROPOSAL_ID = "prompt-e2elink00001"
PROPOSAL_TITLE = "Fix the flaky build"
HITL_ID = "hitl_escalation_e2e-link-1"
# marker file name -> the attack that would write it
MARKERS = {"s": "the folder's skillRoot", "u": "the user's skillRoot", "p": "the proposal name", "h": "the HITL prompt"}


def link(label: str, markers: str, name: str) -> str:
    """`markers` must be `<workspace>/../markers` (run.sh's layout): the terminal starts in the workspace."""
    assert os.path.basename(markers) == "markers", markers
    args = {"config": {"executable": "/bin/touch", "args": [f"../markers/{name}"]}}
    text = f"[{label}](command:workbench.action.terminal.newWithProfile?{json.dumps(args, separators=(',', ':'))})"
    return text


def plant(ws: str, markers: str) -> None:
    path = os.path.join(ws, ".vscode", "settings.json")
    settings = json.load(open(path)) if os.path.exists(path) else {}
    settings["harnState.skillRoot"] = link("Fix it", markers, "s")
    json.dump(settings, open(path, "w"), indent=2)
    events = os.path.join(ws, ".harn/memory/project/pattern-learning/events.jsonl")
    lines = [json.loads(x) for x in open(events) if x.strip()]
    rec = json.loads(json.dumps(next(r for r in lines if str(r.get("key", "")).startswith("pending:"))))
    value = rec["value"]
    value.update({"id": PROPOSAL_ID, "name": link("Fix it", markers, "p"), "title": PROPOSAL_TITLE})
    rec.update({"id": f"pending_{PROPOSAL_ID}_0000", "key": f"pending:{PROPOSAL_ID}",
                "text": json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)})
    with open(events, "a") as fh:
        fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")


def user_settings(file: str, markers: str) -> None:
    settings = json.load(open(file)) if os.path.exists(file) else {}
    settings["harnState.skillRoot"] = link("Open", markers, "u")
    json.dump(settings, open(file, "w"), indent=2)


def hitl(ws: str, markers: str) -> None:
    sys.path.insert(0, REPO)
    from tests.helpers import event_log_writer as W

    conn = W.open_log(os.path.join(ws, ".harn", "events.sqlite"))
    try:
        W.waitpoint_open(conn, HITL_ID, kind="escalation")
        env = {"request_id": HITL_ID, "kind": "escalation", "agent": "billing-agent", "trace_id": "trace_e2e_link",
               "requested_at": "2026-05-04T09:20:00Z",
               "payload": {"role": "oncall-lead", "reason": link("Go", markers, "h")}}
        W.append(conn, "hitl.escalations", "hitl.escalation_issued", env, {"request_id": HITL_ID, "trace_id": "trace_e2e_link"})
    finally:
        conn.close()


if __name__ == "__main__":
    verb, *rest = sys.argv[1:]
    {"plant": plant, "user-settings": user_settings, "hitl": hitl}[verb](*rest)

"""The rest of `.harn/` (harn-formats §O): store, workflow mailboxes, receipts with their
signature status, worktrees, staged crystallization candidates, lock files, the embedding cache.

All readers are bounded (file sizes, entry counts) and never write.
"""

from __future__ import annotations

import base64
import os
from hashlib import sha256
from typing import TYPE_CHECKING

import orjson

from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.locks import probe_flock, read_flock_table
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject, JsonValue
from harn_ls.util.safe_read import SMALL_STATE_CAP, ReadRefused, link_problem, read_confined, refusal_text, resolves_inside

if TYPE_CHECKING:
    from harn_ls.formats.state_file_types import Candidate, EmbedCache, LockFile, Mailbox, Receipt, Store, Worktree

# The records these readers return are defined in state_file_types.py and each reader imports its own
# where it makes the first one: most projects have no state files, and creating the seven dataclasses
# cost every one-shot command ~7 ms.

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_ENTRIES = 5000

CODE_STORE = "HL-STORE-001"
CODE_MAILBOX = "HL-WF-001"
CODE_RECEIPT = "HL-RCPT-001"
CODE_RECEIPT_SIG = "HL-RCPT-002"
CODE_RECEIPT_KEY_ID = "HL-RCPT-003"  # a key_id that is not the id of the key beside it
CODE_WORKTREE = "HL-WT-001"
CODE_CANDIDATE = "HL-CRYS-001"
CODE_EMBED = "HL-EMB-001"


def read_json(path: str, limit: int = MAX_FILE_BYTES, root: str | None = None, *,
              absent_ok: bool = False) -> tuple[JsonValue, str | None]:
    """(value, None) or (None, the reason): a regular file inside `root`, never blocking (safe_read). Shared
    with formats/newer_state.py. `absent_ok`: a missing file is (None, None), told by the open itself."""
    try:
        data = read_confined(path, root, limit)
    except ReadRefused as exc:
        return None, exc.reason
    except OSError as exc:
        return None, None if absent_ok and isinstance(exc, FileNotFoundError) else refusal_text(exc)
    try:
        return orjson.loads(data), None
    except (orjson.JSONDecodeError, RecursionError):
        return None, "not valid JSON (torn write? retried on the next change)"


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))[:MAX_ENTRIES]
    except OSError:
        return []


# ------------------------------------------------------------------------------------------------ store (§O.1)
def read_store(path: str, root: str | None = None) -> Store | None:
    if not os.path.isfile(path):
        return None
    # start-up: the record class loads with the first record (see the top)
    from harn_ls.formats.state_file_types import Store

    st = Store(path)
    value, err = read_json(path, root=root)
    if err:
        st.problems.append(Problem(path, 0, CODE_STORE, f"store {err}; Harn treats an unreadable store as empty and "
                                                         "overwrites it on the next store_set", Severity.WARNING))
    elif not isinstance(value, dict):
        st.problems.append(Problem(path, 0, CODE_STORE, "store is not a JSON object; Harn treats it as empty",
                                   Severity.WARNING))
    else:
        st.entries = value
    return st


# ------------------------------------------------------------------------------------- workflow mailboxes (§O.2)
def read_mailboxes(workflows_dir: str, problems: list[Problem], root: str | None = None) -> list[Mailbox]:
    out = []
    for name in _listdir(workflows_dir):
        path = os.path.join(workflows_dir, name, "state.json")
        if not os.path.isfile(path) or not resolves_inside(path, workflows_dir):
            continue
        value, err = read_json(path, root=root)
        if err or not isinstance(value, dict):
            problems.append(Problem(path, 0, CODE_MAILBOX, f"workflow mailbox {err or 'is not a JSON object'}",
                                    Severity.WARNING))
            continue
        # start-up: the record class loads with the first record (see the top)
        from harn_ls.formats.state_file_types import Mailbox

        mb = Mailbox(str(value.get("workflow_id") or name), path)
        mb.paused = value.get("paused") is True
        g = value.get("generation")
        mb.generation = g if isinstance(g, int) and not isinstance(g, bool) else 1
        mail = value.get("mailbox")
        mb.pending = [m for m in mail if isinstance(m, dict)][:MAX_ENTRIES] if isinstance(mail, list) else []
        q = value.get("queries")
        mb.queries = q if isinstance(q, dict) else {}
        responses = r if isinstance(r := value.get("responses"), dict) else {}
        mb.unanswered_updates = sum(1 for m in mb.pending if m.get("kind") == "update" and m.get("request_id") not in responses)
        out.append(mb)
    return out


# ----------------------------------------------------------------------------------------------- receipts (§O.3)
def _sha256_prefixed(text: str) -> str:
    return "sha256:" + sha256(text.encode("utf-8")).hexdigest()


def _dumps(value: JsonValue) -> str:
    # serde_json's compact text (Harn hashes that): keys in the order they were parsed, non-ASCII kept,
    # ryu floats (1e20, where orjson writes 1e+20)
    return serde_compact(value)


def record_hash(topic: str, event_id: int, ev: JsonObject, order: str) -> str:
    headers = h if isinstance(h := ev.get("headers"), dict) else {}
    hdrs = {k: headers[k] for k in sorted(headers) if k != "harn.provenance.record_hash"}
    if order == "source":
        w = {"topic": topic, "event_id": event_id, "kind": ev.get("kind"), "payload": ev.get("payload"),
             "headers": hdrs, "occurred_at_ms": ev.get("occurred_at_ms")}
    else:
        w = {"event_id": event_id, "headers": hdrs, "kind": ev.get("kind"), "occurred_at_ms": ev.get("occurred_at_ms"),
             "payload": ev.get("payload"), "topic": topic}
    return _sha256_prefixed(_dumps(w))


def _merkle_root(hashes: list[str]) -> str:
    if not hashes:
        return _sha256_prefixed("")
    level = list(hashes)
    while len(level) > 1:
        nxt: list[str] = []
        for i in range(0, len(level), 2):
            left = level[i]
            right = level[i + 1] if i + 1 < len(level) else left
            nxt.append(_sha256_prefixed(left + right))
        level = nxt
    return level[0]


def verify_receipt(receipt: JsonValue) -> list[str]:
    """Harn's `verify_receipt` (§O.3), ported. Returns the errors (empty = verified)."""
    errors: list[str] = []
    if not isinstance(receipt, dict):
        return ["receipt is not a JSON object"]
    if receipt.get("schema") != "harn-provenance-receipt-v1":
        errors.append(f"unknown receipt schema {str(receipt.get('schema'))[:60]!r}")
    log = lg if isinstance(lg := receipt.get("event_log"), dict) else {}
    events = [e for e in log.get("events", []) if isinstance(e, dict)] if isinstance(log.get("events"), list) else []
    prev_by_topic: dict[str, str | None] = {}
    ordered = sorted(events, key=lambda e: (str(e.get("topic")), e.get("event_id") if isinstance(e.get("event_id"), int) else 0))
    for e in ordered:
        topic, eid = e.get("topic"), e.get("event_id")
        label = f"{topic}#{eid}"
        if not isinstance(topic, str):
            # ReceiptEvent.topic is a String: Harn cannot load such a receipt (and a list or object
            # here cannot key the chain by topic)
            errors.append(f"event {str(eid)[:40]}: topic is a JSON {type(topic).__name__}, not a string")
            continue
        headers = h if isinstance(h := e.get("headers"), dict) else {}
        expected_prev = prev_by_topic.get(topic) if topic in prev_by_topic else None
        if e.get("prev_hash") != expected_prev:
            errors.append(f"{label}: prev_hash does not match the previous event's record_hash")
        if headers.get("harn.provenance.prev_hash") != e.get("prev_hash"):
            errors.append(f"{label}: prev_hash header does not match prev_hash")
        if headers.get("harn.provenance.record_hash") != e.get("record_hash"):
            errors.append(f"{label}: record_hash header does not match record_hash")
        if isinstance(topic, str) and isinstance(eid, int):
            if e.get("record_hash") not in (record_hash(topic, eid, e, "source"), record_hash(topic, eid, e, "sorted")):
                errors.append(f"{label}: record_hash does not match the event's content")
        prev_by_topic[topic] = e.get("record_hash")
    chain = c if isinstance(c := receipt.get("chain"), dict) else {}
    root = _merkle_root([str(e.get("record_hash")) for e in ordered])
    if chain.get("event_root_hash") != root:
        errors.append("event_root_hash does not match the events")
    unsigned = orjson.loads(orjson.dumps(receipt))
    if isinstance(unsigned.get("chain"), dict):
        unsigned["chain"]["receipt_hash"] = ""
    unsigned["signatures"] = []
    canonical = _dumps(unsigned)
    if chain.get("receipt_hash") != _sha256_prefixed(canonical):
        errors.append("receipt_hash does not match the receipt")
    sigs = s if isinstance(s := receipt.get("signatures"), list) else []
    valid = 0
    for i, sig in enumerate(sigs):
        if not isinstance(sig, dict) or sig.get("algorithm") != "ed25519":
            errors.append(f"signature {i}: unsupported algorithm "
                          f"{str((sig or {}).get('algorithm') if isinstance(sig, dict) else sig)[:40]!r}")
            continue
        if _ed25519_ok(sig, b"harn provenance receipt v1\n" + canonical.encode("utf-8")):
            valid += 1
        else:
            errors.append(f"signature {i} ({sig.get('key_id')}): does not verify")
    if valid == 0 and not any("signature" in e for e in errors):
        errors.append("no valid signature")
    return errors


def receipt_key_id(public_key: bytes) -> str:
    """Harn's `key_id` for a verifying key: "ed25519:" + the first 16 bytes of sha256(key), in hex."""
    return "ed25519:" + sha256(public_key).hexdigest()[:32]


def _public_key(sig: JsonObject) -> bytes | None:
    try:
        raw = base64.b64decode(str(sig.get("public_key_base64")), validate=True)
    except (ValueError, TypeError):
        return None
    return raw if len(raw) == 32 else None


def key_id_errors(receipt: JsonValue) -> list[str]:
    """A signature whose `key_id` is not the id of the key it carries. Harn's own `verify_receipt`
    does not check this (it would say "verified"); harn-ls does, because users are told to pin the
    key id: a receipt re-signed with a fresh key under the genuine key id must not pass for it."""
    sigs = s if isinstance(receipt, dict) and isinstance(s := receipt.get("signatures"), list) else []
    out = []
    for i, sig in enumerate(sigs):
        if not isinstance(sig, dict):
            continue
        key = _public_key(sig)
        if key is None:
            continue  # a bad key is already one of Harn's errors
        if sig.get("key_id") != receipt_key_id(key):
            out.append(f"signature {i}: key_id {str(sig.get('key_id'))[:80]!r} is not the id of its public key "
                       f"({receipt_key_id(key)}); a receipt re-signed under another key's id")
    return out


def trusted_receipt_keys(receipt: JsonValue, trusted_signers_dir: str | None) -> list[str]:
    """Key ids of the receipt's signatures whose public key is one the user trusts: the same raw key
    as `<trusted_signers_dir>/<sha256 of the key, hex>.pub` (the folder Harn keeps skill signers in).
    Only a valid signature's key counts (the caller has verified them all)."""
    if not trusted_signers_dir or not isinstance(receipt, dict) or not isinstance(receipt.get("signatures"), list):
        return []
    # start-up: cryptography (OpenSSL bindings, ~40 ms) loads only when a receipt is read
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key

    out = []
    for sig in receipt["signatures"]:
        key = _public_key(sig) if isinstance(sig, dict) else None
        if key is None:
            continue
        path = os.path.join(trusted_signers_dir, sha256(key).hexdigest() + ".pub")
        try:
            pem = load_pem_public_key(read_confined(path, None, SMALL_STATE_CAP))
            if pem.public_bytes(Encoding.Raw, PublicFormat.Raw) == key:
                out.append(str(sig.get("key_id")))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
    return out


def _ed25519_ok(sig: JsonObject, message: bytes) -> bool:
    try:
        # start-up: cryptography (OpenSSL bindings, ~40 ms) loads only when a receipt is verified
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(str(sig.get("public_key_base64")), validate=True))
        key.verify(base64.b64decode(str(sig.get("signature_base64")), validate=True), message)
        return True
    except (InvalidSignature, ValueError, TypeError):
        return False


def read_receipts(receipts_dir: str, problems: list[Problem], root: str | None = None,
                  trusted_signers_dir: str | None = None) -> list[Receipt]:
    out = []
    for name in _listdir(receipts_dir):
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = os.path.join(receipts_dir, name)
        if not os.path.isfile(path) or not resolves_inside(path, receipts_dir):
            continue
        value, err = read_json(path, root=root)
        rid = name[:-5]
        # start-up: the record class loads with the first record (see the top)
        from harn_ls.formats.state_file_types import Receipt

        if err or not isinstance(value, dict):
            msg = err or "not a JSON object"
            problems.append(Problem(path, 0, CODE_RECEIPT, f"receipt {msg}", Severity.WARNING))
            out.append(Receipt(rid, path, "unreadable", [msg]))
            continue
        errors = verify_receipt(value)  # Harn's verdict
        mismatched = key_id_errors(value)
        if errors or mismatched:
            status = "failed"
        else:
            status = "verified" if trusted_receipt_keys(value, trusted_signers_dir) else "self-signed"
        r = Receipt(str(value.get("receipt_id") or rid), path, status, errors + mismatched)
        r.issued_at = str(value.get("issued_at") or "")
        run = rn if isinstance(rn := value.get("run"), dict) else {}
        r.pipeline, r.run_status = str(run.get("pipeline") or ""), str(run.get("status") or "")
        log = lg if isinstance(lg := value.get("event_log"), dict) else {}
        r.event_count = len(evs) if isinstance(evs := log.get("events"), list) else 0
        chain = c if isinstance(c := value.get("chain"), dict) else {}
        r.receipt_hash, r.event_root_hash = str(chain.get("receipt_hash") or ""), str(chain.get("event_root_hash") or "")
        r.key_ids = [str(s.get("key_id")) for s in value.get("signatures", []) if isinstance(s, dict)] \
            if isinstance(value.get("signatures"), list) else []
        r.data = value
        if mismatched:
            problems.append(Problem(path, 0, CODE_RECEIPT_KEY_ID, f"receipt {r.id}: {mismatched[0]}", Severity.ERROR))
        if errors:
            problems.append(Problem(path, 0, CODE_RECEIPT_SIG,
                f"receipt {r.id} does not verify: {errors[0]}" + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""),
                Severity.ERROR))
        out.append(r)
    return out


# ---------------------------------------------------------------------------------------------- worktrees (§O.4)
def _pointer(path: str, root: str | None, cap: int, problems: list[Problem]) -> str | None:
    """The text of a small git pointer file (`.git`, `HEAD`, `gitdir`), or None (absent, or refused
    with a problem naming it: a committed symlink to /dev/stdin or a FIFO must never be waited on)."""
    try:
        return read_confined(path, root, SMALL_STATE_CAP)[:cap].decode("utf-8", "replace").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        problems.append(Problem(path, 0, CODE_WORKTREE, f"git pointer {path}: {refusal_text(exc)}", Severity.WARNING))
        return None


def _worktree_at(path: str, name: str, root: str | None, problems: list[Problem]) -> Worktree | None:
    git = os.path.join(path, ".git")
    if not os.path.lexists(git) or os.path.isdir(git):
        return None
    # start-up: the record class loads with the first record (see the top)
    from harn_ls.formats.state_file_types import Worktree

    line = _pointer(git, root, 4096, problems)
    if line is None:
        return Worktree(name, path, None, True, "cannot read .git")
    if not line.startswith("gitdir:"):
        return Worktree(name, path, None, True, ".git file has no gitdir line")
    gitdir = line[len("gitdir:"):].strip()
    if not os.path.isabs(gitdir):
        gitdir = os.path.normpath(os.path.join(path, gitdir))
    if not os.path.isdir(gitdir):
        return Worktree(name, path, gitdir, True, "its git metadata is gone (pruned or repository moved)")
    if root is not None and not resolves_inside(gitdir, root):
        problems.append(Problem(git, 0, CODE_WORKTREE, f"its gitdir {gitdir} leaves the project; not followed",
                                Severity.WARNING))
        return Worktree(name, path, gitdir, True, "its git metadata is outside the project; not read")
    wt = Worktree(name, path, gitdir, False)
    head = _pointer(os.path.join(gitdir, "HEAD"), root, 512, problems)
    if head is not None and head.startswith("ref: refs/heads/"):
        wt.branch = head[len("ref: refs/heads/"):]
    points = _pointer(os.path.join(gitdir, "gitdir"), root, 4096, problems)
    if points is not None and os.path.normpath(os.path.dirname(points)) != os.path.normpath(path) and \
            os.path.realpath(os.path.dirname(points)) != os.path.realpath(path):
        wt.stale, wt.reason = True, "git records this worktree at another path"
    return wt


def report_link(path: str, root: str | None, problems: list[Problem]) -> bool:
    """A symlink skipped by a reader: a problem naming it when it leaves `root` or loops (then True).
    Shared with formats/newer_state.py."""
    found = link_problem(path, root or os.path.dirname(path))
    if found is not None:
        problems.append(Problem(path, 0, found[0], found[1], Severity.WARNING))
    return found is not None


def read_worktrees(worktrees_dir: str, problems: list[Problem], root: str | None = None) -> list[Worktree]:
    """Two levels: `<repo>/<worker_id>` (workers) and `<name>` (std/worktree). Never recurses into checkouts.
    Every pointer is read through safe_read inside `root` (default: the worktrees folder)."""
    out = []
    root = root or worktrees_dir
    for first in _listdir(worktrees_dir):
        p1 = os.path.join(worktrees_dir, first)
        if os.path.islink(p1):
            report_link(p1, root, problems)
            continue
        if not os.path.isdir(p1):
            continue
        wt = _worktree_at(p1, first, root, problems)
        if wt is not None:
            out.append(wt)
            continue
        for second in _listdir(p1):
            p2 = os.path.join(p1, second)
            if os.path.islink(p2):
                report_link(p2, root, problems)
                continue
            if not os.path.isdir(p2):
                continue
            wt = _worktree_at(p2, f"{first}/{second}", root, problems)
            if wt is not None:
                out.append(wt)
            else:
                # start-up: the record class loads with the first record (see the top)
                from harn_ls.formats.state_file_types import Worktree

                out.append(Worktree(f"{first}/{second}", p2, None, True, "no .git file: not a git worktree (left over?)"))
    for wt in out:
        if wt.stale:
            problems.append(Problem(wt.path, 0, CODE_WORKTREE, f"stale worktree {wt.name}: {wt.reason}", Severity.INFO))
    return out


# ---------------------------------------------------------------------------------------- crystallization (§O.5)
# Where Harn stages executable candidates: newest first. `.burin/crystallization/` is what Harn wrote
# before it moved them under `.harn/` (pattern_knowledge.harn @0526ba57 `pl_write_candidate`); it is
# read as a compatibility root, never written.
CANDIDATE_ROOTS = (("harn", (".harn", "crystallization")), ("burin", (".burin", "crystallization")))


def candidate_dirs(project_root: str) -> list[tuple[str, str]]:
    """(layout, folder) for every root candidates are read from, newest Harn's first."""
    return [(layout, os.path.join(project_root, *parts)) for layout, parts in CANDIDATE_ROOTS]


def read_all_candidates(project_root: str, problems: list[Problem]) -> list[Candidate]:
    """Candidates from both roots. The layout tells which Harn staged a folder; an id staged under
    both is shown once: the newer staging (`staged_at`, else the folder's mtime) wins, the other
    is named in `shadowed`."""
    by_id: dict[str, Candidate] = {}
    for layout, folder in candidate_dirs(project_root):
        for cand in read_candidates(folder, problems, project_root):
            cand.layout = layout
            have = by_id.get(cand.id)
            if have is None:
                by_id[cand.id] = cand
                continue
            newer, older = (cand, have) if _staged_key(cand) > _staged_key(have) else (have, cand)
            newer.shadowed = have.shadowed + [older.path]
            by_id[cand.id] = newer
    return list(by_id.values())


def _staged_key(c: Candidate) -> tuple[str, float, bool]:
    at = a if isinstance(a := c.proposal.get("staged_at"), str) else ""
    try:
        mtime = os.stat(c.path).st_mtime
    except OSError:
        mtime = 0.0
    return (at, mtime, c.layout == "harn")


def read_candidates(crys_dir: str, problems: list[Problem], root: str | None = None) -> list[Candidate]:
    out = []
    for name in _listdir(crys_dir):
        path = os.path.join(crys_dir, name)
        if os.path.islink(path):
            report_link(path, root, problems)
            continue
        if name.startswith(".") or not os.path.isdir(path):
            continue
        files = []
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            dirnames.sort()
            for entry in dirnames + filenames:  # linked files and folders of a candidate: not read, reported
                if os.path.islink(os.path.join(dirpath, entry)):
                    report_link(os.path.join(dirpath, entry), root, problems)
            for f in sorted(filenames):
                files.append(os.path.relpath(os.path.join(dirpath, f), path).replace(os.sep, "/"))
                if len(files) >= 200:
                    break
            if len(files) >= 200:
                break
        prop_path = os.path.join(path, "proposal.json")
        # start-up: the record class loads with the first record (see the top)
        from harn_ls.formats.state_file_types import Candidate

        cand = Candidate(name, path, os.path.isfile(prop_path), files)
        if cand.complete:
            value, err = read_json(prop_path, 4 * 1024 * 1024, root)
            if err or not isinstance(value, dict):
                problems.append(Problem(prop_path, 0, CODE_CANDIDATE, f"candidate proposal {err or 'is not a JSON object'}",
                                        Severity.WARNING))
            else:
                cand.proposal = value
        out.append(cand)
    return out


# ------------------------------------------------------------------------------------------ locks (§O.6, §O.7)
def read_locks(state_root: str) -> list[LockFile]:
    found: list[tuple[str, str, str]] = []
    ck = os.path.join(state_root, "checkpoints")
    for name in _listdir(ck):
        if name.endswith(".lock"):
            found.append((os.path.join(ck, name), "checkpoint", name[:-5]))
    aw = os.path.join(state_root, "agent-run-writers")
    for name in _listdir(aw):
        if name.endswith(".lock"):
            found.append((os.path.join(aw, name), "project" if name == "project.lock" else "session", name[:-5]))
    # (/proc/locks only when there is a lock file to look up: its first read waits for the kernel, ms)
    table = read_flock_table() if found else None
    out = []
    state: bool | None
    for path, kind, name in found:
        if not os.path.lexists(path):
            continue  # gone since the listing
        if table is not None:
            state = table.state(path)
        elif kind == "checkpoint":
            state = probe_flock(path)  # no /proc/locks: a checkpoint writer retries past the probe (locks.py)
        else:
            state = None  # a session writer would fail on a probe: never probed
        # start-up: the record class loads with the first record (see the top)
        from harn_ls.formats.state_file_types import LockFile

        out.append(LockFile(path, kind, name, state))
    return out


# ----------------------------------------------------------------------------------------- embed cache (§O.8)
def read_embed_cache(memory_root: str, problems: list[Problem], cap: int = 200_000) -> list[EmbedCache]:
    """Count `<memory_root>/<ns…>/vectors/<hint>/*.json` files (never read them)."""
    out: list[EmbedCache] = []
    seen = 0
    if not os.path.isdir(memory_root):
        return out
    for dirpath, dirnames, _filenames in os.walk(memory_root, followlinks=False):
        if os.path.basename(dirpath) == "vectors":
            ns = os.path.relpath(os.path.dirname(dirpath), memory_root).replace(os.sep, "/")
            for hint in sorted(dirnames):
                hdir = os.path.join(dirpath, hint)
                n = size = 0
                try:
                    with os.scandir(hdir) as it:
                        for entry in it:
                            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                                n += 1
                                size += entry.stat(follow_symlinks=False).st_size
                                seen += 1
                                if seen >= cap:
                                    break
                except OSError:
                    pass
                # start-up: the record class loads with the first record (see the top)
                from harn_ls.formats.state_file_types import EmbedCache

                out.append(EmbedCache(ns, hint, n, size))
            dirnames[:] = []
            continue
        dirnames.sort()
        if seen >= cap:
            problems.append(Problem(memory_root, 0, CODE_EMBED, f"more than {cap} cached vectors; counts are partial",
                                    Severity.INFO))
            break
    return out

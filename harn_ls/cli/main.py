"""Command line: `harn-ls serve|inspect|show|recall|proposals|hitl|probe|watch`.

Imports stay lazy: lsprotocol alone costs ~0.5 s and only `serve` needs it.
Exit codes: 0 ok (also when the data has problems), 1 failed action,
2 unusable arguments or path. Errors are one line on stderr.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING

from harn_ls import __version__
from harn_ls.cli.args import RECALL_K, OutOfRange, quick_args, seconds, whole_number

if TYPE_CHECKING:
    import argparse

    from harn_ls.model.workspace import Workspace
    from harn_ls.render import RenderSettings
    from harn_ls.render.progress_bar import TerminalBar


class UsageError(Exception):
    """Unusable arguments or path: exit 2."""


class ActionError(Exception):
    """A requested action failed: exit 1."""


def _target(path: str | None) -> str:
    target = os.path.abspath(path or os.getcwd())
    if not os.path.exists(target):
        raise UsageError(f"no such file or directory: {path}")
    if not os.access(target, os.R_OK):
        raise UsageError(f"cannot read: {path}")
    return target


def _pause_collector() -> None:
    """A one-shot command builds millions of long-lived objects (the modules' classes and functions as
    they load, then the model) and frees them at exit: the cyclic collector would only rescan them
    (6-17 ms of a warm `inspect --json` while importing, seconds while loading a big project)."""
    gc.disable()


def _project(path: str | None, args=None, memory_only: bool = False, defer_facts: bool = False,
             share: float = 1.0) -> Workspace:
    """The project read; on a terminal, a progress bar on stderr meanwhile (`share`: the part of the
    command's bar the read stands for; the rest is the caller's, e.g. `recall`'s index)."""
    _pause_collector()
    target = _target(path)
    # start-up: the workspace loads every format parser (~0.5 s); --help and usage errors skip it
    from harn_ls.model.workspace import Workspace

    use_cache = args is not None and not getattr(args, "no_cache", False)
    progress = _start_progress(args, f"harn-ls: {os.path.basename(target) or target}")
    if progress is not None:
        progress.within(0.0, share)
    ws = Workspace.load(target, cache=use_cache, memory_only=memory_only, defer_facts=defer_facts,
                          one_shot=defer_facts, progress=progress)
    if share >= 1.0:
        _stop_progress()
    return ws


_BAR: TerminalBar | None = None  # the progress bar drawn while this command works (render/progress_bar.py), if any


def _start_progress(args, title: str):
    """A WorkProgress drawn on stderr, when a person watches: stderr a terminal, no --quiet. None otherwise."""
    global _BAR
    stream = getattr(sys.stderr, "wrapped", sys.stderr)  # (the bar's own \r and erase, not escaped)
    try:
        on_terminal = stream.isatty()
    except (AttributeError, ValueError):
        on_terminal = False
    if not on_terminal or getattr(args, "quiet", False):
        return None
    _stop_progress()
    # start-up: the bar (and harn_ls.render, ~70 ms) loads only when a terminal will show it
    from harn_ls.render.progress_bar import TerminalBar
    from harn_ls.util.progress import WorkProgress

    # the folder's name is data: nothing in it may drive the terminal
    progress = WorkProgress("".join(c if c.isprintable() else "?" for c in title))
    _BAR = TerminalBar(progress, stream)
    _BAR.__enter__()
    return progress


def _stop_progress() -> None:
    """Take the bar away (before the command's output, and on every way out)."""
    global _BAR
    if _BAR is not None:
        bar, _BAR = _BAR, None
        bar.progress.finish()
        bar.close()


def _dump(obj) -> None:
    # start-up: orjson is needed only by --json output
    import orjson

    # start-up: harn_ls.render (~70 ms) loads once the arguments parsed (main), never at import
    from harn_ls.render.terminal import safe_for_terminal

    out = sys.stdout
    out.flush()
    # the newline written by orjson: `+ b"\n"` copied the whole answer (6.6 MB for a 100k-event inspect)
    data = orjson.dumps(obj, default=str,
                        option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)
    # orjson escapes C0 controls but writes DEL, C1 and bidi controls raw; the two C scans find any byte
    # 0x7f-0xff in milliseconds where a regex character class took ~75 ms on a 4 MB answer
    if not data.isascii() or b"\x7f" in data:
        data = safe_for_terminal(data.decode("utf-8")).encode("utf-8")
    buf = getattr(out, "buffer", None)
    if buf is not None:
        buf.write(data)
        buf.flush()
    else:
        out.write(data.decode("utf-8"))


def _done(ws, args) -> None:
    """After the answer is out: bring the state cache up to date for the next run."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    progress = _start_progress(args, "harn-ls: saving the state cache") if ws.keeps_cache else None
    if progress is not None:
        progress.phase("writing", 1, 1.0)
    try:
        ws.save_cache()
    finally:
        _stop_progress()


def cmd_inspect(args) -> int:
    _pause_collector()  # before the renderers load
    # start-up: the renderers load only for the command that prints them
    from harn_ls.render.inspect import inspect_json, inspect_text

    # --json prints the facts of unchanged namespaces in their cached form (never decoded)
    ws = _project(args.path, args, defer_facts=args.json)
    if args.json:
        _dump(inspect_json(ws, facts_fragment=True))
    else:
        sys.stdout.write(inspect_text(ws))
    _done(ws, args)
    return 0


def _path_and_word(words: list[str]) -> tuple[str | None, str]:
    """`[PATH] WORD`: the project path (None: the current folder) and the word."""
    if len(words) == 1:
        return None, words[0]
    if len(words) == 2:
        return words[0], words[1]
    raise UsageError("wrong number of arguments")


def cmd_show(args) -> int:
    # start-up: the renderers load only for the command that prints them
    from harn_ls.render import RenderSettings

    path, uri = _path_and_word(args.args)
    ws = _project(path, args)
    if "version=" in uri:
        # the history `serve` / `watch` keep outside the project, read (nothing recorded by a read)
        from harn_ls.cache.checkpoint_history import CheckpointHistory  # start-up: only for a ?version= document

        ws.checkpoint_history = CheckpointHistory.for_project(ws.root)
    return _print_document(ws, uri, args, RenderSettings(show_private=args.show_private))


def cmd_compare(args) -> int:
    # start-up: the renderers load only for the command that prints them
    from harn_ls.render import make_uri

    ws = _project(args.path, args)
    return _print_document(ws, make_uri("compare", f"{args.run_a}/{args.run_b}"), args)


def _print_document(ws: Workspace, uri: str, args, settings: RenderSettings | None = None) -> int:
    """The document at `uri` in `args.format`, then the state cache brought up to date."""
    # start-up: the renderers load only for the command that prints them
    from harn_ls.render import UriError, render_uri

    try:
        text = render_uri(ws, uri, settings)
    except UriError as exc:
        raise UsageError(str(exc)) from None
    _write_document(text, args.format)
    _done(ws, args)
    return 0


def _write_document(text: str, fmt: str) -> None:
    """text: Markdown without picture lines (the tables carry the same numbers); md: as served; svg: the pictures."""
    # start-up: the renderers load only for the command that prints them
    from harn_ls.render.svg import extract_pictures, strip_pictures

    # start-up: harn_ls.render (~70 ms) loads once the arguments parsed (main), never at import
    from harn_ls.render.terminal import markdown_to_text

    if fmt == "svg":
        pictures = extract_pictures(text)
        if not pictures:
            raise UsageError("this document has no picture (pictures: run timelines, memory growth, recall score bars)")
        sys.stdout.write(pictures[0] + "\n")
    elif fmt == "md":
        sys.stdout.write(text)
    else:
        sys.stdout.write(markdown_to_text(strip_pictures(text)))


def cmd_recall(args) -> int:
    _pause_collector()  # before the recall renderers and numpy load
    # start-up: recall loads numpy and the index (~0.3 s); only `recall` needs it
    from harn_ls.render.recall import recall_json, render_recall_markdown

    path, query = _path_and_word(args.args)
    ws = _project(path, args, memory_only=True, share=0.5)  # recall needs the memory namespaces only
    if args.namespace is not None and args.namespace not in ws.memory:
        _stop_progress()
        raise UsageError(f"unknown namespace: {args.namespace}")
    if _BAR is not None:  # the index build is the other half of a cold recall's time
        _BAR.progress.within(0.5, 1.0)
        ws.build_recall(_BAR.progress)
    _stop_progress()
    result = ws.recall.recall(query, k=args.k, namespace=args.namespace, explain=args.explain)
    if args.json:
        _dump(recall_json(result))
    else:
        _write_document(render_recall_markdown(result, query, args.namespace), "text")
    _done(ws, args)
    return 0


def _path_verb_rest(words: list[str], verbs: tuple[str, ...], usage: str) -> tuple[str | None, str, list[str]]:
    """`[PATH] VERB REST...` of a command with verbs: the project path (None: the current folder), the
    verb and the words after it."""
    rest = list(words)
    path = rest.pop(0) if rest and rest[0] not in verbs else None
    if not rest or rest[0] not in verbs:
        raise UsageError(f"expected one of: {usage}")
    return path, rest[0], rest[1:]


def cmd_proposals(args) -> int:
    # start-up: the actions load the workspace and the writers; only this command needs them
    from harn_ls.actions import ActionFailed
    from harn_ls.actions import proposals as actions

    path, verb, rest = _path_verb_rest(args.args, ("list", "accept", "reject"), "list, accept ID, reject ID")
    ws = _project(path)
    if verb == "list":
        out = actions.list_proposals(ws, include_suppressed=args.all)
        if args.json:
            _dump(out)
        else:
            if not out:
                sys.stdout.write("no pending proposals\n")
            for p in out:
                flag = f" (suppressed until {p['suppressed_until']})" if p.get("suppressed_until") else ""
                sys.stdout.write(f"{p['id']}  {p['kind']:<13} support {p['support']:<3} {p['name']}{flag}\n")
        return 0
    if len(rest) != 1:
        raise UsageError(f"{verb} needs exactly one proposal ID")
    try:
        if verb == "accept":
            result = actions.accept_proposal(ws, rest[0], skill_root=args.skill_root)
        else:
            result = actions.reject_proposal(ws, rest[0], days=args.days)
    except ActionFailed as exc:
        raise ActionError(str(exc)) from None
    if args.json:
        _dump(result)
    else:
        sys.stdout.write(result.get("message", "done") + "\n")
    if result.get("warning"):
        sys.stderr.write(f"warning: {result['warning']}\n")
    return 0


def cmd_hitl(args) -> int:
    """`hitl [PATH] list|approve|deny|answer|accept|decline|finish ID [VALUE]` (issue 33)."""
    # start-up: the HITL writer loads only for this command
    from harn_ls.actions.hitl import answer as HA

    path, verb, rest = _path_verb_rest(args.args, ("list", *HA.ACTIONS, "finish"),
                                       "list, approve ID, deny ID, answer ID VALUE, accept ID, decline ID, finish ID")
    ws = _project(path)
    if verb == "list":
        rows = HA.request_rows(ws, include_resolved=args.all)
        if args.json:
            _dump(rows)
        elif not rows:
            sys.stdout.write("nothing is waiting for a human\n")
        for r in ([] if args.json else rows):
            extra = f" {r['quorum_text']}" if r["quorum_text"] else ""
            flag = "  (answered, not finished: run `harn-ls hitl finish`)" if r["unfinished"] else ""
            sys.stdout.write(f"{r['request_id']}  {r['kind']:<12} {r['state']}{extra}  {r['prompt'][:80]!r}{flag}\n")
        return 0
    want = 2 if verb == "answer" else 1
    if len(rest) != want:
        raise UsageError(f"{verb} needs {'ID VALUE' if want == 2 else 'exactly one ID'}")
    # start-up: getpass only for the HITL answers
    from harn_ls.util.portable import os_user

    reviewer = args.reviewer if args.reviewer is not None else os_user()
    try:
        if verb == "finish":
            res = HA.finish_in(ws, rest[0])
        else:
            res = HA.answer_in(ws, rest[0], verb, reviewer=reviewer, reason=args.reason,
                               answer_text=rest[1] if verb == "answer" else None)
    except HA.ActionFailed as exc:
        raise ActionError(str(exc)) from None
    if args.json:
        _dump(res.to_json())
    else:
        sys.stdout.write(f"{res.request_id}: {res.outcome} — {res.path_used}\n")
        for w in res.written:
            sys.stdout.write(f"  appended {w.topic}#{w.event_id} {w.kind}\n")
        if res.note:
            sys.stdout.write(f"  note: {res.note}\n")
    return 0


def cmd_probe(args) -> int:
    # start-up: the actions load the workspace and the writers; only this command needs them
    from harn_ls.actions import ActionFailed, probes

    if args.kind != "typecheck":
        raise UsageError("only `probe typecheck` is supported")
    if not os.path.isfile(args.file):
        raise UsageError(f"no such file: {args.file}")
    try:
        rng = probes.parse_range_arg(args.range) if args.range else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        outcome = probes.run_typecheck_probe_cli(
            args.file, rng, harn=args.harn, store=not args.no_store, timeout=args.timeout
        )
    except ActionFailed as exc:
        raise ActionError(str(exc)) from None
    if args.json:
        _dump(outcome.envelope)
    else:
        sys.stdout.write(outcome.summary_line + "\n")
        for d in outcome.diagnostics_text():
            sys.stdout.write(d + "\n")
    return 0


def cmd_watch(args) -> int:
    target = os.path.abspath(args.path or os.getcwd())
    if not os.path.isdir(target):
        raise UsageError(f"not a directory: {args.path}")
    # start-up: watch_cli loads watchdog and the workspace; only `watch` needs them
    from harn_ls.cli.watch import run_watch

    return run_watch(target, as_json=args.json)


def cmd_cache(args) -> int:
    # start-up: the state cache loads sqlite3 and the workspace; only `cache` needs it
    from harn_ls.cache.store import ProjectCache

    if args.verb not in ("info", "clear"):
        raise UsageError("expected: cache info|clear [PATH]")
    try:
        cache = ProjectCache(_target(args.path))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.verb == "clear":
        existed = cache.clear()
        sys.stdout.write(("removed " if existed else "no cache at ") + os.path.dirname(cache.folder) + "\n")
        return 0
    info = cache.info()
    if args.json:
        _dump(info)
        return 0
    sys.stdout.write(f"state cache  {info['folder']}\n")
    if not info["exists"]:
        sys.stdout.write("  (none yet)\n")
        return 0
    sys.stdout.write(f"  {'valid' if info['valid'] else 'not usable (will be rebuilt)'}, {info['bytes']:,} bytes\n")
    for ns, e in sorted(info["namespaces"].items()):
        index = ", recall index" if e["index"] else ""
        sys.stdout.write(f"  {ns:<32} log {e['log']:<9} offset {e['offset']:,}{index}\n")
    return 0


LOOPBACK_NAMES = ("localhost", "localhost.", "ip6-localhost")


def _loopback_tcp(spec: str) -> tuple[str, int]:
    """`HOST:PORT` (or `[::1]:PORT`, or `:PORT` for 127.0.0.1) whose host is loopback."""
    # start-up: only serve --tcp checks an address
    import ipaddress

    host, sep, port_s = spec.rpartition(":")
    if not sep or not port_s.isdigit() or not 0 <= int(port_s) <= 65535:
        raise UsageError(f"--tcp wants HOST:PORT, got {spec!r}")
    host = host.strip("[]") or "127.0.0.1"
    if host.lower() in LOOPBACK_NAMES:
        return "127.0.0.1", int(port_s)
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(f"serve --tcp binds loopback addresses only (127.0.0.1, ::1, localhost), not {host!r}: "
                         "anyone who reaches the port talks to the server as you")
    return host, int(port_s)


def cmd_serve(args) -> int:
    tcp = _loopback_tcp(args.tcp) if args.tcp else None
    harn = args.harn or os.environ.get("HARN_LS_HARN") or None
    if args.allow_probes and not tcp:
        raise UsageError("--allow-probes is for serve --tcp (over stdio the client's workspace trust decides)")
    # The server's modules (pygls, lsprotocol: ~600 attrs classes) live as long as it does: the cyclic
    # collector is paused while they load (it walked them again and again: ~0.4 s of CPU here) and
    # they are frozen out of its view afterwards.
    gc.disable()
    try:
        # start-up: pygls and lsprotocol cost ~1 s; only `serve` needs them
        from harn_ls.lsp import heap, server
        from harn_ls.lsp import tcp as tcp_server
    finally:
        gc.freeze()
        gc.enable()
    if tcp:
        # Over TCP whoever reaches the port is a client: the harn binary is only the command line's /
        # $HARN_LS_HARN (default `harn` on PATH), never harnState.harnPath; probes need --allow-probes.
        heap.tune()
        return tcp_server.serve(tcp, harn or "harn", args.allow_probes)
    return server.run_server(harn=harn)


COMMANDS = ("serve", "inspect", "show", "compare", "recall", "proposals", "hitl", "probe", "cache", "watch")


def _arg_type(convert):
    """`convert` (cli_args) as an argparse type whose complaint is its own sentence, in one line."""
    # start-up: argparse loads only when the full parser is built (see build_parser)
    import argparse

    def checked(text: str):
        try:
            return convert(text)
        except OutOfRange as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return checked


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only` (a command name), just that command's sub-parser: the same
    parse and the same messages for that command, for a fraction of the set-up (~10 ms for all)."""
    # start-up: argparse (with gettext, locale, shutil) costs ~20 ms; `inspect` and `recall` as usually
    # spelled never need it (cli_args.quick_args)
    import argparse

    p = argparse.ArgumentParser(prog="harn-ls", description="See and steer the state Harn agents leave in a project.")
    p.add_argument("--version", action="version", version=f"harn-ls {__version__}")
    # one command built: the usage still lists them all, as argparse writes it for the whole parser
    sub = p.add_subparsers(dest="command", required=True, metavar=None if only is None else "{" + ",".join(COMMANDS) + "}")

    if only in (None, "serve"):
        s = sub.add_parser("serve", help="run the language server")
        s.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (default)")
        s.add_argument("--tcp", metavar="HOST:PORT", help="listen on a loopback address instead (127.0.0.1, ::1, localhost)")
        s.add_argument("--harn", metavar="PATH", default=None,
                       help="the harn binary for typecheck probes (also $HARN_LS_HARN); over TCP the only source, "
                            "client settings are ignored")
        s.add_argument("--allow-probes", action="store_true",
                       help="with --tcp: let clients run typecheck probes (off by default over TCP)")
        s.set_defaults(func=cmd_serve)

    if only in (None, "inspect"):
        s = sub.add_parser("inspect", help="everything found in the project, with problems")
        s.add_argument("path", nargs="?")
        s.add_argument("--json", action="store_true")
        _reading_options(s)
        s.set_defaults(func=cmd_inspect)

    if only in (None, "show"):
        s = sub.add_parser("show", help="print a harn-state: document",
                           usage="harn-ls show [PATH] URI [--show-private] [--format text|md|svg] [--quiet]")
        s.add_argument("args", nargs="+", metavar="[PATH] URI")
        s.add_argument("--show-private", action="store_true", help="include private reasoning in transcripts")
        s.add_argument("--format", choices=("text", "md", "svg"), default="text",
                       help="text: Markdown without pictures (default); md: with inline SVG pictures;"
                            " svg: the document's picture")
        _reading_options(s)
        s.set_defaults(func=cmd_show)

    if only in (None, "compare"):
        s = sub.add_parser("compare", help="compare two runs: stages, status, durations, tokens, where the conversations diverge",
                           usage="harn-ls compare PATH RUN_A RUN_B [--format text|md]")
        s.add_argument("path")
        s.add_argument("run_a")
        s.add_argument("run_b")
        s.add_argument("--format", choices=("text", "md"), default="text")
        _reading_options(s)
        s.set_defaults(func=cmd_compare)

    if only in (None, "recall"):
        s = sub.add_parser("recall", help="Harn-parity memory recall",
                           usage="harn-ls recall [PATH] QUERY [--namespace NS] [-k K] [--explain] [--json] [--quiet]")
        s.add_argument("args", nargs="+", metavar="[PATH] QUERY")
        s.add_argument("--namespace", "-n")
        s.add_argument("-k", type=_arg_type(RECALL_K), default=5)
        s.add_argument("--explain", action="store_true")
        s.add_argument("--json", action="store_true")
        _reading_options(s)
        s.set_defaults(func=cmd_recall)

    if only in (None, "proposals"):
        s = sub.add_parser("proposals", help="list / accept / reject learned-skill proposals",
                           usage="harn-ls proposals [PATH] list|accept ID|reject ID [--days N] [--all] [--skill-root DIR]"
                                 " [--json]")
        s.add_argument("args", nargs="+", metavar="[PATH] list|accept ID|reject ID")
        s.add_argument("--days", type=_arg_type(whole_number(0, 36_500)), default=14)
        s.add_argument("--all", action="store_true", help="include suppressed proposals")
        s.add_argument("--skill-root", default=None, help="where accepted skills go (default .claude/skills)")
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=cmd_proposals)

    if only in (None, "hitl"):
        _hitl_parser(sub)

    if only in (None, "probe"):
        s = sub.add_parser("probe", help="run a typecheck probe on a file or range")
        s.add_argument("kind", choices=["typecheck"])
        s.add_argument("file")
        s.add_argument("--range", help="L:C-L:C, 1-based lines and columns")
        s.add_argument("--harn", default=None, help="harn binary (default: harn on PATH)")
        s.add_argument("--no-store", action="store_true", help="do not store the observation fact")
        s.add_argument("--timeout", type=_arg_type(seconds(0.1, 3600.0)), default=30.0)
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=cmd_probe)

    if only in (None, "cache"):
        _cache_parser(sub)

    if only in (None, "watch"):
        s = sub.add_parser("watch", help="follow the project live, one line per change batch")
        s.add_argument("path", nargs="?")
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=cmd_watch)
    return p


def _hitl_parser(sub) -> None:
    s = sub.add_parser("hitl", help="list and answer what agents wait for (approve, deny, answer, accept, decline)",
                       usage="harn-ls hitl [PATH] list|approve ID|deny ID|answer ID VALUE|accept ID|decline ID|finish ID "
                             "[--reason TEXT] [--reviewer NAME] [--all] [--json]")
    s.add_argument("args", nargs="+", metavar="[PATH] VERB [ID] [VALUE]")
    s.add_argument("--reason", default=None, help="why (recorded with the response)")
    s.add_argument("--reviewer", default=None, help="your name as Harn records it (default: your OS user name)")
    s.add_argument("--all", action="store_true", help="list: include answered, denied and expired requests")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_hitl)


def _cache_parser(sub) -> None:
    s = sub.add_parser("cache", help="show or drop the state cache kept outside the project",
                       usage="harn-ls cache info|clear [PATH] [--json] [--quiet]")
    s.add_argument("verb", metavar="info|clear")
    s.add_argument("path", nargs="?")
    s.add_argument("--json", action="store_true")
    _reading_options(s, cache=False)
    s.set_defaults(func=cmd_cache)


# the commands cli_args.quick_args reads, with what argparse's set_defaults(func=...) gives them
QUICK_COMMANDS = {"inspect": cmd_inspect, "recall": cmd_recall}


def _reading_options(s, cache: bool = True) -> None:
    """--no-cache (for the commands that read the project through the state cache) and --quiet."""
    if cache:
        s.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the state cache (also: HARN_LS_CACHE=off)")
    s.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar on stderr (it shows only on a terminal, for work over a second)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parse(argv)
    if isinstance(args, int):
        return args
    # start-up: harn_ls.render costs ~80 ms, so it is imported only once the arguments parsed
    from harn_ls.render.terminal import TerminalSafeWriter

    if args.func is not cmd_serve:
        # data text (claims, names, messages) must not drive the terminal: every printed
        # control character and bidi override becomes a visible \uXXXX escape
        sys.stdout = TerminalSafeWriter(sys.stdout)
        sys.stderr = TerminalSafeWriter(sys.stderr)
    try:
        return _run(args)
    finally:
        if isinstance(sys.stdout, TerminalSafeWriter):  # in-process callers (tests) get their streams back
            sys.stdout = sys.stdout.wrapped
        if isinstance(sys.stderr, TerminalSafeWriter):
            sys.stderr = sys.stderr.wrapped


def _parse(argv: list[str]):
    """The parsed arguments, or the exit code when argparse printed help, the version or a complaint."""
    quick = quick_args(argv)
    if quick is not None:
        # the same attributes argparse's namespace would have, without importing argparse
        return SimpleNamespace(**quick, func=QUICK_COMMANDS[quick["command"]])
    # a known command first: only its sub-parser is built (anything else: the whole parser's messages)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2


def _run(args) -> int:
    try:
        return args.func(args)
    except UsageError as exc:
        sys.stderr.write(f"harn-ls: {exc}\n")
        return 2
    except ActionError as exc:
        sys.stderr.write(f"harn-ls: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        _stop_progress()


if __name__ == "__main__":
    raise SystemExit(main())

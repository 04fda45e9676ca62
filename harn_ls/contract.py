"""The interface contract between harn-ls and its clients, in one place.

Method, command and notification names, and the shape of every command's argument and
result and of the notification payloads, as attrs classes. Field names are snake_case here
and camelCase on the wire (`skill_root` <-> `skillRoot`); `converter` does both directions.
vscode-extension/src/protocol.ts mirrors this module and tests/unit/test_contract.py fails
when the two disagree. Pure: no pygls, no lsprotocol.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

SCHEME = "harn-state"

# ------------------------------------------------------------------ methods (protocol.ts `Methods`)
TREE = "harn/tree"  # request: TreeParams -> TreeResult
TREE_CHANGED = "harn/treeChanged"  # notification: TreeChangedParams
STATUS = "harn/status"  # notification: StatusParams
HITL_ARRIVED = "harn/hitlArrived"  # notification: HitlArrivedParams (new requests waiting for a human)
LOADING = "harn/loading"  # notification: LoadingParams (how far a long piece of work is, for the status bar)

METHODS = {m.removeprefix("harn/"): m for m in (TREE, TREE_CHANGED, STATUS, HITL_ARRIVED, LOADING)}  # "tree": TREE, ...

# ------------------------------------------------- server commands (protocol.ts `ServerCommands`)
CMD_ACCEPT = "harnState.acceptProposal"
CMD_REJECT = "harnState.rejectProposal"
CMD_INVALIDATE_FACT = "harnState.invalidateFact"
CMD_FORGET_STAGE = "harnState.forgetCheckpointStage"
CMD_PROBE = "harnState.probeTypecheck"
CMD_RECALL = "harnState.recall"
CMD_MIGRATE = "harnState.migratePatternLearning"
CMD_RESCAN = "harnState.rescan"
CMD_RESUME = "harnState.resumeEscalation"  # `harn orchestrator resume` (trusted workspaces)
CMD_ANSWER_HITL = "harnState.answerHitl"  # approve / deny / answer / accept / decline / finish (trusted workspaces)
# (SERVER_COMMAND_NAMES, protocol.ts's table of them by name, follows COMMAND_ARGS below)

# ------------------------------------- client commands the server names (protocol.ts `ClientCommands`)
CMD_OPEN = "harnState.open"  # argument: a harn-state: URI string (lens / tree targets)
CMD_COMPARE = "harnState.compareWithExisting"  # argument: CompareArgs

# HITL answers from lenses and tree items: the client asks for a reason / an answer, then runs answerHitl
CMD_UI_HITL = {"approve": "harnState.ui.approveHitl", "deny": "harnState.ui.denyHitl",
               "answer": "harnState.ui.answerHitl", "accept": "harnState.ui.acceptHitl",
               "decline": "harnState.ui.declineHitl", "finish": "harnState.ui.finishHitl"}

# by the name after the last dot: "open": CMD_OPEN, "compareWithExisting": CMD_COMPARE, "approveHitl": ...
CLIENT_COMMAND_NAMES = {cmd.rsplit(".", 1)[1]: cmd for cmd in (CMD_OPEN, CMD_COMPARE, *CMD_UI_HITL.values())}

# ----------------------------------------------------------------------------- code action kinds
KIND_ACCEPT = "source.harnState.accept"
KIND_REJECT = "source.harnState.reject"
KIND_COMPARE = "source.harnState.compare"
KIND_PROBE = "source.harnState.probe"
KIND_MIGRATE = "source.harnState.migrate"

TREE_VIEWS = ("runs", "checkpoints", "memory", "skills")
TREE_PAGE_SIZE = 200


# ------------------------------------------------------------------------ command arguments
@attrs.frozen
class AcceptArgs:
    id: str
    skill_root: str | None = None
    root: str | None = None  # the folder the proposal lives in (multi-root); optional


@attrs.frozen
class RejectArgs:
    id: str
    days: int = 14
    root: str | None = None


@attrs.frozen
class InvalidateFactArgs:
    id: str
    root: str | None = None


@attrs.frozen
class ForgetStageArgs:
    """Also the `data` of a `checkpointStage` tree item: the client passes it on as it is."""

    pipeline: str
    key: str
    root: str | None = None


@attrs.frozen
class Position:
    line: int
    character: int


@attrs.frozen
class Range:
    start: Position
    end: Position


@attrs.frozen
class ProbeArgs:
    uri: str
    range: Range | None = None  # none: the whole file


@attrs.frozen
class RecallArgs:
    query: str = ""
    namespace: str | None = None


@attrs.frozen
class MigrateArgs:
    root: str | None = None


@attrs.frozen
class RescanArgs:
    pass


@attrs.frozen
class ResumeArgs:
    request_id: str
    reason: str = ""


@attrs.frozen
class AnswerHitlArgs:
    """`action`: approve | deny | answer | accept | decline | finish. For `answer`: `answer` is the text
    typed (coerced to the question's schema type), or `choice` the index into the question's choices."""

    request_id: str
    action: str
    reason: str = ""
    answer: str | None = None
    choice: int | None = None


@attrs.frozen
class HitlFormArgs:
    """Argument of the client commands `CMD_UI_HITL` (lenses on a request's document): the client
    asks for a reason or an answer (`choices`: a question's choices, one-line labels), then runs
    `answerHitl` with the request id."""

    request_id: str
    kind: str
    choices: list[str] | None = None


@attrs.frozen
class CompareArgs:
    """Argument of the client command `compareWithExisting`: diff the file at `path` with `uri`,
    the server's raw text of what Accept would write (`harn-state:/proposals/<id>.md?file=...`)."""

    id: str
    path: str
    uri: str


# --------------------------------------------------------------------------- command results
@attrs.frozen
class Failure:
    """What every command answers when it refuses or fails (the server also shows `message`)."""

    message: str
    ok: bool = False


@attrs.frozen
class AcceptResult:
    message: str
    id: str
    name: str
    kind: str
    written: list[str]
    unchanged: list[str]
    skill_path: str
    skill_uri: str
    warning: str | None = None
    ok: bool = True


@attrs.frozen
class RejectResult:
    message: str
    id: str
    name: str
    suppressed_until: str
    ok: bool = True


@attrs.frozen
class InvalidateFactResult:
    message: str
    id: str
    namespace: str
    ok: bool = True


@attrs.frozen
class ForgetStageResult:
    message: str
    pipeline: str
    key: str
    remaining: list[str]
    ok: bool = True


@attrs.frozen
class MigrateResult:
    message: str
    migrated: bool
    counts: dict[str, int] = attrs.Factory(dict)
    problems: list[str] = attrs.Factory(list)
    ok: bool = True


@attrs.frozen
class RecallResult:
    uri: str  # harn-state:/recall.md?q=...&ns=...


@attrs.frozen
class RescanResult:
    counts: dict[str, dict[str, int]]  # project root -> counts
    ok: bool = True


@attrs.frozen
class ProbeResult:
    outcome: str
    summary: str
    fact_id: str | None
    envelope: dict[str, Any]
    diagnostics: int
    notes: list[str]
    ok: bool = True


@attrs.frozen
class ProbeCancelled:
    message: str
    outcome: str = "cancelled"
    ok: bool = False


@attrs.frozen
class ResumeResult:
    message: str
    argv: list[str]
    state: str | None = None  # the request's state once Harn's response landed
    ok: bool = True


@attrs.frozen
class ResumeFailure:
    message: str
    argv: list[str]
    ok: bool = False


@attrs.frozen
class WrittenEvent:
    topic: str
    event_id: int
    kind: str


@attrs.frozen
class AnswerHitlResult:
    """`path`: how the answer reached Harn (a direct append to the log the waiting run polls)."""

    message: str
    outcome: str
    path: str
    reviewer: str
    written: list[WrittenEvent]
    state: str | None = None  # the request's state as harn-ls's fold now shows it
    ok: bool = True


# ------------------------------------------------------------------- requests and notifications
@attrs.frozen
class TreeParams:
    view: str
    parent: str | None = None
    page: int = 0
    root: str | None = None
    show_suppressed: bool = False


@attrs.frozen
class LspCommand:
    title: str
    command: str
    arguments: list[Any] = attrs.Factory(list)


@attrs.frozen
class TreeItemData:
    """One item of `harn/tree`. `data` is the argument object of the item's server command
    (ForgetStageArgs for a `checkpointStage`, {id} for a proposal / fact, {requestId, ...} for
    a request waiting for a human): clients pass it on and never take ids apart."""

    id: str
    label: str
    description: str
    tooltip: str
    icon: str
    context_value: str
    has_children: bool
    uri: str | None = None
    command: LspCommand | None = None
    data: dict[str, Any] | None = None


@attrs.frozen
class TreeResult:
    items: list[TreeItemData]
    next_page: int | None = None
    total: int | None = None  # all items under the parent, when there is more than one page


@attrs.frozen
class TreeChangedParams:
    view: str
    id: str | None = None


@attrs.frozen
class StatusParams:
    root: str
    counts: dict[str, int]
    problems: int
    watching: bool
    recall_ready: bool
    warnings: list[str]
    has_state: bool  # false when the project has no .harn/ (nor run) directory


@attrs.frozen
class LoadingParams:
    """What LSP work-done progress says, for a client's own status bar; sent beside it (a few a
    second at most) whether or not the client declared `window.workDoneProgress`."""
    root: str
    title: str
    percentage: int | None
    message: str
    done: bool


@attrs.frozen
class HitlRequestNote:
    request_id: str
    kind: str
    prompt: str
    agent: str | None
    uri: str


@attrs.frozen
class HitlArrivedParams:
    root: str
    requests: list[HitlRequestNote]


COMMAND_ARGS: dict[str, type] = {
    CMD_ACCEPT: AcceptArgs,
    CMD_REJECT: RejectArgs,
    CMD_INVALIDATE_FACT: InvalidateFactArgs,
    CMD_FORGET_STAGE: ForgetStageArgs,
    CMD_PROBE: ProbeArgs,
    CMD_RECALL: RecallArgs,
    CMD_MIGRATE: MigrateArgs,
    CMD_RESCAN: RescanArgs,
    CMD_RESUME: ResumeArgs,
    CMD_ANSWER_HITL: AnswerHitlArgs,
}
SERVER_COMMAND_NAMES = {cmd.removeprefix("harnState."): cmd for cmd in COMMAND_ARGS}  # "acceptProposal": CMD_ACCEPT, ...
COMMAND_RESULTS: dict[str, tuple[type, ...]] = {
    CMD_ACCEPT: (AcceptResult, Failure),
    CMD_REJECT: (RejectResult, Failure),
    CMD_INVALIDATE_FACT: (InvalidateFactResult, Failure),
    CMD_FORGET_STAGE: (ForgetStageResult, Failure),
    CMD_PROBE: (ProbeResult, ProbeCancelled, Failure),
    CMD_RECALL: (RecallResult,),
    CMD_MIGRATE: (MigrateResult, Failure),
    CMD_RESCAN: (RescanResult,),
    CMD_RESUME: (ResumeResult, ResumeFailure, Failure),
    CMD_ANSWER_HITL: (AnswerHitlResult, Failure),
}
NOTIFICATIONS: dict[str, type] = {TREE_CHANGED: TreeChangedParams, STATUS: StatusParams, HITL_ARRIVED: HitlArrivedParams,
                                  LOADING: LoadingParams}
WIRE_CLASSES: tuple[type, ...] = tuple(dict.fromkeys(
    [*COMMAND_ARGS.values(), *(c for cs in COMMAND_RESULTS.values() for c in cs), *NOTIFICATIONS.values(),
     Position, Range, CompareArgs, HitlFormArgs, TreeParams, LspCommand, TreeItemData, TreeResult, HitlRequestNote,
     WrittenEvent]))
# Sent without their optional fields when unset (null is never sent for them): a tree item has a `uri`,
# `command` and `data` only when it has something to open / run / pass on, a page `nextPage` and
# `total` only when more pages follow.
OMIT_UNSET: frozenset[type] = frozenset({TreeItemData, TreeResult})


# ----------------------------------------------------------------------------------- conversion
def wire_name(name: str) -> str:
    """snake_case -> camelCase: `skill_root` -> `skillRoot`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class ArgumentError(ValueError):
    """A command argument that does not match its class; the message names the field."""


def _strict(kind: type, what: str):
    def hook(value: Any, _type: Any) -> Any:
        # bool is an int in Python; on the wire `true` is not a number
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            if kind is int and isinstance(value, float) and value.is_integer():
                # a whole number past 64 bits reaches us as a float: say so, not "not a whole number"
                raise TypeError(f"is out of range ({value:.0f})"[:80])
            raise TypeError(what)
        return value
    return hook


def _objects_only(fn):
    def hook(value: Any, cls: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError("must be an object")
        return fn(value, cls)
    return hook


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_structure_hook(str, _strict(str, "must be a string"))
    conv.register_structure_hook(int, _strict(int, "must be a whole number"))
    conv.register_structure_hook(bool, _strict(bool, "must be true or false"))
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], _strict(dict, "must be an object"))
    def renames(cls: type) -> dict[str, Any]:
        return {a.name: override(rename=wire_name(a.name)) for a in attrs.fields(cls) if wire_name(a.name) != a.name}

    # factories: each class's hooks are made on first use, when every class is known (a list of
    # a class made earlier would keep the default, snake_case hook)
    conv.register_structure_hook_factory(
        lambda t: t in WIRE_CLASSES, lambda cls: _objects_only(make_dict_structure_fn(cls, conv, **renames(cls))))
    conv.register_unstructure_hook_factory(
        lambda t: t in WIRE_CLASSES,
        lambda cls: make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=cls in OMIT_UNSET, **renames(cls)))
    return conv


converter = _make_converter()
T = TypeVar("T")
A = TypeVar("A", bound=attrs.AttrsInstance)  # an attrs class of the contract


def _problem(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return "is missing"
    text = str(exc)
    if isinstance(exc, TypeError) and text.startswith(("must be", "is out of range")):
        return text
    return "must be an object" if isinstance(exc, (TypeError, AttributeError)) else f"is not valid ({text})"


def _problems(exc: BaseException, path: str) -> list[str]:
    """Leaf problems of a cattrs error, each as `field.sub problem`."""
    if isinstance(exc, cattrs.ClassValidationError):
        out = []
        for inner in exc.exceptions:
            note = next((n for n in getattr(inner, "__notes__", []) if hasattr(n, "name")), None)
            name = wire_name(note.name) if note is not None else "?"
            out += _problems(inner, f"{path}.{name}" if path else name)
        return out
    if isinstance(exc, BaseExceptionGroup):
        return [p for inner in exc.exceptions for p in _problems(inner, path)]
    return [f"{path or 'the argument'} {_problem(exc)}"]


def required_fields(cls: type) -> list[str]:
    return [wire_name(a.name) for a in attrs.fields(cls) if a.default is attrs.NOTHING]


def _plain(value: Any) -> Any:
    """JSON data back from the namedtuples pygls sometimes makes of objects."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def parse_args(command: str, args: Any) -> Any:
    """The typed argument of `command` from what workspace/executeCommand carried.

    Commands take one object argument; pygls spreads `arguments` over the handler's
    parameters, so `args` is a tuple: none (an empty object), or one object (a dict, or a
    namedtuple pygls made of it). Raises ArgumentError naming the field that is wrong."""
    cls = COMMAND_ARGS[command]
    short = command.rsplit(".", 1)[-1]
    if isinstance(args, (list, tuple)) and not hasattr(args, "_asdict"):
        if len(args) > 1:
            raise ArgumentError(f"{short} takes one object argument, not {len(args)}")
        args = args[0] if args else {}
    return parse_params(cls, args, short)


def parse_params(cls: type[T], params: Any, what: str) -> T:
    """`params` (JSON data, or pygls's namedtuples of it) as `cls`; ArgumentError naming the field."""
    params = _plain(params)
    wanted = f"{what} needs {{{', '.join(required_fields(cls))}}}" if required_fields(cls) else what
    if not isinstance(params, dict):
        raise ArgumentError(f"{wanted}: the argument must be an object")
    try:
        return converter.structure(params, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
        raise ArgumentError(f"{wanted}: {'; '.join(_problems(exc, ''))}") from None


def to_wire(obj: Any) -> Any:
    """An attrs instance (or list / dict of them) as JSON-ready data with camelCase names."""
    return converter.unstructure(obj)


def command_argument(arg: Any) -> Any:
    """A command argument as a lens, code action or tree item carries it: an attrs instance as its
    wire object without the optional fields left unset (None), so the client sends back only what
    was meant (and a project `root` can still be added); anything else (a URI string) as it is."""
    if not attrs.has(type(arg)):
        return arg
    unset = {wire_name(a.name) for a in attrs.fields(type(arg)) if a.default is None}
    return {k: v for k, v in to_wire(arg).items() if not (v is None and k in unset)}


def from_fields(cls: type[A], values: dict[str, Any], **extra: Any) -> A:
    """An instance of `cls` from a dict that has (at least) its fields under their Python names,
    e.g. an action's result; keys that are not fields are left out."""
    names = {a.name for a in attrs.fields(cls)}
    return cls(**{k: v for k, v in {**values, **extra}.items() if k in names})

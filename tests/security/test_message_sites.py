"""Issue 27 item 1, on the source: every text message the server sends is made inert on the way
out, and every data value put into one is quoted.

Walks harn_ls with `ast` (nothing imported):

- the wire senders (`window/showMessage`, `window/showMessageRequest`, `window/logMessage`,
  work-done progress, `harn/hitlArrived`) are called only in `harn_ls/lsp/messages.py`, and
  every text it sends goes through `defuse` there;
- every message built for a person (`ls.show`, `messages.*` (`command_failed` among them), `ActionFailed`,
  a command's `Failure` / result `message`, an action's `"message"`) puts values in only with
  `quote(...)`: an f-string part, `.format` argument or `join` element that is anything else
  (a name, an attribute, `repr`) fails, naming the file and line. Literals, UPPER_CASE
  constants, numbers (`len`, a numeric format spec) and OS error text (`.strerror`) are
  allowed; a local variable is followed to what it was assigned.

A new site that sends a message directly, or interpolates a value unquoted, fails this test.
"""

from __future__ import annotations

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "harn_ls")
MESSAGES_MODULE = os.path.join("lsp", "messages.py")

# attribute calls that put text on the wire
WIRE_SENDERS = {"window_show_message", "window_show_message_async", "window_show_message_request",
                "window_show_message_request_async", "window_log_message", "show_message", "show_message_log"}
PROGRESS_SENDERS = {"begin", "report", "end"}  # on `work_done_progress`

# name of a message-carrying call -> index of its message argument (None: every keyword `message`)
MESSAGE_CALLS = {"show": 0, "command_failed": 1, "end_progress": 2, "_end_progress": 2,
                 "begin_progress": (2, 3), "_begin_progress": (1, 2), "ActionFailed": 0, "AnswerRefused": 0, "Failure": 0,
                 "_run_action": None, "report_progress": 2,
                 "ResumeFailure": None, "ResumeResult": None, "ProbeCancelled": None}
SAFE_CALLS = {"quote", "defuse", "len", "int", "round", "sum", "min", "max", "_plural"}
# functions whose return value is a message (their `return`s are checked like a message), and the
# attributes that hold what they made
MESSAGE_BUILDERS = {"skill_root_warning", "_summary_line"}
BUILT_BY = {"summary_line": "_summary_line"}
PROJECT_RUNNERS = {"run", "run_before_facts"}  # Project.run(lambda: ...) answers what the lambda returns
NUMERIC_SPEC = set("0123456789.,_dfgex%+ ")

# message sites whose text another module builds, sent only defused (file -> why)
DEFUSED_ONLY = {
    "lsp/progress.py": "load progress: title and message made by harn_ls/util/progress.py (counts, the folder's name); "
                       "lsp/messages.py defuses them on the way out",
}

# a name that is a label the caller writes as a literal, not data (file, name) -> why
LABEL_PARAMS = {
    ("model/accept_plan.py", "what"): "check_text/check_segment(value, what): `what` names the field ('proposal id')",
    ("actions/probes.py", "outcome"): "typecheck_outcome(): pass / fail, or the comparison's own word",
}


def _modules():
    for folder, _dirs, files in os.walk(PACKAGE):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path, encoding="utf-8") as fh:
                    yield os.path.relpath(path, PACKAGE), ast.parse(fh.read(), path)


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


class _Scopes(ast.NodeVisitor):
    """Each node's enclosing function, for following local names."""

    def __init__(self) -> None:
        self.owner: dict[int, ast.AST] = {}
        self._stack: list[ast.AST] = []

    def generic_visit(self, node):
        if self._stack:
            self.owner[id(node)] = self._stack[-1]
        is_fn = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        if is_fn:
            self._stack.append(node)
        super().generic_visit(node)
        if is_fn:
            self._stack.pop()


class _Checker:
    def __init__(self, rel: str, tree: ast.Module) -> None:
        self.rel = rel
        self.scopes = _Scopes()
        self.scopes.visit(tree)
        self.tree = tree
        self.problems: list[str] = []
        self.loop_vars: dict[str, bool] = {}  # comprehension variable -> whether its list is inert

    def fn_of(self, node) -> ast.AST | None:
        return self.scopes.owner.get(id(node))

    def where(self, node) -> str:
        return f"{self.rel}:{node.lineno}"

    # -- what a value inside a message may be
    def quoted_part(self, node: ast.AST, spec: ast.AST | None = None) -> bool:
        if spec is not None and isinstance(spec, ast.JoinedStr):
            text = "".join(v.value for v in spec.values if isinstance(v, ast.Constant))
            if text and set(text) <= NUMERIC_SPEC:
                return True
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name) and node.id in self.loop_vars:
            return self.loop_vars[node.id]
        if isinstance(node, ast.Name) and not node.id.isupper() and self.is_local(node):
            return self.inert_name(node, node, frozenset())
        if isinstance(node, ast.JoinedStr):
            return all(self.quoted_part(p.value, p.format_spec) for p in node.values if isinstance(p, ast.FormattedValue))
        if isinstance(node, ast.Call) and _callee(node) in SAFE_CALLS:
            return True
        if isinstance(node, ast.Name) and (node.id.isupper() or (self.rel, node.id) in LABEL_PARAMS):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "strerror":
            return True
        if isinstance(node, ast.BoolOp):
            return all(self.quoted_part(v) for v in node.values)
        if isinstance(node, ast.IfExp):
            return self.quoted_part(node.body) and self.quoted_part(node.orelse)
        if isinstance(node, ast.Call) and _callee(node) == "join" and node.args:
            arg = node.args[0]
            if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
                return self.quoted_part(arg.elt)
            if isinstance(arg, (ast.Tuple, ast.List)):  # literal names: ("approve", *ACTIONS)
                return all(self.quoted_part(e.value if isinstance(e, ast.Starred) else e) for e in arg.elts)
        if isinstance(node, ast.Attribute) and node.attr.isupper():
            return True  # a module's constant (HA.ACTIONS)
        return False

    def inert(self, node: ast.AST, at: ast.AST, seen: frozenset = frozenset()) -> bool:
        """Whether `node`, used as a whole message, holds values only quoted."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.JoinedStr):
            ok = True
            for part in node.values:
                if isinstance(part, ast.FormattedValue) and not self.quoted_part(part.value, part.format_spec):
                    self.problems.append(f"{self.where(part)}: {ast.unparse(part.value)!r} put into a message unquoted")
                    ok = False
            return ok
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.inert(node.left, at, seen) & self.inert(node.right, at, seen)
        if isinstance(node, ast.IfExp):
            return self.inert(node.body, at, seen) & self.inert(node.orelse, at, seen)
        if isinstance(node, ast.Name):
            return self.inert_name(node, at, seen)
        if isinstance(node, ast.Await):
            return self.inert(node.value, at, seen)
        if isinstance(node, ast.Call):
            name = _callee(node)
            if name in PROJECT_RUNNERS and node.args and isinstance(node.args[0], ast.Lambda):
                return self.inert(node.args[0].body, at, seen)  # the result of the function run on the project thread
            if name in SAFE_CALLS:
                return True
            if name == "str" and node.args and isinstance(node.args[0], ast.Name):
                return self.is_action_failure(node.args[0], at)
            if name == "format" and isinstance(node.func, ast.Attribute):
                return all(self.part_ok(a) for a in [*node.args, *(k.value for k in node.keywords)])
            if name == "join" and isinstance(node.func, ast.Attribute) and node.args:
                arg = node.args[0]
                if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
                    gen = arg.generators[0]
                    if isinstance(gen.target, ast.Name) and isinstance(gen.iter, ast.Name):
                        listed = self.appended(gen.iter, at, seen)
                        if listed is not None:
                            self.loop_vars[gen.target.id] = listed
                    try:
                        return self.inert(arg.elt, at, seen)
                    finally:
                        if isinstance(gen.target, ast.Name):
                            self.loop_vars.pop(gen.target.id, None)
                if isinstance(arg, ast.Name):
                    found = self.appended(arg, at, seen)
                    if found is not None:
                        return found
                if isinstance(arg, (ast.Tuple, ast.List)) and self.quoted_part(node):
                    return True
            if name in MESSAGE_BUILDERS:
                return True  # its returns are checked where it is defined
            if name == "get" and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "message":
                # an action's result message: its "message" entries are checked where they are built
                return all(self.inert(a, at, seen) for a in node.args[1:])
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "message":
            return True
        if isinstance(node, ast.Attribute) and node.attr in BUILT_BY:
            return True  # made by a builder whose returns are checked
        self.problems.append(f"{self.where(node)}: message {ast.unparse(node)[:60]!r} is not built with quote()")
        return False

    def is_local(self, name: ast.Name) -> bool:
        """A variable assigned in the enclosing function (not a parameter)."""
        fn = self.fn_of(name)
        if fn is None:
            return False
        return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name.id for t in n.targets)
                   for n in ast.walk(fn))

    def part_ok(self, node: ast.AST) -> bool:
        if self.quoted_part(node):
            return True
        self.problems.append(f"{self.where(node)}: {ast.unparse(node)!r} put into a message unquoted")
        return False

    def inert_name(self, node: ast.Name, at: ast.AST, seen: frozenset) -> bool:
        if node.id.isupper() or (self.rel, node.id) in LABEL_PARAMS:
            return True
        fn = self.fn_of(at)
        if fn is None or node.id in seen:
            return True
        args = fn.args
        params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        if node.id in params:
            # a parameter: fine when the function itself carries messages (its callers are checked)
            if fn.name in MESSAGE_CALLS or fn.name in MESSAGE_BUILDERS:
                return True
            self.problems.append(
                f"{self.where(node)}: message parameter {node.id!r} of {fn.name}() is not checked at its callers")
            return False
        values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)]
        values += [n.value for n in ast.walk(fn) if isinstance(n, ast.AnnAssign) and n.value is not None
                   and isinstance(n.target, ast.Name) and n.target.id == node.id]
        if not values:
            self.problems.append(f"{self.where(node)}: cannot see what {node.id!r} holds")
            return False
        return all([self.inert(v, at, seen | {node.id}) for v in values])

    def appended(self, name: ast.Name, at: ast.AST, seen: frozenset) -> bool | None:
        """For a local list (`x = []` then `x.append(...)`): whether everything put in it is inert;
        None when `name` is not such a list."""
        fn = self.fn_of(at)
        if fn is None:
            return None
        starts = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == name.id for t in n.targets)]
        if not starts or not all(isinstance(v, ast.List) for v in starts):
            return None
        items = [e for v in starts for e in v.elts]
        items += [c.args[0] for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                  and c.func.attr == "append" and isinstance(c.func.value, ast.Name) and c.func.value.id == name.id
                  and c.args]
        return all([self.inert(v, at, seen | {name.id}) for v in items])

    def is_action_failure(self, name: ast.Name, at: ast.AST) -> bool:
        """`str(exc)` where `exc` is bound by `except ActionFailed as exc` (whose texts are checked at `raise`)."""
        fn = self.fn_of(at) or self.tree
        for h in ast.walk(fn):
            if isinstance(h, ast.ExceptHandler) and h.name == name.id:
                kinds = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
                if all(isinstance(k, (ast.Name, ast.Attribute)) and ast.unparse(k).endswith("ActionFailed") for k in kinds):
                    return True
        self.problems.append(f"{self.where(name)}: str({name.id}) is not an ActionFailed's text")
        return False

    # -- the walk
    def run(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.check_call(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in MESSAGE_BUILDERS:
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and ret.value is not None:
                        self.inert(ret.value, ret)
            elif isinstance(node, ast.Dict) and self.rel.startswith("actions"):
                for k, v in zip(node.keys, node.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == "message":
                        self.inert(v, v)

    def check_call(self, call: ast.Call) -> None:
        name = _callee(call)
        f = call.func
        sends = name in WIRE_SENDERS or (
            name in PROGRESS_SENDERS and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute)
            and f.value.attr == "work_done_progress") or (
            name == "notify" and any("HITL_ARRIVED" in ast.unparse(a) for a in call.args))
        if sends and self.rel != MESSAGES_MODULE:
            self.problems.append(f"{self.where(call)}: {name}() sends text directly; use harn_ls.lsp.messages")
            return
        if sends:
            return
        if self.rel in DEFUSED_ONLY:
            return
        if name not in MESSAGE_CALLS or (name == "show" and not (
                isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("ls", "self", "server"))):
            return
        index = MESSAGE_CALLS[name]
        if isinstance(index, int):
            picked = call.args[index:index + 1]
        elif isinstance(index, tuple):
            picked = [call.args[i] for i in index if i < len(call.args)]
        else:
            picked = []
        picked += [k.value for k in call.keywords if k.arg in ("message", "title", "done")]
        for arg in picked:
            self.inert(arg, call)


def _problems() -> list[str]:
    out = []
    for rel, tree in _modules():
        checker = _Checker(rel, tree)
        checker.run()
        out += checker.problems
    return out


def test_every_message_site_sends_through_messages_and_quotes_its_values():
    assert _problems() == []


def test_the_messages_module_defuses_every_text_it_sends():
    """In lsp/messages.py, every text argument of a wire call is `defuse(...)` (or the hitl note's ids)."""
    with open(os.path.join(PACKAGE, MESSAGES_MODULE), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    text_fields = {"message", "title", "prompt", "kind", "agent"}
    seen = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for k in node.keywords:
                if k.arg in text_fields and not (k.arg == "kind" and "MessageType" in ast.unparse(k.value)):
                    seen.append(k.arg)
                    value = k.value.body if isinstance(k.value, ast.IfExp) else k.value
                    assert isinstance(value, ast.Call) and _callee(value) == "defuse", \
                        f"lsp/messages.py:{node.lineno}: {k.arg}= is sent without defuse(): {ast.unparse(k.value)}"
    assert {"message", "title", "prompt", "kind", "agent"} <= set(seen)


@pytest.mark.parametrize("source, problem", [
    ("def f(ls, name):\n    ls.show(f'Accepted {name}')\n", "'name' put into a message unquoted"),
    ("def f(ls, p):\n    raise ActionFailed(f'refused: {p!r} is a link')\n", "'p' put into a message unquoted"),
    ("def f(ls, m):\n    ls.window_show_message(m)\n", "sends text directly"),
    ("def f(ls, t):\n    ls.work_done_progress.begin(t, None)\n", "sends text directly"),
    ("def f(ls, w):\n    msg = 'x: ' + w\n    ls.show(msg)\n", "not checked at its callers"),
    ("def f(ls, xs):\n    ls.show(', '.join(xs))\n", "not built with quote()"),
])
def test_the_walk_catches_a_new_unquoted_site(source, problem):
    """The checker itself: each of these, added to harn_ls, would fail the test above."""
    checker = _Checker("lsp/new_feature.py", ast.parse(source))
    checker.run()
    assert any(problem in p for p in checker.problems), checker.problems


def test_the_walk_accepts_quoted_sites():
    source = ("def f(ls, name, n):\n    ls.show(f'Accepted {quote(name)} ({n:,} bytes, {len(name)} chars)')\n"
              "    msg = 'written: ' + ', '.join(quote(p) for p in name)\n    ls.show(msg)\n"
              "    try:\n        pass\n    except ActionFailed as exc:\n        ls.show(str(exc))\n")
    checker = _Checker("lsp/new_feature.py", ast.parse(source))
    checker.run()
    assert checker.problems == []

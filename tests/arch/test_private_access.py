"""No module of harn_ls reaches into another package's private internals (issue 30).

A private name is one with a leading underscore that is not a dunder (`_send_data`, `_make`,
`_inotify`; not `__init__`). "Another package" is anything outside harn_ls: third-party libraries
and the standard library alike (CPython's `_sha2` was one). Per module, the source is walked with
ast for:

* an import of a private module (`import attr._make`, `from _sha2 import sha256`) or of a private
  name from another package (`from pygls.protocol import _x`);
* a private attribute of something imported from another package (`sys._getframe`,
  `attrs_make._x`), and any assignment to or deletion of an attribute of an imported module
  (`attr._make.compile = …`: patching, private or not);
* `getattr` / `setattr` / `hasattr` / `delattr` with a private name as a literal, except on
  `self` / `cls` in a class of ours with no foreign base;

and, by importing the module, for a class of ours whose method resolution order holds a foreign
class: a private name the class defines or uses on `self` that the foreign class also defines or
uses (overriding `_send_data`, setting `self._emitter_class`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys

import pytest

from tests.arch.imports import module_files

SELF_PRIVATE = re.compile(r"\bself\.(_[A-Za-z0-9]\w*)")
DEF_PRIVATE = re.compile(r"^\s*(?:async\s+)?def\s+(_[A-Za-z0-9]\w*)", re.M)
ACCESSORS = {"getattr", "setattr", "hasattr", "delattr"}
# Underscored but public, documented as such by their owners: not private internals.
DOCUMENTED = {
    "os._exit",  # docs.python.org/3/library/os.html#os._exit
}
DOCUMENTED_MODULES = {"_thread"}  # docs.python.org/3/library/_thread.html
# namedtuple's methods carry an underscore only to keep clear of field names (collections docs)
NAMEDTUPLE_API = {"_asdict", "_replace", "_fields", "_make", "_field_defaults"}
# sys's standard streams may be replaced: the sys docs say so
REPLACEABLE = {"sys.stdout", "sys.stderr", "sys.stdin"}
# Modules known to touch another package's private names, each xfail(strict=True) until it is clean.
# Empty: lsp/wire.py (pygls's `_send_data`) is gone, replaced by lsp/transport.py's public writer.
PENDING: dict[str, str] = {}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def foreign(module: str) -> bool:
    return module != "harn_ls" and not module.startswith("harn_ls.") and module != "__future__"


def _resolve_from(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = source.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def static_findings(module: str, path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    is_package = path.endswith("__init__.py")
    imported: dict[str, str] = {}  # local name -> what it is, for names bound to another package's things
    modules: set[str] = set()  # local names bound to another package's module (`import x.y as m`)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not foreign(alias.name):
                    continue
                if any(is_private(part) for part in alias.name.split(".")) and alias.name not in DOCUMENTED_MODULES:
                    found.append(f"line {node.lineno}: imports private module {alias.name}")
                local = alias.asname or alias.name.split(".")[0]
                imported[local] = alias.name if alias.asname else alias.name.split(".")[0]
                modules.add(local)
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(module, is_package, node)
            if not foreign(source):
                continue
            if any(is_private(part) for part in source.split(".")) and source not in DOCUMENTED_MODULES:
                found.append(f"line {node.lineno}: imports from private module {source}")
            for alias in node.names:
                if is_private(alias.name):
                    found.append(f"line {node.lineno}: imports private name {alias.name} from {source}")
                imported[alias.asname or alias.name] = f"{source}.{alias.name}"
                if inspect.ismodule(sys.modules.get(f"{source}.{alias.name}")):
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            root = _root_name(node)
            if (root in imported and is_private(node.attr) and ast.unparse(node) not in DOCUMENTED
                    and node.attr not in NAMEDTUPLE_API):
                found.append(f"line {node.lineno}: {ast.unparse(node)} is private to {imported[root]}")
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and _root_name(t) in modules and ast.unparse(t) not in REPLACEABLE:
                found.append(f"line {t.lineno}: patches {ast.unparse(t)} of {imported[_root_name(t)]}")
    for cls_or_mod in [tree, *[n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]]:
        own_class = isinstance(cls_or_mod, ast.ClassDef) and not any(
            _root_name(b) in imported for b in cls_or_mod.bases)
        for node in ast.walk(cls_or_mod):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ACCESSORS
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str) and is_private(node.args[1].value)):
                continue
            on_self = isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls")
            if own_class and on_self:
                continue
            name = node.args[1].value
            if name in NAMEDTUPLE_API or (not on_self and name in ours_everywhere()):
                continue  # a namedtuple's, or a private attribute harn_ls itself defines
            if cls_or_mod is tree and on_self and any(
                    isinstance(c, ast.ClassDef) and node in ast.walk(c) for c in ast.walk(tree)):
                continue  # judged with its class
            found.append(f"line {node.lineno}: {ast.unparse(node)} reaches a private name by string")
    return sorted(set(found))


_OURS: set[str] = set()


def ours_everywhere() -> set[str]:
    """Private names harn_ls defines itself: `self._x = …`, `def _x`, `_x = …` in a class or module."""
    if not _OURS:
        for _module, path in module_files().items():
            with open(path, encoding="utf-8") as fh:
                src = fh.read()
            _OURS.update(re.findall(r"\bself\.(_[A-Za-z0-9]\w*)\s*(?::[^=\n]*)?=[^=]", src))
            _OURS.update(DEF_PRIVATE.findall(src))
            _OURS.update(re.findall(r"^\s*(_[A-Za-z0-9]\w*)\s*(?::[^=\n]*)?=[^=]", src, re.M))
    return _OURS


def _private_names_of(cls: type) -> set[str]:
    """Private names a class defines or uses on self. For a foreign class, what its namespace holds
    too; for ours, only what its source says (a metaclass fills our namespace with its own
    bookkeeping: enum's `_member_map_`, ABCMeta's `_abc_impl`)."""
    names = set()
    if foreign(cls.__module__):
        names = {n for n in vars(cls) if is_private(n) and not n.startswith(f"_{cls.__name__}__")}
    try:
        src = inspect.getsource(cls)
    except (OSError, TypeError):
        return names
    return names | set(SELF_PRIVATE.findall(src)) | set(DEF_PRIVATE.findall(src))


def inherited_findings(module: str) -> list[str]:
    mod = importlib.import_module(module)
    found = []
    for _name, cls in inspect.getmembers(mod, inspect.isclass):
        if cls.__module__ != module:
            continue
        theirs = [k for k in cls.__mro__ if foreign(k.__module__) and k.__module__ != "builtins"]
        if not theirs:
            continue
        foreign_names = set().union(*(_private_names_of(k) for k in theirs))
        ours = [k for k in cls.__mro__ if not foreign(k.__module__)]
        for k in ours:
            clash = _private_names_of(k) & foreign_names
            if clash:
                where = k.__module__ + "." + k.__qualname__
                found.append(f"{where} (in {cls.__qualname__}) touches {', '.join(sorted(clash))} of "
                             f"{', '.join(f'{t.__module__}.{t.__qualname__}' for t in theirs)}")
    return found


MODULES = sorted(module_files().items())


def _params():
    out = []
    for module, path in MODULES:
        marks = [pytest.mark.xfail(strict=True, reason=PENDING[module])] if module in PENDING else []
        out.append(pytest.param(module, path, id=module, marks=marks))
    return out


def _all_inherited() -> dict[str, list[str]]:
    """Findings by the module that holds the offending class (which may be a mixin of another's)."""
    by_module: dict[str, list[str]] = {}
    for module, _path in MODULES:
        for line in inherited_findings(module):
            owner = line.split(" (in ", 1)[0].rsplit(".", 1)[0]
            while owner and owner not in dict(MODULES):
                owner = owner.rsplit(".", 1)[0]
            by_module.setdefault(owner or module, []).append(line)
    return by_module


@pytest.fixture(scope="module")
def inherited() -> dict[str, list[str]]:
    return _all_inherited()


@pytest.mark.parametrize("module,path", _params())
def test_no_private_access_to_other_packages(module, path, inherited):
    assert static_findings(module, path) + sorted(set(inherited.get(module, []))) == []


def test_the_checks_catch_each_kind_of_access(tmp_path):
    """The walker itself: each pattern this test forbids is found in a module written to show it."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import attr._make as attrs_make\n"
        "import sys\n"
        "from watchdog.observers import inotify\n"
        "from pygls.protocol import _private_helper\n"
        "attrs_make.compile = len\n"
        "frame = sys._getframe(1)\n"
        "fd = getattr(inotify, '_inotify_fd', None)\n"
        "class Own:\n"
        "    def f(self):\n"
        "        return getattr(self, '_ok', None)\n"
    )
    found = static_findings("harn_ls.sample", str(sample))
    text = "\n".join(found)
    assert "imports private module attr._make" in text
    assert "imports private name _private_helper" in text
    assert "patches attrs_make.compile" in text
    assert "sys._getframe is private to sys" in text
    assert "'_inotify_fd'" in text
    assert "'_ok'" not in text  # our own class's own private attribute


def test_the_class_check_catches_an_override_of_a_private_method():
    from pygls.protocol import JsonRPCProtocol

    class Wire:
        def _send_data(self, data):  # pygls's private writer
            return self._include_headers

    Combined = type("Combined", (Wire, JsonRPCProtocol), {})
    clash = _private_names_of(Wire) & set().union(
        *(_private_names_of(k) for k in Combined.__mro__ if foreign(k.__module__) and k.__module__ != "builtins"))
    assert {"_send_data", "_include_headers"} <= clash

"""Import lsprotocol without compiling attrs' generated methods again in every server start.

`lsprotocol.types` defines ~570 attrs classes; for each, attrs writes the source of `__init__`,
`__repr__`, `__eq__`... and hands it to `compile()`: about half of the 0.45 s of CPU the import
costs. The source is the same in every start, so the code objects are kept (marshalled) in
harn-ls's own cache folder, outside any project, and the next start looks each one up by its
exact source, file name, mode and compiler flags. A miss compiles as before; the result is the
same code object either way (a code object round-trips through marshal unchanged), so only the
time changes.

The file is harn-ls's, like the state cache, and trusted the way Python trusts its own `.pyc`
files: it is checked against a SHA-256 of its body and the running interpreter's bytecode magic
before `marshal.loads` sees it; a truncated, corrupt or foreign file is ignored and written
again. `HARN_LS_CACHE=off` turns it off (nothing read, nothing written).

No pygls or lsprotocol import here: this module runs before them.
"""

import __future__
import hashlib
import importlib.util
import marshal
import os
import sys
from typing import Any, Mapping

from harn_ls.cache_dir import cache_enabled, cache_root, write_cache_file

FILE_PREFIX = "attrs-code-"
CATTRS_FILE_PREFIX = "cattrs-code-"  # the converter's generated functions (see cached_cattrs_compiles)
HEADER = b"harn-ls attrs code v1\n"
MAX_FILE_BYTES = 32 * 1024 * 1024  # ~2 MB for lsprotocol; anything far larger is not ours to load
# The compiler flags a caller passes on to compile() (its `from __future__` features).
FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


def cache_path(env: Mapping[str, str] | None = None, prefix: str = FILE_PREFIX) -> str:
    """One file per interpreter (its cache tag and bytecode magic are in the name)."""
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(cache_root(env), f"{prefix}{tag}-{importlib.util.MAGIC_NUMBER.hex()}.bin")


def encode(codes: dict) -> bytes:
    body = marshal.dumps(list(codes.items()))
    return HEADER + importlib.util.MAGIC_NUMBER + hashlib.sha256(body).digest() + body


def decode(data: bytes) -> dict:
    """The {(filename, mode, flags, source): code} map of a file, or {} unless it is intact and ours."""
    start = len(HEADER) + len(importlib.util.MAGIC_NUMBER)
    if (not data.startswith(HEADER) or data[len(HEADER):start] != importlib.util.MAGIC_NUMBER
            or len(data) < start + 32):
        return {}
    digest, body = data[start:start + 32], data[start + 32:]
    if hashlib.sha256(body).digest() != digest:
        return {}
    try:
        items = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    codes = {}
    if isinstance(items, list):
        for item in items:
            if (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], tuple)
                    and type(item[1]).__name__ == "code"):
                codes[item[0]] = item[1]
    return codes


class CodeCache:
    """compile() with the code objects of earlier starts; `misses` says whether to save."""

    def __init__(self, codes: dict) -> None:
        self.codes = codes
        self.used: dict = {}
        self.misses = 0
        self.calls = 0

    def worth_saving(self) -> bool:
        """Rewrite the file only when a real share missed (first start, another attrs or
        lsprotocol), not for a stray class defined differently in one start."""
        return self.misses * 20 >= self.calls > 0

    def compile(self, source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                optimize: int = -1, **kwargs: Any):
        if not dont_inherit:
            # what compile() would inherit from its caller (attrs' module has `from __future__ import annotations`)
            flags |= sys._getframe(1).f_code.co_flags & FUTURE_FLAGS
        if (not isinstance(source, str) or not isinstance(filename, str) or optimize != -1 or kwargs
                or "def __hash__(" in source):
            # a generated __hash__ holds a per-process constant (str hashes are seeded): never the same source twice
            return compile(source, filename, mode, flags, True, optimize, **kwargs)
        key = (filename, mode, flags, source)
        self.calls += 1
        code = self.codes.get(key)
        if code is None:
            code = compile(source, filename, mode, flags, True)
            self.misses += 1
        self.used[key] = code
        return code


class cached_attrs_compiles:
    """`with cached_attrs_compiles(): import lsprotocol.types` — attrs' compile() calls inside the
    block go through the code cache; on leaving, the file is written again if much was missing."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = os.environ if env is None else env
        self.cache: CodeCache | None = None
        self._module: Any = None

    def __enter__(self) -> "cached_attrs_compiles":
        if not cache_enabled(self.env):
            return self
        try:
            # attrs is what we patch: its module must be loaded to receive the compile() override
            import attr._make as attrs_make
        except ImportError:
            return self
        self.cache = CodeCache(_read(cache_path(self.env)))
        # attrs calls the builtin by name: a module global of that name is found first
        attrs_make.compile = self.cache.compile
        self._module = attrs_make
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._module is None:
            return
        try:
            del self._module.compile
        except AttributeError:
            pass
        cache, self._module = self.cache, None
        if cache is not None and exc[0] is None:
            _save(cache, cache_path(self.env))


def _save(cache: CodeCache, path: str) -> None:
    """Write what this process used, when a real share of it missed (CodeCache.worth_saving)."""
    if not cache.worth_saving():
        return
    try:
        data = encode(cache.used)  # only what this start used: entries of an old attrs drop out
        if len(data) <= MAX_FILE_BYTES:
            write_cache_file(path, data)
    except (OSError, ValueError):
        pass  # a read-only or full disk: the next start compiles again


class cached_cattrs_compiles:
    """cattrs generates and compiles a structure or unstructure function for each message type on
    its first use: ~0.5 ms of compile() each, ~60 types before a server answers initialize and sends
    its first notifications, ~200 more in the conversions warm-up (lsp/conversions.py). Their sources
    are the same in every start, so they go through a code cache too, kept in its own file: from
    `install()` on, for the rest of the process (the types come one by one, whenever first used);
    `save()` writes the file once the start's conversions are made. Same checks, same off switch."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = os.environ if env is None else env
        self.cache: CodeCache | None = None

    def install(self) -> "cached_cattrs_compiles":
        if self.cache is not None or not cache_enabled(self.env):
            return self
        try:
            # cattrs.gen is what we patch: its module must be loaded to receive the compile() override
            import cattrs.gen as cattrs_gen
        except ImportError:
            return self
        self.cache = CodeCache(_read(cache_path(self.env, CATTRS_FILE_PREFIX)))
        # cattrs.gen calls the builtin by name: a module global of that name is found first
        cattrs_gen.compile = self.cache.compile
        return self

    def save(self) -> None:
        if self.cache is not None:
            _save(self.cache, cache_path(self.env, CATTRS_FILE_PREFIX))

    def uninstall(self) -> None:
        """Back to the builtin (tests)."""
        if self.cache is None:
            return
        # (same module as in install, loaded by then)
        import cattrs.gen as cattrs_gen

        if getattr(cattrs_gen, "compile", None) == self.cache.compile:
            del cattrs_gen.compile
        self.cache = None


def _read(path: str) -> dict:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return {}
    return decode(data) if len(data) <= MAX_FILE_BYTES else {}

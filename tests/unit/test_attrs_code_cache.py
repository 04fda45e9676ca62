"""lsp/attrs_code.py: attrs' generated methods come from the code cache, and nothing changes but time."""

import os
import subprocess
import sys
import textwrap

import attr._make as attrs_make
import attrs
import pytest

from harn_ls.lsp import attrs_code


def _define(name: str):
    """A fresh attrs class (slots, defaults, a converter-free field list like lsprotocol's)."""
    ns = {"attrs": attrs}
    exec(textwrap.dedent(f"""
        @attrs.define
        class {name}:
            uri: str
            version: int = 0
            items: list = attrs.field(factory=list)
    """), ns)
    return ns[name]


def _code_equal(a, b) -> bool:
    return (a.co_code == b.co_code and a.co_consts == b.co_consts and a.co_names == b.co_names
            and a.co_varnames == b.co_varnames and a.co_flags == b.co_flags and a.co_filename == b.co_filename)


def test_cached_code_is_the_code_attrs_compiles(tmp_path):
    env = {"HARN_LS_CACHE_DIR": str(tmp_path)}
    plain = _define("Plain")
    with attrs_code.cached_attrs_compiles(env) as first:
        filled = _define("Plain")
    assert first.cache.misses >= 1
    assert os.path.isfile(attrs_code.cache_path(env))
    with attrs_code.cached_attrs_compiles(env) as second:
        reused = _define("Plain")
    assert second.cache.misses == 0  # every compile() of the class was found in the file
    for method in ("__init__", "__repr__", "__eq__"):
        codes = [getattr(c, method).__code__ for c in (plain, filled, reused)]
        assert _code_equal(codes[0], codes[1]) and _code_equal(codes[0], codes[2]), method
    # the future flags attrs' module compiles with (annotations as strings) are kept
    assert plain.__init__.__annotations__ == reused.__init__.__annotations__
    a, b = reused("file:///x", 2), plain("file:///x", 2)
    assert (a.uri, a.version, a.items) == (b.uri, b.version, b.items) and repr(a).replace("Plain", "") == repr(b).replace("Plain", "")
    assert not hasattr(attrs_make, "compile")  # the override is gone after the block


@pytest.mark.parametrize("damage", ["truncated", "flipped", "foreign-magic", "not-ours", "empty"])
def test_damaged_file_is_ignored_and_written_again(tmp_path, damage):
    env = {"HARN_LS_CACHE_DIR": str(tmp_path)}
    with attrs_code.cached_attrs_compiles(env):
        _define("Damaged")
    path = attrs_code.cache_path(env)
    data = open(path, "rb").read()
    start = len(attrs_code.HEADER)
    bad = {"truncated": data[: len(data) // 2],
           "flipped": data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:],
           "foreign-magic": data[:start] + b"\x00\x00\r\n" + data[start + 4:],
           "not-ours": b"\x00" * 64 + data[64:],
           "empty": b""}[damage]
    with open(path, "wb") as fh:
        fh.write(bad)
    assert attrs_code.decode(bad) == {}
    with attrs_code.cached_attrs_compiles(env) as again:
        cls = _define("Damaged")
    assert again.cache.misses >= 1  # nothing trusted: compiled again
    assert cls("u").version == 0
    assert attrs_code.decode(open(path, "rb").read())  # and a good file written in its place


def test_cache_off_reads_and_writes_nothing(tmp_path):
    env = {"HARN_LS_CACHE_DIR": str(tmp_path), "HARN_LS_CACHE": "off"}
    with attrs_code.cached_attrs_compiles(env) as block:
        _define("Off")
    assert block.cache is None
    assert os.listdir(tmp_path) == []


def test_server_import_fills_and_reuses_the_cache(tmp_path):
    """A real first import of the server's modules (lsprotocol included) writes the file; the second
    compiles nothing; both define the same protocol classes."""
    env = dict(os.environ, HARN_LS_CACHE_DIR=str(tmp_path))
    env.pop("HARN_LS_CACHE", None)
    probe = ("import attr._make as m, harn_ls.lsp.attrs_code as ac\n"
             "seen = []\n"
             "orig = ac.CodeCache.compile\n"
             "def counting(self, *a, **k):\n"
             "    before = self.misses\n"
             "    out = orig(self, *a, **k)\n"
             "    seen.append(self.misses - before)\n"
             "    return out\n"
             "ac.CodeCache.compile = counting\n"
             "import harn_ls.lsp.server\n"
             "from lsprotocol import types\n"
             "p = types.Position(line=3, character=4)\n"
             "print(len(seen), sum(seen), repr(p), p == types.Position(3, 4))\n")
    runs = [subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    first, second = runs
    # every class compiled (but frozen ones' hash-holding scripts, never cached), then saved
    assert int(first[0]) > 300 and int(first[1]) >= 0.9 * int(first[0])
    assert int(second[0]) == int(first[0]) and int(second[1]) == 0  # the same calls, all found
    assert first[2:] == second[2:] == ["3:4", "True"]  # lsprotocol's own repr of a Position


def test_a_few_misses_do_not_rewrite_the_file(tmp_path):
    cache = attrs_code.CodeCache({})
    for i in range(40):
        cache.compile(f"x = {i}\n", "<attrs generated methods t>", "exec")
    assert cache.worth_saving()  # an empty file: everything missed
    warm = attrs_code.CodeCache(attrs_code.decode(attrs_code.encode(cache.used)))
    for i in range(41):  # one source never seen before (a seeded hash constant)
        code = warm.compile(f"x = {i}\n", "<attrs generated methods t>", "exec")
        ns: dict = {}
        exec(code, ns)
        assert ns["x"] == i
    assert warm.misses == 1 and not warm.worth_saving()


def test_generated_hash_methods_are_never_cached(tmp_path):
    """A frozen class's __hash__ source holds hash() of a string: seeded per process, so it is
    compiled every time and neither stored nor counted (it would make every start rewrite the file)."""
    env = {"HARN_LS_CACHE_DIR": str(tmp_path)}
    ns = {"attrs": attrs}
    with attrs_code.cached_attrs_compiles(env) as block:
        exec("@attrs.frozen\nclass Frozen:\n    x: int = 0\n", ns)
    assert block.cache.calls == 0 and not block.cache.used
    assert hash(ns["Frozen"](1)) == hash(ns["Frozen"](1)) and ns["Frozen"](1) == ns["Frozen"](1)


def _convert_with_fresh_converter(cls):
    """A new cattrs converter (no hook made yet): one structure and one unstructure of `cls`."""
    # cattrs is only these tests' (the others drive attrs alone)
    import cattrs

    converter = cattrs.Converter()
    obj = converter.structure({"uri": "file:///x", "version": 3, "items": [1, 2]}, cls)
    return obj, converter.unstructure(obj), converter


@pytest.mark.parametrize("damage", ["none", "flipped", "truncated"])
def test_converter_functions_come_from_their_own_cache(tmp_path, damage):
    """cattrs' generated (un)structure functions: the second process-like round finds every one in
    the file (unless the file was damaged: then all compile again), with the same results."""
    env = {"HARN_LS_CACHE_DIR": str(tmp_path)}
    cls = _define("Converted")
    plain = _convert_with_fresh_converter(cls)
    first = attrs_code.cached_cattrs_compiles(env).install()
    try:
        filled = _convert_with_fresh_converter(cls)
        calls = first.cache.calls
        assert first.cache.misses >= 2 and first.cache.misses == calls
    finally:
        first.save()
        first.uninstall()
    path = attrs_code.cache_path(env, attrs_code.CATTRS_FILE_PREFIX)
    assert path != attrs_code.cache_path(env) and os.path.isfile(path)
    data = open(path, "rb").read()
    if damage != "none":
        with open(path, "wb") as fh:
            fh.write(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:] if damage == "flipped" else data[: len(data) // 2])
    second = attrs_code.cached_cattrs_compiles(env).install()
    try:
        reused = _convert_with_fresh_converter(cls)
        assert second.cache.calls == calls
        assert second.cache.misses == (0 if damage == "none" else second.cache.calls)
    finally:
        second.uninstall()
    for got in (filled, reused):
        assert got[0] == plain[0] and got[1] == plain[1] == {"uri": "file:///x", "version": 3, "items": [1, 2]}
    hooks = [c.get_unstructure_hook(cls).__code__ for c in (plain[2], filled[2], reused[2])]
    assert _code_equal(hooks[0], hooks[1]) and _code_equal(hooks[0], hooks[2])


def test_converter_cache_off_reads_and_writes_nothing(tmp_path):
    env = {"HARN_LS_CACHE_DIR": str(tmp_path), "HARN_LS_CACHE": "off"}
    codes = attrs_code.cached_cattrs_compiles(env).install()
    assert codes.cache is None
    _convert_with_fresh_converter(_define("OffConverted"))
    codes.save()
    assert os.listdir(tmp_path) == []

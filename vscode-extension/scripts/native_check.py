"""What machine a compiled file is for, read from its header, and whether it suits a VSIX target.

    python scripts/native_check.py --target darwin-arm64 path/to/bundled/libs
    python scripts/native_check.py --target darwin-arm64 --max-mb 40 harn-state-darwin-arm64.vsix

Every file is looked at by its first bytes, not its name, so a native library without the usual
suffix (numpy.libs/libscipy_openblas…so.0, .dylibs/…) is checked too. Formats read:

* ELF (Linux): `e_machine` at byte 18, in the byte order of `EI_DATA`;
* Mach-O (macOS), thin 32/64-bit in either byte order: `cputype` at byte 4;
* Mach-O universal ("fat", big-endian `0xcafebabe`, or `0xcafebabf` with 64-bit offsets): the
  `cputype` of every slice; a file whose count of slices is implausible (Java class files share
  the magic) is not taken for one;
* PE (Windows): the COFF `Machine` after the `PE\\0\\0` signature.

A file suits a target when its format is the target's and its architecture is the target's (for a
universal Mach-O: one of its slices is). No external tool (`file`, `lipo`, `readelf`) is used.
Exit status 1 and one line per mismatch when any file does not suit the target.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

ELF_MACHINES = {3: "x86", 40: "arm", 62: "x86_64", 183: "arm64"}
MACHO_CPUS = {7: "x86", 12: "arm", 0x01000007: "x86_64", 0x0100000C: "arm64"}
PE_MACHINES = {0x14C: "x86", 0x8664: "x86_64", 0xAA64: "arm64", 0x1C4: "arm"}
MAX_FAT_SLICES = 30  # file(1) takes 0xcafebabe with a count below 43 for Mach-O; real ones hold 2-4

# VS Code target -> (format, architecture)
TARGETS = {
    "linux-x64": ("elf", "x86_64"),
    "linux-arm64": ("elf", "arm64"),
    "darwin-x64": ("macho", "x86_64"),
    "darwin-arm64": ("macho", "arm64"),
    "win32-x64": ("pe", "x86_64"),
}


class Native(NamedTuple):
    fmt: str  # "elf" | "macho" | "pe"
    archs: tuple[str, ...]  # one, or a universal Mach-O's slices; "unknown-N" for a number not listed


def _name(table: dict, number: int) -> str:
    return table.get(number, f"unknown-{number:#x}")


def identify(head: bytes) -> Native | None:
    """The format and architecture(s) from a file's first bytes (4096 are plenty); None: not native."""
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        order = "<" if head[5] == 1 else ">"
        (machine,) = struct.unpack_from(order + "H", head, 18)
        return Native("elf", (_name(ELF_MACHINES, machine),))
    magic = head[:4]
    if magic in (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe") and len(head) >= 8:
        order = ">" if magic[0] == 0xFE else "<"
        (cpu,) = struct.unpack_from(order + "i", head, 4)
        return Native("macho", (_name(MACHO_CPUS, cpu & 0xFFFFFFFF),))
    if magic in (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf") and len(head) >= 8:
        (count,) = struct.unpack_from(">I", head, 4)
        if not 0 < count <= MAX_FAT_SLICES:
            return None  # a Java class file (its version numbers sit where the count would)
        entry = 20 if magic[3] == 0xBE else 32
        archs = []
        for i in range(count):
            off = 8 + i * entry
            if off + 4 > len(head):
                archs.append("truncated")
                break
            (cpu,) = struct.unpack_from(">I", head, off)
            archs.append(_name(MACHO_CPUS, cpu))
        return Native("macho", tuple(archs))
    if head[:2] == b"MZ" and len(head) >= 0x40:
        (pe_at,) = struct.unpack_from("<I", head, 0x3C)
        if pe_at + 6 <= len(head) and head[pe_at:pe_at + 4] == b"PE\0\0":
            (machine,) = struct.unpack_from("<H", head, pe_at + 4)
            return Native("pe", (_name(PE_MACHINES, machine),))
    return None


def suits(native: Native, target: str) -> bool:
    fmt, arch = TARGETS[target]
    return native.fmt == fmt and arch in native.archs


def identify_file(path: str | os.PathLike) -> Native | None:
    with open(path, "rb") as fh:
        return identify(fh.read(4096))


def check_tree(root: str | os.PathLike, target: str) -> tuple[int, list[str]]:
    """(native files found, one message per file that does not suit `target`). Links are not followed."""
    found, wrong = 0, []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            native = identify_file(path)
            if native is None:
                continue
            found += 1
            if not suits(native, target):
                wrong.append(f"{path}: {native.fmt} {'+'.join(native.archs)}, not {' '.join(TARGETS[target])}")
    return found, wrong


def check_zip(path: str | os.PathLike, target: str) -> tuple[int, list[str]]:
    """`check_tree` over the members of a zip (a VSIX, a wheel), read without unpacking."""
    found, wrong = 0, []
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.is_dir():
                continue
            with z.open(info) as fh:
                native = identify(fh.read(4096))
            if native is None:
                continue
            found += 1
            if not suits(native, target):
                wrong.append(f"{path}!{info.filename}: {native.fmt} {'+'.join(native.archs)}, "
                             f"not {' '.join(TARGETS[target])}")
    return found, wrong


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True, choices=sorted(TARGETS))
    ap.add_argument("--max-mb", type=float, help="also fail when a zip given is larger (MB, 10^6 bytes)")
    ap.add_argument("paths", nargs="+", type=Path, help="folders, or zips (.vsix, .whl) read in place")
    args = ap.parse_args(argv)
    total, bad = 0, []
    for p in args.paths:
        n, wrong = check_zip(p, args.target) if p.is_file() and zipfile.is_zipfile(p) else check_tree(p, args.target)
        total += n
        bad += wrong
        if args.max_mb is not None and p.is_file() and p.stat().st_size > args.max_mb * 1e6:
            bad.append(f"{p}: {p.stat().st_size / 1e6:.1f} MB, over the {args.max_mb:g} MB budget")
    for line in bad:
        print(f"native-check: {line}", file=sys.stderr)
    print(f"native-check: {total} native files, {len(bad)} not for {args.target}")
    return 1 if bad or total == 0 else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""vscode-extension/scripts/native_check.py: the machine of a compiled file, from its header.

Headers are laid out byte by byte as the formats define them (elf.h, mach-o/loader.h and fat.h,
the PE/COFF spec); the real interpreter running this test is checked as the ELF it is. `make vsix`
runs the same checker over every file of every platform's bundle (darwin's real Mach-O files).
"""

from __future__ import annotations

import importlib.util
import platform
import struct
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "vscode-extension" / "scripts" / "native_check.py"
spec = importlib.util.spec_from_file_location("native_check", SCRIPT)
nc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nc)


def elf(machine: int, little: bool = True, bits64: bool = True) -> bytes:
    order = "<" if little else ">"
    ident = b"\x7fELF" + bytes([2 if bits64 else 1, 1 if little else 2, 1]) + b"\0" * 9
    return ident + struct.pack(order + "HHI", 3, machine, 1) + b"\0" * 40  # e_type ET_DYN, e_machine, e_version


def macho(cpu: int, magic: int = 0xFEEDFACF, little: bool = True) -> bytes:
    order = "<" if little else ">"
    return struct.pack(order + "IiiIIII", magic, cpu, 0, 6, 0, 0, 0) + b"\0" * 32  # MH_DYLIB


def fat(cpus: list[int], wide: bool = False) -> bytes:
    head = struct.pack(">II", 0xCAFEBABF if wide else 0xCAFEBABE, len(cpus))
    for i, cpu in enumerate(cpus):
        offset = 0x4000 * (i + 1)
        head += (struct.pack(">iiQQII", cpu, 0, offset, 0x1000, 14, 0) if wide
                 else struct.pack(">iiIII", cpu, 0, offset, 0x1000, 14))
    return head


def pe(machine: int) -> bytes:
    dos = bytearray(0x80)
    dos[:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, 0x80)
    return bytes(dos) + b"PE\0\0" + struct.pack("<H", machine) + b"\0" * 18


ARM64, X86_64 = 0x0100000C, 0x01000007


@pytest.mark.parametrize("head,expected", [
    (elf(62), ("elf", ("x86_64",))),
    (elf(183), ("elf", ("arm64",))),
    (elf(183, little=False), ("elf", ("arm64",))),  # big-endian header: e_machine read in its order
    (elf(40, bits64=False), ("elf", ("arm",))),
    (elf(0xF3), ("elf", ("unknown-0xf3",))),  # RISC-V: named as unknown, suits no target
    (macho(ARM64), ("macho", ("arm64",))),
    (macho(X86_64), ("macho", ("x86_64",))),
    (macho(X86_64, little=False), ("macho", ("x86_64",))),
    (macho(7, magic=0xFEEDFACE), ("macho", ("x86",))),
    (fat([X86_64, ARM64]), ("macho", ("x86_64", "arm64"))),  # universal2
    (fat([ARM64], wide=True), ("macho", ("arm64",))),  # fat64
    (pe(0x8664), ("pe", ("x86_64",))),
    (pe(0xAA64), ("pe", ("arm64",))),
])
def test_identifies_format_and_architecture(head, expected):
    assert tuple(nc.identify(head)) == expected


@pytest.mark.parametrize("head", [
    b"",
    b"\x7fEL",
    b"#!/usr/bin/env python3\n",
    b"PK\x03\x04" + b"\0" * 40,  # a zip (a wheel, an egg)
    struct.pack(">IHH", 0xCAFEBABE, 0, 61) + b"\0" * 20,  # a Java 17 class file shares the fat magic
    b"MZ" + b"\0" * 100,  # MZ without a PE header
])
def test_non_native_files_are_not_taken_for_binaries(head):
    assert nc.identify(head) is None


def test_suits_only_its_own_target():
    universal = nc.identify(fat([X86_64, ARM64]))
    assert nc.suits(universal, "darwin-arm64") and nc.suits(universal, "darwin-x64")
    assert not nc.suits(universal, "linux-x64")
    arm_only = nc.identify(macho(ARM64))
    assert nc.suits(arm_only, "darwin-arm64") and not nc.suits(arm_only, "darwin-x64")
    assert not nc.suits(nc.identify(elf(62)), "linux-arm64")
    assert not nc.suits(nc.identify(elf(183)), "darwin-arm64")  # right CPU, wrong format


@pytest.mark.skipif(sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"),
                    reason="the host interpreter is the real ELF checked here")
def test_the_real_interpreter_is_an_elf_of_this_machine():
    native = nc.identify_file(Path(sys.executable).resolve())
    assert native.fmt == "elf"
    assert native.archs == ({"x86_64": "x86_64", "aarch64": "arm64"}[platform.machine()],)


def test_a_tree_check_names_each_stray_file_and_fails(tmp_path, capsys):
    lib = tmp_path / "libs" / "cp312" / "numpy.libs"
    lib.mkdir(parents=True)
    (lib / "libopenblas.so.0").write_bytes(elf(62))  # no .so suffix at the end: found by its header
    (lib / "good.dylib").write_bytes(fat([X86_64, ARM64]))
    (lib / "README.txt").write_text("not native")
    assert nc.main(["--target", "darwin-arm64", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "libopenblas.so.0: elf x86_64, not macho arm64" in err and "good.dylib" not in err
    (lib / "libopenblas.so.0").unlink()
    assert nc.main(["--target", "darwin-arm64", str(tmp_path)]) == 0
    assert nc.main(["--target", "darwin-x64", str(tmp_path)]) == 0


def test_a_tree_without_any_native_file_fails(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    assert nc.main(["--target", "linux-x64", str(tmp_path)]) == 1  # a bundle with no compiled file is broken


def test_a_vsix_is_checked_in_place_and_held_to_its_size(tmp_path, capsys):
    import zipfile

    vsix = tmp_path / "harn-state-linux-arm64.vsix"
    with zipfile.ZipFile(vsix, "w") as z:
        z.writestr("extension/bundled/libs/cp312/numpy/_core/_multiarray_umath.so", elf(183))
        z.writestr("extension/bundled/libs/common/yaml/__init__.py", "x = 1\n")
    assert nc.main(["--target", "linux-arm64", "--max-mb", "1", str(vsix)]) == 0
    assert nc.main(["--target", "linux-x64", str(vsix)]) == 1
    assert "_multiarray_umath.so: elf arm64, not elf x86_64" in capsys.readouterr().err
    assert nc.main(["--target", "linux-arm64", "--max-mb", "0.0001", str(vsix)]) == 1
    assert "over the 0.0001 MB budget" in capsys.readouterr().err

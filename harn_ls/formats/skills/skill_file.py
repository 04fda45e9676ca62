"""One SKILL.md read into a `Skill`, every defect a `Problem` (§F).

Skills in the pattern-learning roots (`claude`, `burin`) are judged leniently:
Harn's own loader never reads them, so what it would reject there is INFO.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import sha256
from typing import TYPE_CHECKING, Any

from harn_ls.util.safe_read import resolves_inside

from ..problems import Problem, Severity
from .common import (
    CODE_INVALID_UTF8,
    CODE_MISSING_SHORT,
    CODE_NO_FRONTMATTER,
    CODE_NOT_MAPPING,
    CODE_SIGNATURE_INVALID,
    CODE_SIGNATURE_REQUIRED,
    CODE_SIGNER,
    CODE_SYMLINK_OUTSIDE,
    CODE_TOO_LARGE,
    CODE_UNKNOWN_FIELD,
    CODE_UNREADABLE,
    CODE_YAML,
    CODE_YAML_LIMIT,
    MAX_SKILL_BYTES,
    PATTERN_LAYERS,
    STATUS_INVALID_SIGNATURE,
    STATUS_MISSING_SIGNER,
    STATUS_UNTRUSTED_SIGNER,
    STATUS_VERIFIED,
    _read_bounded,
    _TooLarge,
)
from .frontmatter import _split
from .signatures import SignatureStatus, verify_signature

if TYPE_CHECKING:
    from .validation import _Parsed


# --------------------------------------------------------------------------
# Skill files


@dataclass
class Skill:
    """One SKILL.md as read: its fields, body, layer and problems."""

    id: str  # `<namespace>/<name>` or `<name>`
    name: str  # frontmatter `name`, else the directory basename
    layer: str
    root: str
    path: str  # the SKILL.md file
    directory: str
    namespace: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    short: str = ""
    description: str = ""
    when_to_use: str | None = None
    unknown_fields: list[str] = field(default_factory=list)
    sha256: str = ""  # "" when the bytes could not be read
    signature: SignatureStatus | None = None  # None: not checked (pattern-learning root, unreadable, ...)
    problems: list[Problem] = field(default_factory=list)
    shadowed_by: str | None = None  # layer label of the winner with the same id
    loadable: bool = True  # False when Harn's loader (or, for claude/burin, pattern learning) skips it
    body_line: int = 1  # 1-based file line where the body starts


def _utf8_error_line(data: bytes, exc: UnicodeDecodeError) -> int:
    return data.count(b"\n", 0, exc.start) + 1


def parse_skill_file(
    path: str,
    layer: str,
    root: str | None = None,
    namespace: str | None = None,
    *,
    trusted_signers_dir: str | None = None,
    registry_dir: str | None = None,
    confine_to: str | None = None,
    registry_is_project: bool = True,
) -> Skill:
    """Read one SKILL.md. Never raises.

    `root` defaults to the skill directory's parent. `confine_to`, when
    given, is a directory the SKILL.md and its .sig must resolve inside
    (symlinks leaving it are not followed). Signatures are checked for Harn
    layers only; pattern-learning roots get `signature=None`.
    """
    directory = os.path.dirname(path)
    root = root if root is not None else os.path.dirname(directory)
    dir_name = os.path.basename(os.path.normpath(directory))
    pattern = layer in PATTERN_LAYERS
    problems: list[Problem] = []
    skill = Skill(
        id=f"{namespace}/{dir_name}" if namespace else dir_name,
        name=dir_name,
        layer=layer,
        root=root,
        path=path,
        directory=directory,
        namespace=namespace,
        problems=problems,
        loadable=False,
    )
    skip_word = "pattern learning cannot read it" if pattern else "Harn skips this skill"

    data = _read_skill_bytes(path, confine_to, skip_word, problems)
    if data is None:
        return skill
    skill.sha256 = sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(path, _utf8_error_line(data, exc), CODE_INVALID_UTF8,
                    f"SKILL.md is not valid UTF-8 (byte {exc.start}); {skip_word}", Severity.ERROR)
        )
        return skill

    # start-up: validation pulls in PyYAML (~30 ms); only a SKILL.md that was found and read needs it
    from .validation import _parse_detailed, _Parsed

    split = _split(text)
    skill.body = split.body
    skill.body_line = split.body_line
    if split.frontmatter is None:
        problems.append(
            Problem(path, 1, CODE_NO_FRONTMATTER,
                    "SKILL.md has no `---` frontmatter; Harn loads it with the directory name and an empty "
                    "`short` card", Severity.INFO)
        )
        parsed = _Parsed()
    else:
        parsed = _parse_detailed(split.frontmatter)

    def file_line(issue_line: int | None) -> int:
        if issue_line is None:
            return max(split.yaml_line - 1, 1) if split.yaml_line else 1
        return split.yaml_line + issue_line

    loadable = _frontmatter_problems(parsed, path, pattern, skip_word, file_line, problems)
    fields = parsed.fields
    skill.fields = fields
    skill.unknown_fields = [key for key, _ in parsed.unknown]
    name = fields.get("name")
    skill.name = name if isinstance(name, str) and name else dir_name
    skill.id = f"{namespace}/{skill.name}" if namespace else skill.name
    skill.short = fields.get("short") or ""
    skill.description = fields.get("description") or ""
    skill.when_to_use = fields.get("when_to_use")
    skill.loadable = loadable

    if not pattern:
        _check_signature(skill, data, trusted_signers_dir, registry_dir, confine_to, registry_is_project,
                          file_line(parsed.key_lines.get("require_signature")))
    return skill


def _read_skill_bytes(path: str, confine_to: str | None, skip_word: str, problems: list[Problem]) -> bytes | None:
    """The SKILL.md bytes, or None with the reason appended to `problems`."""
    if confine_to is not None and not resolves_inside(path, confine_to):
        problems.append(
            Problem(
                path, 0, CODE_SYMLINK_OUTSIDE,
                f"SKILL.md resolves outside {confine_to} through a symlink; harn-ls does not follow it "
                "(Harn itself would)",
                Severity.WARNING,
            )
        )
        return None
    try:
        return _read_bounded(path, MAX_SKILL_BYTES)
    except _TooLarge:
        # We cannot tell what Harn does with it, so it is not counted as loadable.
        problems.append(
            Problem(path, 0, CODE_TOO_LARGE,
                    "harn-ls does not parse SKILL.md files over 1 MB; whether Harn loads it is not checked",
                    Severity.WARNING)
        )
        return None
    except ValueError as exc:  # not a regular file (directory, FIFO, device)
        problems.append(Problem(path, 0, CODE_UNREADABLE, f"SKILL.md is {exc}; {skip_word}", Severity.ERROR))
        return None
    except OSError as exc:
        problems.append(
            Problem(path, 0, CODE_UNREADABLE, f"cannot read SKILL.md ({exc.strerror or exc}); {skip_word}",
                    Severity.ERROR)
        )
        return None


def _frontmatter_problems(
    parsed: _Parsed, path: str, pattern: bool, skip_word: str, file_line: Callable[[int | None], int],
    problems: list[Problem],
) -> bool:
    """Append the frontmatter's problems; False when Harn's loader would skip the file."""
    loadable = True
    for issue in parsed.errors:
        if pattern:
            # Pattern learning reads description/when-to-use by line prefix;
            # only a broken YAML block is worth a warning there.
            if issue.code == CODE_MISSING_SHORT:
                message = ("no `short` field: Harn's own skill loader would reject this file if it were in a "
                           "Harn skill layer")
            else:
                message = f"{issue.message} (Harn's own skill loader would reject this file if it were in a " \
                          "Harn skill layer)"
            severity = Severity.WARNING if issue.code in (CODE_YAML, CODE_YAML_LIMIT, CODE_NOT_MAPPING) \
                else Severity.INFO
        else:
            loadable = False
            message = f"{issue.message}; {skip_word}"
            severity = Severity.ERROR
        problems.append(Problem(path, file_line(issue.line), issue.code, message, severity))
    for issue in parsed.notes:
        problems.append(Problem(path, file_line(issue.line), issue.code, issue.message, issue.severity))
    if parsed.unknown and not pattern:
        # Pattern-learning files always carry `category`/`tags`; flagging them is noise.
        for key, line in parsed.unknown:
            problems.append(
                Problem(path, file_line(line), CODE_UNKNOWN_FIELD,
                        f"unknown frontmatter field `{key}`; Harn ignores it and warns "
                        "(skills: <id> has unknown frontmatter fields)", Severity.WARNING)
            )
    return loadable


def _check_signature(
    skill: Skill, data: bytes, trusted_signers_dir: str | None, registry_dir: str | None, confine_to: str | None,
    registry_is_project: bool, require_line: int,
) -> None:
    """Verify SKILL.md.sig (Harn layers only) into `skill.signature` and its problems."""
    path, fields, problems = skill.path, skill.fields, skill.problems
    sig_path = path + ".sig"
    if confine_to is not None and os.path.lexists(sig_path) and not resolves_inside(sig_path, confine_to):
        problems.append(
            Problem(sig_path, 0, CODE_SYMLINK_OUTSIDE,
                    f"SKILL.md.sig resolves outside {confine_to} through a symlink; harn-ls does not follow it",
                    Severity.WARNING)
        )
    else:
        allow = fields.get("trusted_signers") or []
        skill.signature = verify_signature(data, sig_path, trusted_signers_dir, allow, registry_dir=registry_dir,
                                           registry_is_project=registry_is_project)
        problems.extend(_signature_problems(skill, require_line))


def _signature_problems(skill: Skill, require_line: int) -> list[Problem]:
    sig = skill.signature
    if sig is None:
        return []
    out: list[Problem] = []
    status = sig.status
    if status == STATUS_INVALID_SIGNATURE:
        out.append(Problem(skill.path, 0, CODE_SIGNATURE_INVALID,
                           f"signature mismatch: {sig.error}; Harn warns and marks the skill untrusted",
                           Severity.ERROR))
    elif status in (STATUS_MISSING_SIGNER, STATUS_UNTRUSTED_SIGNER):
        out.append(Problem(skill.path, 0, CODE_SIGNER,
                           f"{status.replace('_', ' ')}: {sig.error}; Harn warns and marks the skill untrusted",
                           Severity.WARNING))
    if skill.fields.get("require_signature") is True and status != STATUS_VERIFIED:
        out.append(Problem(skill.path, require_line, CODE_SIGNATURE_REQUIRED,
                           f"require_signature is true but the signature status is {status}; Harn refuses to load "
                           "this skill (UnsignedSkillError)", Severity.ERROR))
    return out

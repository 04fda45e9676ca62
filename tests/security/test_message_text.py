"""Issue 27 item 1: data and setting values in messages are inert (util/message_text.py).

"Inert" is checked against what the clients do:
- VS Code notifications (`window/showMessage`, progress, the extension's own notifications) find
  `[label](target)` with an http(s)/command/file target anywhere in the text, no escapes honoured:
  `linked_text_links` below is that rule, written from VS Code's behaviour;
- Markdown clients: `tests/security/inert.py` (no link, autolink, HTML or image outside code).
"""

from __future__ import annotations

import random
import re

import pytest

from harn_ls.util.message_text import QUOTE_BYTES, defuse, quote
from tests.security.inert import _drop_code_spans, assert_no_live_markup

# VS Code's rule for links in notification text: `[label](target "title")`, the label without `]`,
# the target starting with http(s)://, command: or file: (any case) and holding no `)` or blank.
_LINKED = re.compile(r"\[([^\]]+)\]\(((?:https?://|command:|file:)[^)\s]+)(?: ([\"'])(.+?)\3)?\)", re.I)


def linked_text_links(text: str) -> list[str]:
    return [m.group(2) for m in _LINKED.finditer(text)]


FIX_IT = "[Fix it](command:workbench.action.terminal.newWithProfile?%7B%22config%22%3A%7B%7D%7D)"
HOSTILE = {
    "plain link": FIX_IT,
    "upper-case scheme": "[Fix it](COMMAND:workbench.action.terminal.new)",
    "https target": "[docs](https://evil.example/approve)",
    "file target": "[open](file:///etc/passwd)",
    "with a title": '[Fix it](command:x.y "Run the fix")',
    "nested brackets": "[[Fix]] [it]](command:workbench.action.terminal.new)",
    "brackets inside the label": "[a [b] c](command:x)",
    "escaped brackets (no escape in notifications)": r"\[Fix it\](command:x)",
    "escaped backslash then link": "\\\\[x](command:x)",
    "backslash before the paren": r"[x]\(command:x)",
    "double backslash before the paren": "[x]\\\\(command:x)",
    "encoded colon": "[x](command%3Aworkbench.action.terminal.new)",
    "encoded arguments": "[x](command:vscode.open?%5B%22file%3A%2F%2F%2Fetc%2Fpasswd%22%5D)",
    "angle-bracket autolink": "<command:workbench.action.terminal.new>",
    "angle-bracket https autolink": "<https://evil.example/x>",
    "email autolink": "<evil@example.com>",
    "raw HTML link": '<a href="command:workbench.action.terminal.new">Fix it</a>',
    "escaped-backslash autolink": "\\\\<command:x>",
    "reference link": "[Fix it][fix]\n[fix]: command:workbench.action.terminal.new",
    "collapsed reference": "[fix][]\n[fix]: command:x",
    "shortcut reference": "[fix]\n\n[fix]: command:x",
    "image": "![x](command:x)",
    "fullwidth look-alikes": "［Fix it］（command:x）",
    "zero-width space between": "[Fix it]\u200b(command:x)",
    "right-to-left override": "\u202e)x:dnammoc(]ti xiF[",
    "backticks to close the code span": "`` ` [x](command:x) ` ``",
    "newline to fake a second message": "ok\nHarn State: [Fix it](command:x)",
    "control characters": "a\x1b[31m[x](command:x)\x07",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_quote_leaves_no_link_for_any_client(name):
    value = HOSTILE[name]
    q = quote(value)
    assert linked_text_links(q) == [], f"{name}: VS Code would link {q!r}"
    assert linked_text_links(f"Harn State: skillRoot {q} is outside the roots") == []
    # Markdown clients: the whole value is one code span, nothing of it outside
    assert _drop_code_spans(q) == "CODE", f"{name}: the value leaves its code span: {q!r}"
    assert_no_live_markup(f"Harn State: {q}", name)
    assert "\n" not in q and "\r" not in q


@pytest.mark.parametrize("name", list(HOSTILE))
def test_defuse_leaves_no_link_in_a_whole_message(name):
    text = f"refused: {HOSTILE[name]} is not a valid skill name"
    d = defuse(text)
    assert linked_text_links(d) == [], f"{name}: {d!r}"
    for pair in ("](", "][", "]:"):
        assert pair not in d
    assert not re.search(r"(?<!\\)<[A-Za-z/!?]", d.replace("\\\\", "")), d
    assert defuse(d) == d  # once is enough


def test_quote_keeps_the_value_readable():
    assert quote("learned-fix") == "`learned-fix`"
    assert quote(".claude/skills") == "`.claude/skills`"
    assert quote(FIX_IT) == "`[Fix it]\\(command:workbench.action.terminal.newWithProfile?%7B%22config%22%3A%7B%7D%7D)`"
    assert quote("a`b") == "``a`b``"
    assert quote("`x`") == "`` `x` ``"
    assert quote("") == "(empty)" and quote(None) == "(empty)"
    # look-alikes stay what they are: nothing is normalized into ASCII syntax
    assert quote("［Fix it］（command:x）") == "`［Fix it］（command:x）`"
    assert quote("x\u202ey") == "`x\\u202ey`" and quote("a\nb") == "`a\\nb`"


def test_defuse_changes_nothing_in_ordinary_text():
    for text in ("Accepted learned-fix: wrote .claude/skills/learned-fix/SKILL.md",
                 "typecheck fail: 2 errors (exit 1)", "a < b and c > d", "see (the log) [v2]",
                 "ratio 3:1", "ünïcödé ✓ 👩‍💻"):
        assert defuse(text) == text


def test_quote_caps_a_long_value():
    q = quote("x" * 10_000)
    assert len(q) < QUOTE_BYTES + 60 and q.endswith(f"(… {10_000 - QUOTE_BYTES:,} more bytes)")
    q = quote("é" * 1000)  # cut on a character boundary
    assert "é" * (QUOTE_BYTES // 2) in q and "\ufffd" not in q


def test_fuzz_no_link_survives():
    """Random mixes of the characters link syntax is made of: nothing ever comes out linked."""
    rng = random.Random(27)
    atoms = ["[", "]", "(", ")", "<", ">", "\\", "`", "!", ":", " ", "\n", "command:x", "https://e.x",
             "file:/x", "a", "\u200b", "［", "）", "\"t\"", "@"]
    for _ in range(4000):
        s = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 24)))
        q, d = quote(s), defuse(s)
        assert linked_text_links(q) == [] and linked_text_links(d) == [], s
        assert _drop_code_spans(q) == "CODE", (s, q)
        assert defuse(d) == d, s
        # only backslashes were added (and hidden characters spelled out): the text is still all there
        it = iter(d)
        assert all(ch in it for ch in s.replace("\u200b", "").replace("\n", "")), (s, d)


def test_a_message_leaving_the_server_is_capped_then_defused():
    from harn_ls.lsp.messages import defuse as outgoing
    from harn_ls.render.limits import MESSAGE_BYTES

    big = "refused: " + FIX_IT * 2000
    out = outgoing(big)
    assert len(out.encode()) <= MESSAGE_BYTES + 200 and "more bytes" in out  # backslashes added after the cut
    assert linked_text_links(out) == []
    assert outgoing("ok") == "ok"

"""A transcript as a conversation: one turn per event, roles set apart, tool calls folded.

The structure (headings, `<details>`, `<pre>`, `<img>`) is ours; every piece of
text from the transcript is escaped: `md_para`/`md_text` in Markdown, `html_text`
inside our HTML. Each HTML piece is written on ONE line, so a blank line in the
data can never end an HTML block early and let the rest be read as Markdown.

Images are shown only for transcript assets whose file is inside the project:
the storage path is resolved (symlinks too) under the project root, must be a
regular file, small, and start with a PNG/JPEG/GIF/WebP signature; it is then
embedded as a `data:` URI (the rendered view loads nothing from disk).
"""

from __future__ import annotations

import base64
import os
import re
import stat
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harn_ls.formats.transcripts import TranscriptEvent, blocks_visibility, normalize_block
from harn_ls.render.markdown import pretty_json, summarize_value
from harn_ls.render.svg import PICTURE_PREFIX, html_text, md_escape_lines, md_text
from harn_ls.render.timeline import load_llm_log
from harn_ls.util.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from harn_ls.formats.transcripts import Transcript, TranscriptAsset
    from harn_ls.model.runs import TranscriptEntry
    from harn_ls.model.workspace import Workspace

TEXT_LIMIT = 4000
TOOL_LIMIT = 2000
IMAGE_MAX_BYTES = 256 * 1024
IMAGES_TOTAL_BYTES = 512 * 1024

ROLE_LABEL = {
    "user": "🧑 User",
    "assistant": "🤖 Assistant",
    "system": "⚙️ System",
    "tool": "🔧 Tool",
    "tool_result": "🔧 Tool result",
    "developer": "⚙️ Developer",
}

_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
               (b"GIF89a", "image/gif"))


def md_para(text: str) -> str:
    """Multi-line data text as escaped Markdown paragraphs (line breaks kept, nothing interpreted).

    The escapes are line-local (none looks across a line break), so they run once over the whole
    text; only a line's lead and start are looked at per line: a transcript of many short lines
    costs ~1 us a line, not the ~5 us of escaping each line on its own."""
    text = str(text).replace("\r\n", "\n").replace("\r", "\n")
    return _PARA_LINE.sub(_para_line, md_escape_lines(text)).strip("\n")


# a line: its indent (spaces and tabs) and the rest
_PARA_LINE = re.compile(r"^([ \t]*)(.*)$", re.M)
# What only means something at the start of a line: headings, quotes, lists, rules, setext.
_LINE_START = re.compile(r"^([#>+\-=]|\d+[.)])")


def _para_line(m: re.Match[str]) -> str:
    lead, rest = m.group(1), m.group(2)
    if not rest.strip():
        return ""
    rest = _LINE_START.sub(lambda s: "\\" + s.group(1) if len(s.group(1)) == 1 else s.group(1)[:-1] + "\\" + s.group(1)[-1],
                           rest, count=1)
    return "&nbsp;" * min(len(lead), 16) + rest + "  "


def _pre(text: str) -> str:
    """Text in a <pre> on one line (html_text spells newlines as character references)."""
    return "<pre>" + html_text(text) + "</pre>"


def details(summary_html: str, body_html: str, open_: bool = False) -> str:
    """One line: our <details>, with `summary_html`/`body_html` already escaped."""
    return f"<details{' open' if open_ else ''}><summary>{summary_html}</summary>{body_html}</details>"


@dataclass
class Context:
    """What rendering one conversation keeps as it goes."""

    project_root: str | None
    assets: dict[str, TranscriptAsset]  # asset id -> TranscriptAsset
    show_private: bool = False
    tokens: list[tuple[JsonValue, JsonValue]] = field(default_factory=list)  # (in, out) per assistant turn, from the turn log
    images_left: int = IMAGES_TOTAL_BYTES
    assistant_seen: int = 0


def confined_image(project_root: str | None, storage_path: str | None, budget: int) -> tuple[str | None, str]:
    """(data URI or None, reason). Only regular files whose real path is inside the project."""
    if not project_root or not storage_path:
        return None, "no stored file"
    root = os.path.realpath(project_root)
    target = storage_path if os.path.isabs(storage_path) else os.path.join(root, storage_path)
    real = os.path.realpath(target)
    if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
        return None, "outside the project: not shown"
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None, "file missing"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file"
        if st.st_size > min(IMAGE_MAX_BYTES, budget):
            return None, f"{st.st_size} bytes: too large to embed"
        data = os.read(fd, IMAGE_MAX_BYTES + 1)
    finally:
        os.close(fd)
    mime = next((m for sig, m in _SIGNATURES if data.startswith(sig)), None)
    if mime is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        mime = "image/webp"
    if mime is None:
        return None, "not a PNG, JPEG, GIF or WebP image"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}", ""


def _tokens_of(ev: TranscriptEvent) -> tuple[int | None, int | None]:
    meta = ev.metadata if isinstance(ev.metadata, dict) else {}
    usage = meta.get("usage")
    usage = usage if isinstance(usage, dict) else meta
    i, o = usage.get("input_tokens"), usage.get("output_tokens")

    def ok(v: JsonValue) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return ok(i), ok(o)


def _tool_call(b: JsonObject) -> str:
    args = b.get("arguments", b.get("input", b.get("args")))
    name = b.get("name") or "?"
    summary = f"🔧 Tool call <code>{html_text(name)}</code>" + (
        f" · <code>{html_text(b.get('id'))}</code>" if b.get("id") else "")
    body = _pre(pretty_json(args, TOOL_LIMIT)) if args is not None else "<p>no arguments</p>"
    return details(summary, body)


def _tool_result(b: JsonObject) -> str:
    body = b.get("text", b.get("content", b.get("output")))
    text = body if isinstance(body, str) else pretty_json(body, TOOL_LIMIT)
    text = summarize_value(text or "", TEXT_LIMIT)
    call = b.get("tool_call_id") or b.get("tool_use_id")
    lines = text.count("\n") + 1 if text else 0
    summary = (f"📄 Tool result <code>{html_text(b.get('name') or '?')}</code>"
               + (f" for <code>{html_text(call)}</code>" if call else "")
               + (" · <b>error</b>" if b.get("is_error") else "") + f" · {lines} line(s)")
    return details(summary, _pre(text) if text else "<p>empty</p>")


def _image(b: JsonObject, ctx: Context) -> str:
    asset_id = b.get("asset_id")
    asset = ctx.assets.get(asset_id) if isinstance(asset_id, str) else None
    name = b.get("name") or (asset.name if asset else None) or b.get("asset_id") or "image"
    if asset is None:
        return f"🖼️ *image {md_text(name)} (asset not in this transcript)*"
    uri, why = confined_image(ctx.project_root, asset.storage_path, ctx.images_left)
    if uri is None:
        return f"🖼️ *image {md_text(name)} — {md_text(asset.storage_path or '')}: {md_text(why)}*"
    ctx.images_left -= len(uri)
    # A picture line: plain-text readers drop it (svg.strip_pictures), the rendered view shows it.
    return (f'{PICTURE_PREFIX}<img src="{uri}" alt="{html_text(name)}" title="{html_text(asset.storage_path)}" '
            f'style="max-width:480px"></div>\n\n🖼️ *{md_text(name)}*')


def render_event(i: int, ev: TranscriptEvent, ctx: Context) -> tuple[str, bool]:
    """Markdown for one turn, and whether it was hidden as private."""
    role = ev.role or ("system" if ev.kind in ("system_prompt", "compaction") else "?")
    label = ROLE_LABEL.get(role, f"💬 {md_text(role)}")
    private = ev.is_private or ev.kind == "private_reasoning"
    head = f"#### {label} · #{i + 1}" + (f" · {md_text(ev.kind)}" if ev.kind not in ("message",) else "")
    if ev.visibility and ev.visibility != "public":
        head += f" · *{md_text(ev.visibility)}*"
    if private and not ctx.show_private:
        return head + "\n\n*🔒 private reasoning hidden (setting `harnState.transcripts.showPrivate`)*\n", True

    tin, tout = _tokens_of(ev)
    if role == "assistant" and ev.kind == "message":
        if tin is None and ctx.assistant_seen < len(ctx.tokens):
            tin, tout = ctx.tokens[ctx.assistant_seen]
        ctx.assistant_seen += 1
    parts: list[str] = []  # in block order: escaped text paragraphs and our one-line HTML
    text_blocks = []
    for b in ev.blocks:
        if not isinstance(b, dict):
            continue
        if b.get("visibility") == "private" and not ctx.show_private:
            continue
        t = b.get("type")
        if t == "text":
            text_blocks.append(str(b.get("text") or ""))
            if b.get("text"):
                parts.append(md_para(summarize_value(str(b.get("text")), TEXT_LIMIT)))
        elif t == "reasoning":
            if ctx.show_private:
                parts.append(details("💭 Reasoning", _pre(summarize_value(str(b.get("text") or ""), TEXT_LIMIT)), open_=True))
        elif t == "tool_call":
            parts.append(_tool_call(b))
        elif t == "tool_result":
            parts.append(_tool_result(b))
        elif t == "image":
            parts.append(_image(b, ctx))
        else:
            parts.append(f"*{md_text(t)} block* {md_text(b.get('name') or b.get('path') or '')}")
    if not ev.blocks:
        text_blocks.append(ev.harn_text if ctx.show_private else ev.visible_text)
        if text_blocks[-1]:
            parts.append(md_para(summarize_value(text_blocks[-1], TEXT_LIMIT)))
    text = "\n\n".join(x for x in text_blocks if x)
    if tin is not None or tout is not None:
        head += f" · tokens in {tin if tin is not None else '?'} / out {tout if tout is not None else '?'}"
    elif text:  # no count recorded: about four characters a token
        head += f" · ≈{max(1, len(text) // 4)} tokens"

    body: list[str] = []
    comp = ev.compaction
    if comp is not None:
        saved = f", {comp.tokens_saved} saved" if comp.tokens_saved is not None else ""
        archived = comp.archived_messages if comp.archived_messages is not None else "?"
        body.append(f"> ✂️ **Compaction** — {archived} message(s) archived, "
                    f"~{comp.estimated_tokens_before} → ~{comp.estimated_tokens_after} tokens{saved} "
                    f"({md_text(comp.mode or '')} · {md_text(comp.strategy or comp.engine_strategy or '')}"
                    + (f", kept first {comp.keep_first} and last {comp.keep_last}" if comp.keep_first is not None else "") + ")")
        body.append(details("What was archived", _pre(pretty_json(comp.raw, 1000))))
    body.extend(parts)
    if ev.kind not in ("message", "compaction", "tool_result") and isinstance(ev.metadata, dict) and ev.metadata:
        body.append(details("metadata", _pre(pretty_json(ev.metadata, 500))))
    return head + "\n\n" + "\n\n".join(body) + "\n", False


def context_for(ws: Workspace, entry: TranscriptEntry, tr: Transcript, show_private: bool) -> Context:
    """Rendering context of one transcript document; tokens per turn from the run's turn log when unambiguous."""
    ctx = Context(getattr(ws, "root", None), {a.id: a for a in tr.assets if a.id}, show_private)
    run = ws.runs.get(entry.run_id) if entry.run_id else None
    if run is not None and len(run.transcripts) == 1:
        log = load_llm_log(run)
        for step in (log.steps if log is not None else []):
            resp = step.response if isinstance(step.response, dict) else {}
            ctx.tokens.append((resp.get("input_tokens"), resp.get("output_tokens")))
    return ctx


def message_events(tr: Any) -> list[TranscriptEvent]:
    """Events made from a transcript's `messages` (one with no event stream)."""
    out = []
    for i, m in enumerate(tr.messages):
        if not isinstance(m, dict):
            continue
        role = m.get("role") if isinstance(m.get("role"), str) else None
        content = m.get("content")
        blocks = [normalize_block(b, role) for b in content] if isinstance(content, list) else []
        text = content if isinstance(content, str) else ""
        out.append(TranscriptEvent(i, None, "message", role, blocks_visibility(blocks, role) if blocks else "public",
                                   text, blocks, None, m))
    return out


def event_sizes(items: Sequence[Any], ctx: Context) -> tuple[array[int], array[int], int]:
    """(UTF-8 size of each event's block, the context's images_left and assistant_seen before each,
    two numbers an event, events hidden as private). Every block is rendered in order, as the page
    needs, but only its size is kept: holding all the blocks of a 10 MB transcript to show one
    window cost ~45 MB at once (and a list of tuples per event ~10 times these arrays)."""
    sizes = array("q")
    starts = array("q")
    hidden_private = 0
    for i, ev in enumerate(items):
        starts.append(ctx.images_left)  # (all the state render_event changes)
        starts.append(ctx.assistant_seen)
        block, hidden = render_event(i, ev, ctx)
        hidden_private += hidden
        sizes.append(len(block.encode("utf-8")))
    return sizes, starts, hidden_private


def event_windows(sizes: Sequence[int], window_bytes: int) -> list[tuple[int, int]]:
    """Windows of events as (start, stop) index ranges, cut from the newest end by rendered size
    (a window holds at least one event); page 0 is the newest. No events: one empty window."""
    windows: list[tuple[int, int]] = []
    start = stop = len(sizes)
    size = 0
    for j in range(len(sizes) - 1, -1, -1):
        b = sizes[j]
        if start < stop and size + b > window_bytes:
            windows.append((start, stop))
            stop, size = start, 0
        start = j
        size += b
    if start < stop or not windows:
        windows.append((start, stop))
    return windows

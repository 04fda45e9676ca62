"""What the server sends names the project it is about, once a workspace serves several (issue 29).

With one project, `harn-state:/index.md` is unambiguous and URIs stay as they were. With several
(a monorepo's `services/agent` and `tools/other`, or two workspace folders), every `harn-state:`
URI the server hands out — document links, hover links, lens and tree commands — carries
`?root=<project root>`, and every command argument object carries `root`, so that following it
reaches the same project's state (`HarnLanguageServer.project_holding`)."""

from __future__ import annotations

from typing import Any

from harn_ls.render.uri import SCHEME, links_with_root, with_root


def link_root(ls, proj) -> str | None:
    """The root to name in what is sent about `proj`; None while the workspace serves one project."""
    return None if proj is None or len(ls.projects) < 2 else proj.root


def markdown_for(ls, proj, text: str) -> str:
    root = link_root(ls, proj)
    return links_with_root(text, root) if root else text


def argument_for(arg: Any, root: str | None) -> Any:
    """A command argument naming `root`: a `harn-state:` URI gets `?root=`, an object gets `root`."""
    if root is None:
        return arg
    if isinstance(arg, str) and arg.startswith(SCHEME + ":"):
        return with_root(arg, root)
    if isinstance(arg, dict) and "root" not in arg:
        out = {**arg, "root": root}
        if isinstance(arg.get("uri"), str):
            out["uri"] = with_root(arg["uri"], root)
        return out
    return arg


def tree_page_for(ls, proj, page: dict) -> dict:
    """A `harn/tree` page whose item URIs, commands and data name the project."""
    root = link_root(ls, proj)
    if root is None or not isinstance(page, dict):
        return page
    items = []
    for item in page.get("items", []):
        item = dict(item)
        if isinstance(item.get("uri"), str):
            item["uri"] = with_root(item["uri"], root)
        if isinstance(item.get("command"), dict):
            cmd = dict(item["command"])
            cmd["arguments"] = [argument_for(a, root) for a in cmd.get("arguments") or []]
            item["command"] = cmd
        if isinstance(item.get("data"), dict):
            item["data"] = argument_for(item["data"], root)
        items.append(item)
    return {**page, "items": items}

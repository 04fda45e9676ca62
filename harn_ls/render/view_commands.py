"""What a lens, tree item or code action does when clicked, as plain data (arguments: a URI string
or a contract argument class; harn_ls/lsp puts them on the wire).

`action` names the command by its role; `harn_ls/lsp` maps each role to the command id of
the protocol (so nothing here depends on the wire names), and NONE to a lens without a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NONE = ""  # a title only (nothing runs on click)
OPEN = "open"  # client side: open the `harn-state:` URI in `arguments[0]`
ACCEPT = "accept"  # accept a pending proposal: arguments [contract.AcceptArgs]
REJECT = "reject"  # reject (suppress) a pending proposal: arguments [contract.RejectArgs]
COMPARE = "compare"  # client side: diff a conflicting file with what Accept would write: [contract.CompareArgs]

# client side: arguments [contract.HitlFormArgs]
HITL_APPROVE, HITL_DENY, HITL_ANSWER, HITL_ACCEPT, HITL_DECLINE, HITL_FINISH = (
    "hitl:approve", "hitl:deny", "hitl:answer", "hitl:accept", "hitl:decline", "hitl:finish")

ACTIONS = (NONE, OPEN, ACCEPT, REJECT, COMPARE, HITL_APPROVE, HITL_DENY, HITL_ANSWER, HITL_ACCEPT, HITL_DECLINE, HITL_FINISH)


@dataclass(frozen=True)
class ViewCommand:
    """A command for the client, as plain data."""

    title: str  # plain text, capped by whoever built it
    action: str = NONE
    arguments: list[Any] = field(default_factory=list)

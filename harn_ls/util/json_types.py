"""The one name for decoded JSON whose shape the code does not fix.

Harn's files hold JSON that harn-ls reads field by field: a value there can be
any JSON (object, array, string, number, bool, null), and a reader checks the
type of each field it uses before trusting it. These aliases say so in one
place; where the shape *is* known, a module names it with a TypedDict or a
record class instead.
"""

from __future__ import annotations

from typing import Any, TypeAlias

# any JSON value as orjson / json decodes it: dict, list, str, int, float, bool or None
JsonValue: TypeAlias = Any
# a decoded JSON object (keys are always str)
JsonObject: TypeAlias = dict[str, Any]
# a decoded JSON array
JsonArray: TypeAlias = list[Any]

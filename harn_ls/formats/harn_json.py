"""JSON encoders that reproduce Harn's bytes.

Two encoders matter, because Harn uses two:

* `stringify` — Harn's `json_stringify` (stdlib/json.rs): compact, dict keys
  sorted, floats printed like Rust's `f64` Display (`1.0` -> `1`, never an
  exponent), `\\b`/`\\f`/DEL/C1 escaped as `\\u00xx`. Fact ids, probe trace
  ids and keyed-checkpoint fingerprints hash this text.
* `serde_compact` — `serde_json::to_string`: compact, keys in the order given,
  floats printed by ryu (`1.0`, `1e-7`), `\\b`/`\\f` short escapes. Memory
  event lines and the searchable text of recall are this text.
"""

from __future__ import annotations

from hashlib import sha256
from typing import cast

from orjson import dumps as _orjson_dumps

from harn_ls.util.json_types import JsonValue

_HEX = "0123456789abcdef"


def _u_escape(code: int) -> str:
    return "\\u00" + _HEX[code >> 4] + _HEX[code & 15]


def _build_table(harn: bool) -> dict[int, str]:
    table = {code: _u_escape(code) for code in range(0x20)}
    table.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
    if harn:
        table.update({code: _u_escape(code) for code in range(0x7F, 0xA0)})
    else:
        table.update({0x08: "\\b", 0x0C: "\\f"})
    return table


_HARN_ESCAPES = _build_table(harn=True)
_SERDE_ESCAPES = _build_table(harn=False)


def _rust_display_float(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    # start-up: decimal (~10 ms) loads only once a float is written the way Harn writes it
    from decimal import Decimal

    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _ryu_float(value: float) -> str:
    """serde_json's float text (ryu's `format64`)."""
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if value == 0.0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign = "-" if value < 0 else ""
    # start-up: decimal (~10 ms) loads only once a float is written the way serde writes it
    from decimal import Decimal

    digits_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()[1:]
    digits = "".join(map(str, digits_tuple))
    length = len(digits)
    # a finite value (nan/inf left above): the exponent is an int, not 'n'/'N'/'F'
    k = cast(int, exponent)
    kk = length + k
    if 0 <= k and kk <= 16:
        body = digits + "0" * k + ".0"
    elif 0 < kk <= 16:
        body = digits[:kk] + "." + digits[kk:]
    elif -5 < kk <= 0:
        body = "0." + "0" * (-kk) + digits
    elif length == 1:
        body = digits + "e" + str(kk - 1)
    else:
        body = digits[0] + "." + digits[1:] + "e" + str(kk - 1)
    return sign + body


def _encode(value: JsonValue, out: list[str], harn: bool) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append('"' + value.translate(_HARN_ESCAPES if harn else _SERDE_ESCAPES) + '"')
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_rust_display_float(value) if harn else _ryu_float(value))
    elif isinstance(value, dict):
        items = sorted(value.items()) if harn else value.items()
        out.append("{")
        for index, (key, item) in enumerate(items):
            if index:
                out.append(",")
            out.append('"' + str(key).translate(_HARN_ESCAPES if harn else _SERDE_ESCAPES) + '":')
            _encode(item, out, harn)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out, harn)
        out.append("]")
    else:
        raise TypeError(f"cannot encode {type(value).__name__} as Harn JSON")


def stringify(value: JsonValue) -> str:
    """Harn's `json_stringify`: compact, sorted keys, Rust Display floats."""
    out: list[str] = []
    _encode(value, out, harn=True)
    return "".join(out)


def serde_compact(value: JsonValue) -> str:
    """`serde_json::to_string`: compact, keys in given order, ryu floats."""
    # Fast path: orjson writes the same bytes as serde_json (same escapes, raw
    # UTF-8, ryu shortest floats) except that it spells positive exponents `e+`.
    # Anything orjson refuses (big ints, non-str keys, other types) or any text
    # containing "e+" (perhaps such a float) goes through the exact encoder.
    try:
        text = _orjson_dumps(value).decode("utf-8")
    except (TypeError, ValueError):
        pass
    else:
        if "e+" not in text:
            return text
    out: list[str] = []
    _encode(value, out, harn=False)
    return "".join(out)


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return sha256(data).hexdigest()


def fingerprint(identity: JsonValue) -> str:
    """Keyed checkpoint fingerprint: `sha256:` + sha256(json_stringify(identity))."""
    return "sha256:" + sha256_hex(stringify(identity))

"""Harn's times, read and written in one place (pure): every timestamp harn-ls parses or prints.

The forms Harn writes (harn-formats §0, §E.2, §M, §M.3), each with its writer here:

* chrono `Utc::now().to_rfc3339()` — `2026-05-02T09:14:03.512848123+00:00`: `+00:00`, a fraction
  of 0, 3, 6 or 9 digits (chrono's AutoSi); memory events, `date_to_zone(.., "UTC")` → `rfc3339_nanos`.
* chrono `to_rfc3339_opts(Millis, true)` — `2026-05-02T09:14:03.512Z`: `date_now_iso()`,
  `harness.clock.date_iso()`; facts, probes, pattern learning → `iso_millis`, `date_now_iso`.
* the `time` crate's `Rfc3339` — `2026-05-04T09:01:35.000640019Z`: `Z`, the fraction trimmed to
  its significant digits, none when whole; HITL, waitpoints, signatures → `rfc3339_time`.
* Unix milliseconds as integers (`occurred_at_ms`, `*_at_ms`), epoch seconds as text in run records
  (`"1777885201"`) and the transcript topic's `"<seconds>.<millis>"` — read by `epoch_seconds`.

Two readers, one grammar:

* `parse_rfc3339_ns` / `parse_time_ms` — RFC 3339 as Harn's own readers accept it (chrono's
  `parse_from_rfc3339`, the `time` crate's `Rfc3339`): `YYYY-MM-DD`, `T`/`t`/space, `HH:MM:SS`, a
  fraction of any length (beyond nanoseconds ignored), `Z`/`z`/`±HH:MM`. A field out of its range
  (month 13, 30 February, hour 24, offset +24:00) is not a time. Second 60 (a leap second) is
  the next second, as chrono counts it.
* `epoch_seconds` — anything Harn writes where a time is expected (for views): numbers and numeric
  text (seconds, or milliseconds when above 1e11 — seconds that large are past the year 5000, and
  milliseconds that small are before 1973), RFC 3339, and the offset-less forms of Harn's
  `date_parse` (`YYYY-MM-DD[ T]HH:MM[:SS[.f]]`, `YYYY-MM-DD`), read as UTC.

Every reader returns None for text that is not a time and never raises; digits are ASCII only.
Written years are 0001-9999, four digits, as chrono and the `time` crate print them.
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, date, datetime

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
_S_PER_DAY = 86_400
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
MIN_NS = (date(1, 1, 1).toordinal() - _EPOCH_ORDINAL) * _S_PER_DAY * NS_PER_S  # 0001-01-01T00:00:00Z
MAX_NS = (date(9999, 12, 31).toordinal() - _EPOCH_ORDINAL + 1) * _S_PER_DAY * NS_PER_S - 1  # ...23:59:59.999999999
MS_THRESHOLD = 1e11  # epoch numbers above it are milliseconds (see the module docstring)

# One grammar for both readers; `re.ASCII` keeps `\d` to 0-9 (int() would take Arabic-Indic digits).
_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?"
    r"(Z|z|[+-]\d{2}:\d{2})?",
    re.ASCII)
_EPOCH_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


# ------------------------------------------------------------------ reading

def _date_time_ns(text: str, strict: bool) -> int | None:
    """The instant of one RFC 3339 (strict) or `date_parse` (lenient) text, in ns; None if not one."""
    m = _DATE_TIME.fullmatch(text)
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, tz = m.groups()
    if strict and (s is None or tz is None):
        return None  # RFC 3339 has seconds and an offset
    if h is None and tz is not None:
        return None  # an offset belongs to a time of day
    hour, minute, second = int(h or 0), int(mi or 0), int(s or 0)
    if hour > 23 or minute > 59 or second > 60:
        return None
    try:
        days = date(int(y), int(mo), int(d)).toordinal() - _EPOCH_ORDINAL  # checks month and day
    except ValueError:
        return None
    secs = days * _S_PER_DAY + hour * 3600 + minute * 60 + second
    if tz is not None and tz not in "Zz":
        oh, om = int(tz[1:3]), int(tz[4:6])
        if oh > 23 or om > 59:
            return None
        secs -= (1 if tz[0] == "+" else -1) * (oh * 3600 + om * 60)
    return secs * NS_PER_S + int((frac or "")[:9].ljust(9, "0"))


def parse_rfc3339_ns(value: object) -> int | None:
    """An RFC 3339 timestamp (surrounding whitespace ignored) -> Unix nanoseconds; None otherwise."""
    return _date_time_ns(value.strip(), strict=True) if isinstance(value, str) else None


def parse_time_ms(value: object) -> int | None:
    """An RFC 3339 timestamp -> Unix milliseconds (the fraction truncated); None otherwise."""
    ns = parse_rfc3339_ns(value)
    return None if ns is None else ns // NS_PER_MS


def _epoch_number(v: float) -> float | None:
    if not math.isfinite(v):
        return None
    return v / 1000.0 if v > MS_THRESHOLD else v


def epoch_seconds(value: object) -> float | None:
    """Any time Harn writes -> Unix seconds (float): an epoch number or numeric text (milliseconds
    above 1e11), RFC 3339, or `date_parse`'s offset-less forms as UTC. None for anything else."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return _epoch_number(float(value))
        except OverflowError:  # an int beyond any float (10**400)
            return None
    if not isinstance(value, str):
        return None
    s = value.strip()
    if _EPOCH_NUMBER.fullmatch(s):
        return _epoch_number(float(s))
    ns = _date_time_ns(s, strict=False)
    return None if ns is None else ns / NS_PER_S


def now_ns(now: int | str | datetime | None = None) -> int:
    """Nanoseconds since the epoch: `now` as given (ns, datetime, or a time text `epoch_seconds`'s
    date forms accept; offset-less means UTC), else the clock. Raises ValueError for other text."""
    if now is None:
        return time.time_ns()
    if isinstance(now, int) and not isinstance(now, bool):
        return now
    if isinstance(now, str):
        ns = _date_time_ns(now.strip(), strict=False)
        if ns is None:
            raise ValueError(f"not a time: {now[:64]!r}")
        return ns
    if isinstance(now, datetime):
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        delta = now - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * _S_PER_DAY + delta.seconds) * NS_PER_S + delta.microseconds * 1000
    raise TypeError(f"cannot use {type(now).__name__} as a timestamp")


# ------------------------------------------------------------------ writing

def _utc_fields(ns: int) -> tuple[str, int]:
    """`YYYY-MM-DDTHH:MM:SS` of a UTC instant and its nanoseconds; ValueError outside 0001-9999."""
    if not MIN_NS <= ns <= MAX_NS:
        raise ValueError(f"{ns} ns is outside the years 0001-9999")
    secs, frac = divmod(ns, NS_PER_S)
    days, sod = divmod(secs, _S_PER_DAY)
    d = date.fromordinal(days + _EPOCH_ORDINAL)
    h, rest = divmod(sod, 3600)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{h:02d}:{rest // 60:02d}:{rest % 60:02d}", frac


def rfc3339_nanos(ns: int) -> str:
    """chrono's `DateTime<Utc>::to_rfc3339()`: `+00:00`, a fraction of 0/3/6/9 digits (AutoSi:
    the shortest of those that holds the nanoseconds, none when they are zero)."""
    base, frac = _utc_fields(ns)
    if frac == 0:
        digits = ""
    elif frac % NS_PER_MS == 0:
        digits = f".{frac // NS_PER_MS:03d}"
    elif frac % 1000 == 0:
        digits = f".{frac // 1000:06d}"
    else:
        digits = f".{frac:09d}"
    return f"{base}{digits}+00:00"


def rfc3339_time(ns: int) -> str:
    """The `time` crate's `Rfc3339` of a UTC instant: seconds, then the fraction with trailing zeros
    trimmed (none when whole), then `Z` — Harn's `now_rfc3339()` in hitl.rs and waitpoint.rs."""
    base, frac = _utc_fields(ns)
    return f"{base}{f'.{frac:09d}'.rstrip('0') if frac else ''}Z"


def iso_millis(ns: int) -> str:
    """Harn's `date_now_iso()` (chrono `to_rfc3339_opts(Millis, true)`): milliseconds (truncated), `Z`."""
    base, frac = _utc_fields(ns)
    return f"{base}.{frac // NS_PER_MS:03d}Z"


def date_now_iso() -> str:
    """Harn's `date_now_iso()` / `harness.clock.date_iso()` of the clock now."""
    return iso_millis(time.time_ns())


def utc_text(value: object) -> str | None:
    """`YYYY-MM-DD HH:MM:SS` (UTC, the second floored) of any time `epoch_seconds` reads, for
    people; None for anything else and for a time outside the years 0001-9999."""
    if isinstance(value, str) and not _EPOCH_NUMBER.fullmatch(value.strip()):
        ns = _date_time_ns(value.strip(), strict=False)  # exact: a float of ns would round .9999999 up
        whole = None if ns is None else ns // NS_PER_S
    else:
        secs = epoch_seconds(value)
        whole = None if secs is None else math.floor(secs)
    return _utc_text_of(whole)


def utc_text_ms(ms: float) -> str | None:
    """`utc_text` of a count known to be Unix milliseconds (`occurred_at_ms`, `updated_at_ms`)."""
    if isinstance(ms, int):
        return _utc_text_of(ms // 1000)
    return _utc_text_of(math.floor(ms / 1000) if math.isfinite(ms) else None)


def _utc_text_of(whole: int | None) -> str | None:
    if whole is None or not MIN_NS // NS_PER_S <= whole <= MAX_NS // NS_PER_S:
        return None
    return _utc_fields(whole * NS_PER_S)[0].replace("T", " ")


# ------------------------------------------------------------------ Harn's datetime builtins

def _rust_round(x: float) -> float:
    """`f64::round` (half away from zero) for the non-negative values used here."""
    r = math.floor(x)
    return r + 1.0 if x - r >= 0.5 else r


def _vm_number_ns(value: int | float) -> int:
    """`datetime_from_arg` of an Int (seconds) or a Float (seconds, rounded to microseconds)."""
    if isinstance(value, int):
        return value * NS_PER_S
    micros = int(_rust_round(value * 1_000_000.0))
    return micros * 1000


def date_iso_plus_days(now_ms: int, days: int) -> str:
    """`date_to_zone(date_add(date_parse(<date_iso() at now_ms>), duration_days(days)), "UTC")`.

    Evaluated step by step as Harn's datetime builtins do (crates/harn-vm/src/stdlib/datetime.rs):
    `date_iso()` has milliseconds and `Z`; `date_parse` returns Int seconds, or Float seconds +
    nanos/1e9; `date_add` works in whole milliseconds and returns Int seconds or Float ms/1000.0;
    `date_to_zone` rounds a Float to microseconds and prints chrono's `to_rfc3339()`:
    `2026-04-25T17:32:09.481+00:00`, no fraction when it is zero.
    """
    secs, ms = divmod(now_ms, 1000)
    parsed: int | float = secs if ms == 0 else float(secs) + float(ms * NS_PER_MS) / 1e9  # timestamp_value
    millis = _vm_number_ns(parsed) // NS_PER_MS  # timestamp_millis_from_arg
    millis += days * 86_400_000  # duration_days
    added: int | float = millis // 1000 if millis % 1000 == 0 else millis / 1000.0  # timestamp_millis_value
    return rfc3339_nanos(_vm_number_ns(added))

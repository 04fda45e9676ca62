"""Harn's clocks and timestamp texts (pure): nanoseconds from any given "now", chrono's
`to_rfc3339()` and Harn's `date_now_iso()` millisecond form."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from harn_ls.formats.pattern_learning import rfc3339_auto_si


def now_ns(now: int | str | datetime | None = None) -> int:
    """Nanoseconds since the epoch: `now` as given (datetime, ISO string or ns), else the clock."""
    if now is None:
        return time.time_ns()
    if isinstance(now, int) and not isinstance(now, bool):
        return now
    if isinstance(now, str):
        now = datetime.fromisoformat(now.replace("Z", "+00:00"))
    if isinstance(now, datetime):
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        delta = now - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    raise TypeError(f"cannot use {type(now).__name__} as a timestamp")


def _utc_seconds(ns: int) -> tuple[str, int]:
    secs, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)), frac


def rfc3339_nanos(ns: int) -> str:
    """chrono's `Utc::now().to_rfc3339()`: `+00:00`, fraction of 0/3/6/9 digits (AutoSi)."""
    return rfc3339_auto_si(*divmod(ns, 1_000_000_000))


def rfc3339_time(ns: int) -> str:
    """The `time` crate's `Rfc3339` of a UTC instant: seconds, then the fraction with trailing zeros
    trimmed (none when whole), then `Z` — Harn's `now_rfc3339()` in hitl.rs and waitpoint.rs."""
    base, frac = _utc_seconds(ns)
    return f"{base}{f'.{frac:09d}'.rstrip('0') if frac else ''}Z"


def iso_millis(ns: int) -> str:
    """Harn's `date_now_iso()`: milliseconds (truncated) and `Z`."""
    base, frac = _utc_seconds(ns)
    return f"{base}.{frac // 1_000_000:03d}Z"

"""formats/harn_time: the one module that reads and writes Harn's timestamps (issue 31 item 5).

Checked against (a) the forms Harn writes, from its source (burin-labs/harn e45362cf):
`stdlib/memory.rs::now_rfc3339` = chrono `Utc::now().to_rfc3339()` (AutoSi fraction, `+00:00`);
`stdlib/datetime.rs` `date_now_iso` = `to_rfc3339_opts(Millis, true)` (`.mmmZ`); `stdlib/hitl.rs` /
`waitpoint.rs` `now_rfc3339` = the `time` crate's `Rfc3339` (`Z`, trimmed fraction), parsed back by
`hitl_read.rs` / `waitpoint.rs` with `OffsetDateTime::parse(.., &Rfc3339)`; `date_parse` =
chrono `parse_from_rfc3339`, then offset-less forms as UTC; (b) every timestamp in the Harn samples
and our fixtures, byte for byte; (c) the six readers and writers this module replaced, kept below
as oracles (`_old_*`, the code as it was at 55dd6b4): they must agree wherever both accept.
"""

from __future__ import annotations

import calendar
import math
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harn_ls.formats import harn_time as T
from harn_ls.formats.pattern_learning import suppressed_until_after
from harn_ls.render.markdown import display_time, moment
from harn_ls.render.state_docs import ms_time
from tests.helpers.samples import SAMPLES

REPO = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------ the replaced code, as oracles

_OLD_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})$")


def _old_parse_time_ms(value):  # formats/hitl/requests.py
    if not isinstance(value, str):
        return None
    m = _OLD_RFC3339.match(value.strip())
    if not m:
        return None
    y, mo, d, h, mi, s, frac, tz = m.groups()
    try:
        secs = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s), 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    ms = int((frac or "0")[:3].ljust(3, "0"))
    if tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        secs -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    return secs * 1000 + ms


def _old_parse_time(value):  # render/timeline.py
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        try:
            v = float(s)
        except ValueError:
            try:
                dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
            except ValueError:
                return None
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return dt.timestamp()
    else:
        return None
    if not math.isfinite(v):
        return None
    return v / 1000.0 if v > 1e11 else v


def _old_display_time(value):  # render/markdown.py
    if value is None or value == "":
        return ""
    s = str(value)
    try:
        secs = float(s)
    except ValueError:
        return s.replace("T", " ")[:19]
    if secs > 1e12:
        secs /= 1000
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(secs))
    except (OverflowError, OSError, ValueError):
        return s


def _old_base(ns):  # formats/harn_time.py, formats/pattern_learning.py: gmtime + strftime
    secs, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)), frac


def _old_rfc3339_nanos(ns):  # pattern_learning.rfc3339_auto_si
    base, n = _old_base(ns)
    frac = "" if n == 0 else f".{n // 1_000_000:03d}" if n % 1_000_000 == 0 else \
        f".{n // 1000:06d}" if n % 1000 == 0 else f".{n:09d}"
    return f"{base}{frac}+00:00"


def _old_rfc3339_time(ns):
    base, frac = _old_base(ns)
    return f"{base}{f'.{frac:09d}'.rstrip('0') if frac else ''}Z"


def _old_iso_millis(ns):  # harn_time.iso_millis; facts.date_now_iso printed the same from datetime.now
    base, frac = _old_base(ns)
    return f"{base}.{frac // 1_000_000:03d}Z"


# ------------------------------------------------------------------ strategies

NS = st.integers(T.MIN_NS, T.MAX_NS)
NS_1000_ON = st.integers(-30_610_224_000 * 10**9, T.MAX_NS)  # years 1000-9999: strftime pads 4 digits there
PRECISION = st.sampled_from([1, 1_000, 1_000_000, 1_000_000_000])  # ns, us, ms, whole seconds
WRITERS = [T.rfc3339_nanos, T.rfc3339_time]


def _cut(ns: int, unit: int) -> int:
    return ns - ns % unit


def _with_offset(ns: int, minutes: int) -> str:
    """The same instant written at a non-UTC offset (as another RFC 3339 writer would)."""
    local = T.rfc3339_time(ns + minutes * 60 * T.NS_PER_S)[:-1]
    sign = "+" if minutes >= 0 else "-"
    return f"{local}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


# ------------------------------------------------------------------ the forms Harn writes


def test_writers_print_harn_formats_examples():
    ns = 1_777_713_243_512_848_123  # harn-formats §0: 2026-05-02T09:14:03.512848123
    assert T.rfc3339_nanos(ns) == "2026-05-02T09:14:03.512848123+00:00"  # chrono to_rfc3339
    assert T.rfc3339_nanos(_cut(ns, 1000)) == "2026-05-02T09:14:03.512848+00:00"
    assert T.rfc3339_nanos(_cut(ns, 10**6)) == "2026-05-02T09:14:03.512+00:00"
    assert T.rfc3339_nanos(_cut(ns, 10**9)) == "2026-05-02T09:14:03+00:00"
    assert T.iso_millis(ns) == "2026-05-02T09:14:03.512Z"  # date_now_iso: truncated, never rounded up
    assert T.iso_millis(_cut(ns, 10**9)) == "2026-05-02T09:14:03.000Z"
    assert T.rfc3339_time(1_777_885_295_000_640_019) == "2026-05-04T09:01:35.000640019Z"  # §M examples
    assert T.rfc3339_time(1_777_885_261_754_618_250) == "2026-05-04T09:01:01.75461825Z"
    assert T.rfc3339_time(1_777_885_261_000_000_000) == "2026-05-04T09:01:01Z"
    assert T.parse_rfc3339_ns("2026-04-20T01:53:11.070643Z") == 1_776_649_991_070_643_000  # session store (us)
    # §E.2: reject's suppressed_until, through Harn's date_parse/date_add/date_to_zone number types
    assert T.date_iso_plus_days(1_775_928_729_481, 14) == "2026-04-25T17:32:09.481+00:00"
    assert T.date_iso_plus_days(1_775_928_729_000, 14) == "2026-04-25T17:32:09+00:00"
    assert suppressed_until_after(1_775_928_729_481) == "2026-04-25T17:32:09.481+00:00"


def test_date_now_iso_is_the_clock_in_harns_millisecond_form():
    before = time.time_ns() // T.NS_PER_MS
    text = T.date_now_iso()
    after = time.time_ns() // T.NS_PER_MS
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", text)
    assert before <= T.parse_time_ms(text) <= after


@settings(max_examples=300, deadline=None)
@given(NS, PRECISION)
@example(T.MIN_NS, 1)
@example(T.MAX_NS, 1)
@example(951_782_400 * T.NS_PER_S, 1)  # 2000-02-29T00:00:00Z (a leap day of a century divisible by 400)
@example(1_709_251_199_999_999_999, 1)  # 2024-02-29T23:59:59.999999999Z
@example(-1, 1)  # 1969-12-31T23:59:59.999999999Z
def test_round_trip_every_form_harn_writes(ns, unit):
    ns = _cut(ns, unit)
    for write in WRITERS:
        text = write(ns)
        assert T.parse_rfc3339_ns(text) == ns, text
        assert T.parse_time_ms(text) == ns // T.NS_PER_MS
        assert T.epoch_seconds(text) == ns / T.NS_PER_S
        assert T.now_ns(text) == ns
    millis = T.iso_millis(ns)
    assert T.parse_rfc3339_ns(millis) == _cut(ns, T.NS_PER_MS)
    assert T.parse_time_ms(millis) == ns // T.NS_PER_MS
    # the shapes themselves: chrono's AutoSi has 0/3/6/9 digits, the time crate none trailing zero
    frac = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d+))?\+00:00", T.rfc3339_nanos(ns))
    assert frac and len(frac.group(1) or "") in (0, 3, 6, 9)
    trimmed = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d*[1-9]))?Z", T.rfc3339_time(ns))
    assert trimmed and (trimmed.group(1) is None) == (ns % T.NS_PER_S == 0)
    assert len(millis) == 24 and millis.endswith("Z")


@settings(deadline=None)
@given(NS, st.integers(-23 * 60 - 59, 23 * 60 + 59), st.sampled_from(["T", "t", " "]), st.booleans())
def test_offsets_separators_and_case_name_the_same_instant(ns, minutes, sep, lower_z):
    ns = max(T.MIN_NS + 86_400 * T.NS_PER_S, min(ns, T.MAX_NS - 86_400 * T.NS_PER_S))  # local date in range
    text = _with_offset(ns, minutes)
    assert T.parse_rfc3339_ns(text.replace("T", sep)) == ns
    z = T.rfc3339_time(ns)
    assert T.parse_rfc3339_ns((z[:-1] + "z") if lower_z else z) == ns
    assert T.parse_rfc3339_ns(T.rfc3339_nanos(ns)) == T.parse_rfc3339_ns(z) == ns  # +00:00 and Z
    assert T.parse_rfc3339_ns(f"  {z}\n") == ns  # surrounding whitespace, as Harn's date_parse trims


@settings(deadline=None)
@given(st.integers(0, 9_999_999_999), st.integers(0, 999))
def test_epoch_numbers_harn_writes(secs, ms):
    text = f"{secs}.{ms:03d}"  # the transcript topic's "<seconds>.<millis>"
    assert T.epoch_seconds(text) == float(text)
    assert T.epoch_seconds(str(secs)) == secs  # run records' epoch seconds as text
    occurred_at_ms = 1_000_000_000_000 + secs * 1000 + ms  # `occurred_at_ms` integers: milliseconds
    assert T.epoch_seconds(occurred_at_ms) == occurred_at_ms / 1000


@pytest.mark.parametrize("text, expected", [
    ("2024-02-29T12:00:00Z", 1_709_208_000_000),  # leap years: divisible by 4 ...
    ("2000-02-29T00:00:00Z", 951_782_400_000),  # ... and by 400
    ("2023-02-29T00:00:00Z", None),
    ("1900-02-29T00:00:00Z", None),  # ... but not by 100 alone
    ("2100-02-29T00:00:00Z", None),
    ("2026-04-31T00:00:00Z", None),
    ("2026-12-31T23:59:59.999999999Z", 1_798_761_599_999),
    ("2026-12-31T23:59:60Z", 1_798_761_600_000),  # a leap second is the next second, as chrono counts it
    ("2026-12-31T23:59:61Z", None),
    ("2026-12-31T24:00:00Z", None),
    ("2026-13-01T00:00:00Z", None),
    ("2026-00-10T00:00:00Z", None),
    ("2026-01-00T00:00:00Z", None),
    ("0001-01-01T00:00:00Z", T.MIN_NS // T.NS_PER_MS),
    ("9999-12-31T23:59:59.999999999Z", T.MAX_NS // T.NS_PER_MS),
    ("0000-12-31T23:59:59Z", None),
    ("2026-05-04T09:01:35+23:59", (1_777_885_295 - 23 * 3600 - 59 * 60) * 1000),
    ("2026-05-04T09:01:35-00:30", (1_777_885_295 + 30 * 60) * 1000),
    ("2026-05-04T09:01:35+24:00", None),  # chrono and the time crate refuse an offset of a day or more
    ("2026-05-04T09:01:35+05:60", None),
    ("2026-05-04T09:01:35.1234567890123Z", 1_777_885_295_123),  # beyond nanoseconds: ignored
    ("2026-05-04T09:01:35.Z", None),
    ("2026-05-04T09:01:35", None),  # RFC 3339 has an offset
    ("2026-05-04T09:01Z", None),  # and seconds
    ("2026-05-04", None),
    ("٢٠٢٦-05-04T09:01:35Z", None),  # Arabic-Indic digits: int() would read them, Harn does not
    ("2026-05-04T09:01:35+0530", None),
    ("2026-05-04T09:01:35,5Z", None),
    ("2026-05-04X09:01:35Z", None),
])
def test_rfc3339_reader_day_and_field_bounds(text, expected):
    assert T.parse_time_ms(text) == expected


@pytest.mark.parametrize("text, expected", [
    # Harn's `date_parse` forms without an offset are UTC (views read run records through them)
    ("2026-05-04 09:01:35.5", 1_777_885_295.5),
    ("2026-05-04T09:01:35", 1_777_885_295.0),
    ("2026-05-04T09:01", 1_777_885_260.0),
    ("2026-05-04", 1_777_852_800.0),
    ("2026-05-04T09:01Z", 1_777_885_260.0),
    ("2026-05-04Z", None),  # an offset belongs to a time of day
    ("2026-02-30", None),
    ("1777885201.200", 1_777_885_201.2),
    ("  1777885201 ", 1_777_885_201.0),
    ("1777885201200", 1_777_885_201.2),  # above 1e11: milliseconds
    (100_000_000_001, 100_000_000.001),
    (100_000_000_000, 100_000_000_000.0),
    ("1e400", None), ("nan", None), ("inf", None), (float("nan"), None), (float("-inf"), None),
    (10**400, None),  # float() of it would raise OverflowError
    ("1_777_885_201", None), ("١٧٧٧٨٨٥٢٠١", None),  # float() reads these; Harn never writes them
    ("2026-W18-1", None), ("20260504T090135", None),  # ISO 8601 forms Harn neither writes nor reads
    (True, None), (None, None), ([1], None), ("", None), ("  ", None),
])
def test_epoch_seconds_forms(text, expected):
    got = T.epoch_seconds(text)
    assert got == pytest.approx(expected, abs=1e-6) if expected is not None else got is None


def test_every_timestamp_in_the_samples_and_fixtures_reads_back_byte_for_byte():
    """Each RFC 3339 text in harn-samples and fixtures/ parses, and the writer of its form prints it
    again exactly — so harn-ls reads what Harn wrote and writes what Harn would."""
    found: dict[str, str] = {}
    roots = [REPO / "fixtures"] + ([SAMPLES] if SAMPLES.is_dir() else [])
    stamp = re.compile(r'"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))"')
    for root in roots:
        for path in root.rglob("*"):
            if path.suffix in (".json", ".jsonl") and path.is_file() and path.stat().st_size < 4_000_000:
                for text in stamp.findall(path.read_text(errors="replace")):
                    found.setdefault(text, str(path))
    assert len(found) > 50, "the samples hold Harn's timestamps"
    forms = set()
    for text, where in found.items():
        ns = T.parse_rfc3339_ns(text)
        assert ns is not None, (text, where)
        if text.endswith("+00:00"):
            forms.add("chrono")
            assert T.rfc3339_nanos(ns) == text, where
        elif re.search(r"\.\d{3}Z$", text) and T.iso_millis(ns) == text:
            forms.add("millis")
        elif text.endswith("Z"):
            forms.add("time")
            assert T.rfc3339_time(ns) == text, where
        else:  # another offset: the same instant
            assert T.parse_rfc3339_ns(_with_offset(ns, int(text[-6:-3]) * 60 + int(text[-6] + text[-2:]))) == ns
    assert forms == {"chrono", "millis", "time"}


# ------------------------------------------------------------------ never raises


JUNK = st.one_of(
    st.text(max_size=60),
    st.from_regex(r"\A[0-9٠-٩]{1,5}-[0-9]{1,3}-[0-9]{1,3}([Tt ][0-9]{1,3}:[0-9]{1,3}(:[0-9]{1,3}(\.[0-9]*)?)?)?"
                  r"([Zz]|[+-][0-9]{2}:?[0-9]{0,2})?\s*\Z"),
    st.from_regex(r"\A\s*[+-]?[0-9._]{0,20}([eE][+-]?[0-9]{0,4})?\s*\Z"),
)
ANY = st.one_of(JUNK, st.none(), st.booleans(), st.integers(), st.floats(), st.lists(st.integers(), max_size=2),
                st.integers(-10**500, 10**500))


@settings(max_examples=200, deadline=None)
@given(ANY)
def test_readers_never_raise(value):
    ns = T.parse_rfc3339_ns(value)
    assert ns is None or T.MIN_NS - 86_400 * T.NS_PER_S <= ns <= T.MAX_NS + 86_400 * T.NS_PER_S
    ms = T.parse_time_ms(value)
    assert (ms is None) == (ns is None)
    secs = T.epoch_seconds(value)
    assert secs is None or math.isfinite(secs)
    assert isinstance(display_time(value), str)
    if isinstance(value, str):
        try:
            got = T.now_ns(value)  # `now` given as text: a time, or a ValueError (never anything else)
        except ValueError:
            return
        assert isinstance(got, int) and T.epoch_seconds(value) == pytest.approx(got / T.NS_PER_S, abs=1e-6)


# ------------------------------------------------------------------ old and new agree


@settings(max_examples=300, deadline=None)
@given(NS_1000_ON, PRECISION)
def test_writers_agree_with_the_replaced_ones(ns, unit):
    ns = _cut(ns, unit)
    assert T.rfc3339_nanos(ns) == _old_rfc3339_nanos(ns)
    assert T.rfc3339_time(ns) == _old_rfc3339_time(ns)
    assert T.iso_millis(ns) == _old_iso_millis(ns)


@settings(max_examples=300, deadline=None)
@given(NS_1000_ON, PRECISION, st.integers(-23 * 60, 23 * 60))
@example(ns=-19_386_180_703_501_901_001, unit=1, minutes=0)  # CI, stop 38: 1355 AD, float spacing 3.8 µs
def test_readers_agree_with_the_replaced_ones_on_harns_forms(ns, unit, minutes):
    ns = min(_cut(ns, unit), T.MAX_NS - 86_400 * T.NS_PER_S)
    for text in (T.rfc3339_nanos(ns), T.rfc3339_time(ns), T.iso_millis(ns), _with_offset(ns, minutes)):
        assert T.parse_time_ms(text) == _old_parse_time_ms(text), text
        old = _old_parse_time(text)  # old: microseconds, as a float whose spacing grows with the year's distance
        assert T.epoch_seconds(text) == pytest.approx(old, abs=1e-6 + 2 * math.ulp(old)), text
        if text.endswith(("Z", "+00:00")):  # the old view printed another offset's wall clock, not UTC
            assert display_time(text) == _old_display_time(text), text
    secs, ms = divmod(ns // T.NS_PER_MS, 1000)
    for value in (ns // T.NS_PER_MS, secs, str(secs), f"{secs}.{ms:03d}"):
        assert T.epoch_seconds(value) == _old_parse_time(value)
        if 0 <= float(value) <= 1e11 or float(value) > 1e12:  # the old view's ms cut-off was 1e12
            assert display_time(value) == _old_display_time(value)


RFC_SHAPED = st.from_regex(
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,12})?([Zz]|[+-][0-9]{2}:[0-9]{2})\Z")


@settings(max_examples=200, deadline=None)
@given(RFC_SHAPED)
@example("2026-02-30T00:00:00Z")
@example("2026-05-04T24:00:00Z")
@example("2026-05-04T09:01:35+99:99")
def test_the_rfc3339_reader_changed_only_for_out_of_range_fields(text):
    """Where the old HITL reader and the new one differ, the old one took a field out of its range
    (it let calendar.timegm roll 30 February into March); everything else reads the same."""
    old, new = _old_parse_time_ms(text), T.parse_time_ms(text)
    if new is not None:
        assert new == old
        return
    y, mo, d, h, mi, s = (int(text[a:b]) for a, b in ((0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19)))
    tz = re.search(r"([+-])(\d\d):(\d\d)$", text)
    in_range = (1 <= y and 1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1] and h <= 23 and mi <= 59
                and s <= 60 and (tz is None or (int(tz.group(2)) <= 23 and int(tz.group(3)) <= 59)))
    assert not in_range, text


@settings(deadline=None)
@given(st.integers(-30_610_224_000_000, T.MAX_NS // T.NS_PER_MS))
def test_event_times_print_as_before(ms):
    """render/state_docs.ms_time (`occurred_at_ms`, `updated_at_ms`) now prints through utc_text_ms."""
    assert ms_time(ms) == time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + "Z"


def test_an_event_time_no_clock_shows_is_written_as_is():
    # a float no clock shows raised OverflowError / ValueError in gmtime; a count past the year 9999
    # printed a nine-digit year
    assert ms_time(1e300) == "1e+300" and ms_time(float("nan")) == "nan"
    assert ms_time(2**63 - 1) == "9223372036854775807"
    assert ms_time(None) == "" and ms_time(True) == "" and ms_time("1777885295002") == ""
    assert T.utc_text_ms(253_402_300_799_999) == "9999-12-31 23:59:59"
    assert T.utc_text_ms(253_402_300_800_000) is None


def test_now_given_as_text():
    assert T.now_ns("2026-05-12T09:14:03.512848123Z") == 1_778_577_243_512_848_123
    assert T.now_ns("2026-05-12T09:14:03.500z") == T.now_ns("2026-05-12 09:14:03.5") == 1_778_577_243_500_000_000
    for junk in ("t", "", "1778577243", "2026-05-12T09:14:03+0530", "2026-02-30T00:00:00Z"):
        with pytest.raises(ValueError):
            T.now_ns(junk)


def test_moment_reads_ascii_epoch_digits_only():
    assert moment("1778235300") == "2026-05-08 10:15:00 UTC (epoch 1778235300)"
    assert moment("١٧٧٨٢٣٥٣٠٠") == "١٧٧٨٢٣٥٣٠٠"  # was read as 1778235300 through float()

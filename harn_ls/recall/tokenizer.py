"""Harn's tokenizer (harn-formats §C.5): Rust `char::is_alphanumeric` splitting, ASCII case
folding, and the per-record analysis the index is built from (term frequencies with key/tag flags)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import count

import numpy as np

from harn_ls.formats.memory_record import MemoryRecord

# --------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------
# Rust's `char::is_alphanumeric` is Unicode Alphabetic ∪ Numeric (Nd/Nl/No).
# Python's `str.isalnum` (= regex `[^\W_]`) covers a strict subset of that:
# it misses the Other_Alphabetic combining marks (Indic vowel signs such as
# U+093F "ि", Hebrew points, Arabic harakat, circled letters Ⓐ, ...) and
# letters assigned after Python's Unicode version (14.0 on 3.11). Without
# them "हिन्दी" would split into different tokens than Harn's. The table
# below is exactly (Alphabetic ∪ N) minus isalnum, generated once from the
# `regex` module's Unicode tables (Unicode 16/17; a Rust toolchain on an
# older Unicode may still split on the handful of letters new in 17).
# There are no code points where Python says alphanumeric and Rust does not.
_RUST_ONLY_ALNUM = """
    345 363-36F 5B0-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-657 659-65F 670 6D6-6DC 6E1-6E4
    6E7-6E8 6ED 711 730-73F 7A6-7B0 816-817 81B-823 825-827 829-82C 88F 897 8D4-8DF 8E3-8E9
    8F0-903 93A-93B 93E-94C 94E-94F 955-957 962-963 981-983 9BE-9C4 9C7-9C8 9CB-9CC 9D7 9E2-9E3
    A01-A03 A3E-A42 A47-A48 A4B-A4C A51 A70-A71 A75 A81-A83 ABE-AC5 AC7-AC9 ACB-ACC AE2-AE3 AFA-
    AFC B01-B03 B3E-B44 B47-B48 B4B-B4C B56-B57 B62-B63 B82 BBE-BC2 BC6-BC8 BCA-BCC BD7 C00-C04
    C3E-C44 C46-C48 C4A-C4C C55-C56 C5C C62-C63 C81-C83 CBE-CC4 CC6-CC8 CCA-CCC CD5-CD6 CDC
    CE2-CE3 CF3 D00-D03 D3E-D44 D46-D48 D4A-D4C D57 D62-D63 D81-D83 DCF-DD4 DD6 DD8-DDF DF2-DF3
    E31 E34-E3A E4D EB1 EB4-EB9 EBB-EBC ECD F71-F83 F8D-F97 F99-FBC 102B-1036 1038 103B-103E
    1056-1059 105E-1060 1062-1064 1067-106D 1071-1074 1082-108D 108F 109A-109D 1712-1713
    1732-1733 1752-1753 1772-1773 17B6-17C8 1885-1886 18A9 1920-192B 1930-1938 1A17-1A1B
    1A55-1A5E 1A61-1A74 1ABF-1AC0 1ACC-1ACE 1B00-1B04 1B35-1B43 1B80-1B82 1BA1-1BA9 1BAC-1BAD
    1BE7-1BF1 1C24-1C36 1C89-1C8A 1DD3-1DF4 24B6-24E9 2DE0-2DFF A674-A67B A69E-A69F A7CB-A7CF
    A7D2 A7D4 A7DA-A7DC A7F1 A802 A80B A823-A827 A880-A881 A8B4-A8C3 A8C5 A8FF A926-A92A
    A947-A952 A980-A983 A9B4-A9BF A9E5 AA29-AA36 AA43 AA4C-AA4D AA7B-AA7D AAB0 AAB2-AAB4
    AAB7-AAB8 AABE AAEB-AAEF AAF5 ABE3-ABEA FB1E 10376-1037A 105C0-105F3 10940-10959 10A01-10A03
    10A05-10A06 10A0C-10A0F 10D24-10D27 10D40-10D65 10D69 10D6F-10D85 10EAB-10EAC 10EC2-10EC7
    10EFA-10EFC 11000-11002 11038-11045 11073-11074 11080-11082 110B0-110B8 110C2 11100-11102
    11127-11132 11145-11146 11180-11182 111B3-111BF 111CE-111CF 1122C-11234 11237 1123E-11241
    112DF-112E8 11300-11303 1133E-11344 11347-11348 1134B-1134C 11357 11362-11363 11380-11389
    1138B 1138E 11390-113B5 113B7-113C0 113C2 113C5 113C7-113CA 113CC-113CD 113D1 113D3
    11435-11441 11443-11445 114B0-114C1 115AF-115B5 115B8-115BE 115DC-115DD 11630-1163E 11640
    116AB-116B5 116D0-116E3 1171D-1172A 1182C-11838 11930-11935 11937-11938 1193B-1193C 11940
    11942 119D1-119D7 119DA-119DF 119E4 11A01-11A0A 11A35-11A39 11A3B-11A3E 11A51-11A5B
    11A8A-11A97 11B60-11B67 11BC0-11BE0 11BF0-11BF9 11C2F-11C36 11C38-11C3E 11C92-11CA7
    11CA9-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D41 11D43 11D47 11D8A-11D8E 11D90-11D91
    11D93-11D96 11DB0-11DDB 11DE0-11DE9 11EF3-11EF6 11F00-11F10 11F12-11F3A 11F3E-11F40
    11F50-11F59 1342F 13441-13446 13460-143FA 16100-1612E 16130-16139 16D40-16D6C 16D70-16D79
    16EA0-16EB8 16EBB-16ED3 16F4F 16F51-16F87 16F8F-16F92 16FF0-16FF6 187F8-187FF 18CFF
    18D09-18D1E 18D80-18DF2 1B132 1B155 1BC9E 1CCF0-1CCF9 1D2C0-1D2D3 1DF25-1DF2A 1E000-1E006
    1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E030-1E06D 1E08F 1E4D0-1E4EB 1E4F0-1E4F9
    1E5D0-1E5ED 1E5F0-1E5FA 1E6C0-1E6DE 1E6E0-1E6F5 1E6FE-1E6FF 1E947 1F130-1F149 1F150-1F169
    1F170-1F189 2B739-2B73F 2CEA2-2CEAD 2EBF0-2EE5D 31350-33479
"""


def _extra_class(table: str) -> str:
    parts = []
    for item in table.split():
        lo, _, hi = item.partition("-")
        parts.append(re.escape(chr(int(lo, 16))) + ("-" + re.escape(chr(int(hi, 16))) if hi else ""))
    return "".join(parts)


_EXTRA = _extra_class(_RUST_ONLY_ALNUM)
# ASCII-only text (the common case) cannot contain any of the extra code
# points, and every 1-char ASCII token is 1 UTF-8 byte: `{2,}` drops it while
# still splitting there (a maximal run of length 1 simply does not match).
_ASCII_TOKEN = re.compile(r"[^\W_]{2,}")
_UNICODE_TOKEN = re.compile(r"(?:[^\W_]|[" + _EXTRA + r"])+")
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def is_token_char(ch: str) -> bool:
    """Rust `char::is_alphanumeric` for one character."""
    return bool(_UNICODE_TOKEN.fullmatch(ch))


def tokenize(text: str) -> list[str]:
    """Harn's `tokenize`: split on non-alphanumerics, ASCII-lowercase, drop 1-byte tokens."""
    if text.isascii():
        return _ASCII_TOKEN.findall(text.lower())
    # str.lower would also fold non-ASCII letters; Harn keeps their case.
    toks = _UNICODE_TOKEN.findall(text.translate(_ASCII_LOWER))
    return [t for t in toks if len(t) > 1 or ord(t) > 0x7F]


def searchable_text(record: MemoryRecord) -> str:
    """`key \\n text \\n tags joined by space \\n compact JSON of value` (§C.5)."""
    return "\n".join((record.key, record.text, " ".join(record.tags), record.value_json()))

# --------------------------------------------------------------------------
# Record analysis: term frequencies and field flags in one pass
# --------------------------------------------------------------------------
# `tokenize(key \n text \n tags \n json)` is the concatenation of the four
# parts' tokens ("\n" never joins a token), so the parts are tokenized
# separately. That lets a record whose JSON value renders to exactly its
# text (every dict value: Harn stores `text = compact JSON of value`) or to
# its quoted text (a string value without escapes) tokenize the text once
# and count it twice — the tokens are provably the same.
#
# ASCII parts are split with str.translate + str.split (every non-alphanumeric
# byte becomes a space, A-Z fold), which keeps the 1-byte tokens; they are
# removed from the counts afterwards (`_SINGLES`), cheaper than filtering
# every token.

_ASCII_SPLIT = str.maketrans({c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128)})
_SINGLES = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")  # every 1-byte token after ASCII folding
_TF_BITS = 40
_TF_MASK = (1 << _TF_BITS) - 1
_KEY_FLAG = 1 << _TF_BITS  # analysis value = tf | KEY_FLAG | TAG_FLAG
_TAG_FLAG = 2 << _TF_BITS


def _raw_tokens(text: str) -> list[str]:
    """`tokenize` without dropping 1-byte tokens."""
    if text.isascii():
        return text.translate(_ASCII_SPLIT).split()
    return _UNICODE_TOKEN.findall(text.translate(_ASCII_LOWER))


def _record_parts(record: MemoryRecord) -> tuple[bool, str, str, str, str]:
    """(text counted twice, text, JSON part or "", key, tags joined): what `analyze` tokenizes."""
    text = record.text
    js = record.value_json()  # (a record whose text is this JSON keeps only the text from now on)
    tags = " ".join(record.tags)
    if js == text or (len(js) == len(text) + 2 and js[0] == '"' and js[-1] == '"' and js.startswith(text, 1)):
        return True, text, "", record.key, tags
    return False, text, js, record.key, tags


def analyze(record: MemoryRecord) -> tuple[dict[str, int], int]:
    """(term -> tf | key/tag flags, token count) of a record's searchable text.

    Equal to `Counter(tokenize(searchable_text(record)))` in the low bits, with
    `_KEY_FLAG` set on the key's tokens and `_TAG_FLAG` on the tags' tokens."""
    twice, text, js, key, tags = _record_parts(record)
    tt = _raw_tokens(text)
    # one Counter over all the pieces: its C counting loop runs once per record (collections'
    # private helper, which skipped Counter's own per-call checks, is not used: issue 30)
    tokens = tt + (tt if twice else _raw_tokens(js))
    tk = _raw_tokens(key)
    tg = _raw_tokens(tags) if tags else []
    n = len(tokens) + len(tk) + len(tg)
    counts: dict[str, int] = Counter(tokens + tk + tg) if tk or tg else Counter(tokens)
    for s in _SINGLES.intersection(counts):
        n -= counts.pop(s)
    if tk:
        for t in set(tk):
            if t in counts:
                counts[t] |= _KEY_FLAG
    if tg:
        for t in set(tg):
            if t in counts:
                counts[t] |= _TAG_FLAG
    return counts, n


# --------------------------------------------------------------------------
# Bulk analysis: many records' postings with array operations
# --------------------------------------------------------------------------
# `analyze` pays a few Python calls, a split and a Counter per record (~60% of a cold index build
# at 100k events). `analyze_many` joins a chunk of records' parts into one ASCII string and finds
# every token with numpy: a byte is alphanumeric by table lookup (A-Z folded), a token is a run of
# them. A token of up to `_PACKED_MAX` characters is then an integer, its characters as the digits
# 1..36 of a base-37 number (exact: 37**12 < 2**64, and the digits are never 0, so no two tokens
# share a number, and the 1-byte ones are exactly those below 37). Longer tokens are numbered by a
# dict, from `_LOOKED_UP` up. A record with non-ASCII text is analysed by `analyze` (the regex
# split) and its terms numbered the same way, one entry per term carrying its tf and flags (about
# the cost of the record-by-record build; ASCII records take ~0.6x). Counting the distinct
# (record, number) pairs then gives every posting at once; only the chunk's distinct terms are made
# strings again.
_PACKED_MAX = 12
_LOOKED_UP = np.uint64(1 << 63)  # (37**12 < 2**63: the dict's numbers never meet a packed one)
_DIGIT = np.zeros(256, dtype=np.uint8)
for _d, _c in enumerate("0123456789abcdefghijklmnopqrstuvwxyz", 1):
    _DIGIT[ord(_c)] = _DIGIT[ord(_c.upper())] = _d
_TEXT, _JSON, _KEY, _TAGS = range(4)  # the parts of a record, in the order `analyze` counts them


_DIGITS = _DIGIT.tolist()  # (the same table as Python ints, for `_packed`)


def _packed(token: str) -> int | None:
    """The base-37 number of a short ASCII token (as the arrays compute it), else None."""
    if len(token) > _PACKED_MAX or not token.isascii():
        return None
    n = 0
    for ch in token:
        n = n * 37 + _DIGITS[ord(ch)]
    return n


@dataclass(slots=True)
class Postings:
    """`analyze_many`'s answer: the chunk's distinct terms (first seen first, as `analyze`'s counts
    list them record by record) and one posting per (record, term), by term, then record: `doc` (the
    record's index in the chunk), `term` (an index into `terms`), `val` (tf | key/tag flags, as
    `analyze`), and each record's token count (`ntokens`)."""

    terms: list[str]
    doc: np.ndarray
    term: np.ndarray
    val: np.ndarray
    ntokens: np.ndarray


def _ascii_tokens(pieces: list[str]) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(joined text in lower case, piece, start, end, number) of every token of the ASCII pieces
    (joined by "\n"), in order; a long token's number is still to be looked up (`_LOOKED_UP` for now)."""
    joined = "\n".join(pieces).lower()
    lens = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    piece_start = np.zeros(len(pieces), dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=piece_start[1:])
    digits = _DIGIT[np.frombuffer(joined.encode("ascii"), dtype=np.uint8)]
    edges = np.flatnonzero(np.diff(digits != 0, prepend=False, append=False))  # a token's first, past its last
    start, end = edges[0::2], edges[1::2]
    del edges
    length = end - start
    piece = np.searchsorted(piece_start, start, side="right") - 1
    number = np.zeros(len(start), dtype=np.uint64)
    at = np.arange(len(start))
    for k in range(_PACKED_MAX):  # Horner's rule, one character of every token at a time
        at = at[length[at] > k]
        if not len(at):
            break
        number[at] = number[at] * np.uint64(37) + digits[start[at] + k].astype(np.uint64)
    number[length > _PACKED_MAX] = _LOOKED_UP
    return joined, piece, start, end, number


ANALYZE_CHUNK = 2048  # records tokenized together by `NamespaceIndex.add_many` (~0.3M short-lived token strings)
# ...and at most this many characters of their text: the bulk pass holds ~20-35 bytes a character of
# the whole chunk at once (a chunk of 2,048 records of 64 KB each would be GBs); a record longer than
# this is a chunk of its own
ANALYZE_CHUNK_CHARS = 1 << 21


def analysis_chunks(records: list[MemoryRecord]) -> Iterator[list[MemoryRecord]]:
    """`records` in order, cut at `ANALYZE_CHUNK` records or `ANALYZE_CHUNK_CHARS` characters of
    text (the text, its JSON and the key: about twice the text), whichever comes first."""
    start = chars = 0
    for i, r in enumerate(records):
        size = 2 * len(r.text) + len(r.key)
        if i > start and (i - start >= ANALYZE_CHUNK or chars + size > ANALYZE_CHUNK_CHARS):
            yield records[start:i]
            start, chars = i, 0
        chars += size
    if start < len(records):
        yield records[start:]


def analyze_many(records: Sequence[MemoryRecord]) -> Postings:
    """`analyze` of every record at once: for record i, the postings with `doc == i` hold the
    same terms and values as `analyze(records[i])[0]`, and `ntokens[i]` is its token count."""
    parts = list(map(_record_parts, records))
    twice = np.fromiter((p[0] for p in parts), dtype=bool, count=len(parts))
    pieces = [piece for p in parts for piece in p[1:]]  # 4 a record: text, JSON, key, tags
    del parts
    other: list[int] = []  # records with non-ASCII text: analysed one by one (`analyze`)
    if not all(map(str.isascii, pieces)):
        for i in range(len(records)):
            if not all(map(str.isascii, pieces[4 * i : 4 * i + 4])):
                other.append(i)
                pieces[4 * i : 4 * i + 4] = ("", "", "", "")
    joined, piece, start, end, number = _ascii_tokens(pieces)
    looked_up: dict[str, int] = {}  # long or non-ASCII token -> its number - _LOOKED_UP
    numbers = count()  # (setdefault takes one for every token; a new one keeps it)
    spelled: list[str] = []  # the tokens that are not slices of `joined`, by their index - len(start)
    long = np.flatnonzero(number == _LOOKED_UP)
    if len(long):
        words = [joined[s:e] for s, e in zip(start[long].tolist(), end[long].tolist(), strict=True)]
        number[long] += np.fromiter(map(looked_up.setdefault, words, numbers), dtype=np.uint64,
                                    count=len(words))
    # per entry: how many tokens it stands for (text counted twice where the JSON is the text) and
    # its key (1) / tags (2) flags; an ASCII token is one entry
    kind = piece & 3
    weight = np.where((kind == _TEXT) & twice[piece >> 2], 2, 1)
    flag = np.where(kind == _KEY, 1, np.where(kind == _TAGS, 2, 0))
    del kind
    if other:  # `analyze` of each (one entry per distinct term: tf, flags), numbered the same way
        o_piece: list[int] = []
        o_number: list[int] = []
        o_val: list[int] = []
        number_of: dict[str, int] = {}
        for i in other:
            counts, _ = analyze(records[i])
            for token in counts:
                n = number_of.get(token)
                if n is None:
                    n = _packed(token)
                    if n is None:
                        n = int(_LOOKED_UP) + looked_up.setdefault(token, next(numbers))
                    number_of[token] = n
                o_number.append(n)
            spelled += counts
            o_val += counts.values()
            o_piece += [4 * i] * len(counts)
        vals = np.array(o_val, dtype=np.int64)
        # placed after the ASCII tokens of the records before them, in the order `analyze` saw them
        order = np.argsort(np.concatenate((piece, np.array(o_piece, dtype=np.int64))), kind="stable")
        piece = np.concatenate((piece, np.array(o_piece, dtype=np.int64)))[order]
        number = np.concatenate((number, np.array(o_number, dtype=np.uint64)))[order]
        weight = np.concatenate((weight, vals & _TF_MASK))[order]
        flag = np.concatenate((flag, vals >> _TF_BITS))[order]
        source = order  # entry -> its index among (ASCII tokens, then the spelled ones)
    else:
        source = np.arange(len(number))
    keep = number >= 37  # 1-byte tokens split words but are not terms
    doc = piece >> 2
    ntokens = np.bincount(doc[keep], weights=weight[keep], minlength=len(records)).astype(np.int64)
    # one sort groups the tokens by term, each term's in stream order (so by record)
    order = np.flatnonzero(keep)
    order = order[np.argsort(number[order], kind="stable")]
    del keep
    number, doc = number[order], doc[order]
    new_term = np.empty(len(order), dtype=bool)
    new_term[:1] = True
    np.not_equal(number[1:], number[:-1], out=new_term[1:])
    new_pair = new_term.copy()
    new_pair[1:] |= doc[1:] != doc[:-1]
    # terms numbered first seen first (a term's first token is the first of its group)
    first = order[new_term]
    by_first = np.argsort(first)
    rank = np.empty(len(first), dtype=np.int64)
    rank[by_first] = np.arange(len(first))
    at = source[first[by_first]]
    if spelled:
        nascii = len(start)
        terms = [joined[start[j]:end[j]] if j < nascii else spelled[j - nascii] for j in at.tolist()]
    else:
        terms = list(map(joined.__getitem__, map(slice, start[at].tolist(), end[at].tolist())))
    del by_first, first
    # one posting per distinct (term, record)
    pair = np.cumsum(new_pair) - 1
    npairs = int(pair[-1]) + 1 if len(pair) else 0
    flag = flag[order]
    tf = np.bincount(pair, weights=weight[order], minlength=npairs).astype(np.int64)
    flags = (np.bincount(pair, weights=flag & 1, minlength=npairs) > 0).astype(np.int64) << _TF_BITS
    flags |= (np.bincount(pair, weights=flag & 2, minlength=npairs) > 0).astype(np.int64) << (_TF_BITS + 1)
    term = rank[np.cumsum(new_term)[new_pair] - 1]
    return Postings(terms, doc[new_pair], term, tf | flags, ntokens)

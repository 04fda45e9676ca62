"""UTF-8 lengths and cuts that never split a character (every byte cap of messages, documents and labels)."""

from __future__ import annotations


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8", errors="surrogatepass"))


def cut_utf8(s: str, max_bytes: int) -> tuple[str, int]:
    """The longest prefix of `s` that fits in `max_bytes` UTF-8 bytes, and how many bytes were dropped.

    Never splits a character; never returns more than `max_bytes` bytes."""
    if max_bytes < 0:
        max_bytes = 0
    if len(s) <= max_bytes // 4:  # fast path: even all-4-byte characters would fit
        return s, 0
    data = s.encode("utf-8", errors="surrogatepass")
    if len(data) <= max_bytes:
        return s, 0
    end = max_bytes
    while end > 0 and (data[end] & 0xC0) == 0x80:  # back off to the start of a character
        end -= 1
    head = data[:end].decode("utf-8", errors="surrogatepass")
    return head, len(data) - end

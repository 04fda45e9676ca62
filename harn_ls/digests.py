"""SHA-256 without OpenSSL's start-up.

`hashlib` loads `_hashlib`, which initialises OpenSSL and reads its configuration file: ~12 M
instructions (~3 ms), paid by every process that hashes anything, for digests of a few KiB at most
(a cached log's tail, a project key, ids). CPython's own SHA-256 module gives the same digests and
loads in ~2 M. Where it is missing (other builds), hashlib's is used.
"""

from __future__ import annotations

try:  # CPython 3.12+: the SHA-2 family in one module
    from _sha2 import sha256  # type: ignore[import-not-found]
except ImportError:
    try:  # CPython 3.11
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256

__all__ = ["sha256"]

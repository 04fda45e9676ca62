"""SHA-256 and BLAKE2b without OpenSSL's start-up.

`hashlib` loads `_hashlib`, which initialises OpenSSL and reads its configuration file: ~12 M
instructions (~3 ms), paid by every process that hashes anything, for digests of a few KiB at most
(a cached log's tail, a project key, ids). CPython's own SHA-256 and BLAKE2 modules give the same
digests and load in ~2 M. Where they are missing (other builds), hashlib's are used.
"""

from __future__ import annotations

try:  # CPython 3.12+: the SHA-2 family in one module
    from _sha2 import sha256  # type: ignore[import-not-found]
except ImportError:
    try:  # CPython 3.11
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256

try:  # CPython's own BLAKE2 (the one hashlib itself uses)
    from _blake2 import blake2b  # type: ignore[import-not-found]
except ImportError:
    from hashlib import blake2b

__all__ = ["blake2b", "sha256"]

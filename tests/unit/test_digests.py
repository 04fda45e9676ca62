"""harn_ls.digests.sha256 and blake2b: the same digests as hashlib's, piece by piece or at once."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from harn_ls.digests import blake2b, sha256


@given(st.lists(st.binary(max_size=5000), max_size=4))
def test_same_digest_as_hashlib(pieces):
    ours, theirs = sha256(), hashlib.sha256()
    for piece in pieces:
        ours.update(piece)
        theirs.update(piece)
    assert ours.hexdigest() == theirs.hexdigest() == hashlib.sha256(b"".join(pieces)).hexdigest()
    assert sha256(b"".join(pieces)).digest() == theirs.digest()


def test_known_vector():
    assert sha256(b"abc").hexdigest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@given(st.binary(max_size=3000), st.integers(1, 64))
def test_blake2b_same_digest_as_hashlib(data, size):
    assert blake2b(data, digest_size=size).digest() == hashlib.blake2b(data, digest_size=size).digest()

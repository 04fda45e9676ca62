"""The bare client and the TCP server helper work whatever descriptor numbers the test process hands
out: a process that opened many files before (the whole suite in one run) gets descriptors over 1023,
which select.select refuses ("filedescriptor out of range in select()"). Here every number under 1100
is taken first, so the pipes of the server started next are numbered above it."""

from __future__ import annotations

import os
import resource

import pytest

from tests.conformance.bare_client import BARE_CAPS, BareClient
from tests.conformance.tcp_server import TcpServer

HIGH = 1100


@pytest.fixture
def low_descriptors_taken():
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < HIGH + 64:
        pytest.skip(f"the open-file limit ({soft}) is under {HIGH + 64}")
    taken = []
    try:
        while True:
            fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            taken.append(fd)
            if fd >= HIGH:
                break
        yield
    finally:
        for fd in taken:
            os.close(fd)


def test_stdio_client_reads_a_server_whose_pipes_are_numbered_over_1023(low_descriptors_taken):
    c = BareClient.stdio()
    try:
        assert c.proc.stdout.fileno() >= HIGH
        res = c.initialize(None, BARE_CAPS)
        assert res["result"]["serverInfo"]["name"] == "harn-ls"
        assert c.request("shutdown")["result"] is None
        c.notify("exit")
        assert c.exit_status() == 0
    finally:
        c.close()
    assert c.proc.stdout.closed and c.proc.stderr.closed


def test_tcp_server_helper_reads_the_token_line_over_a_high_descriptor(low_descriptors_taken, tmp_path):
    server = TcpServer(tmp_path)
    try:
        assert server.proc.stderr.fileno() >= HIGH
        assert server.token and server.token_path.is_file()
        c = BareClient.tcp(server.port)
        try:
            res = c.initialize(None, BARE_CAPS, {"token": server.token})
            assert res["result"]["serverInfo"]["name"] == "harn-ls"
        finally:
            c.close()
    finally:
        server.stop()
    assert server.proc.stderr.closed

"""`probe.read_until`, the wait of every probe session (isolation, tenants) for what arrives:
at gpu4096 isolation listens on more sockets than select() takes (1,024 descriptors)."""
from __future__ import annotations

import resource
import socket
import time

import pytest

from harness.traffic.probe import read_until


def _read(sock: socket.socket) -> list[bytes]:
    return [sock.recv(64)]


@pytest.mark.parametrize("pairs", [3, 1100])  # a few (the control), and past select()'s descriptors
def test_every_socket_that_has_data_is_read_until_done(pairs):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * pairs + 64:
        pytest.skip(f"the hard limit of open files ({hard}) is below {2 * pairs + 64}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2 * pairs + 64) if hard == resource.RLIM_INFINITY
                                                else min(hard, max(soft, 2 * pairs + 64)), hard))
    ends = [socket.socketpair() for _ in range(pairs)]
    try:
        sent = {i: f"probe {i}".encode() for i in range(0, pairs, 7)}
        for i, data in sent.items():
            ends[i][0].send(data)
        got = read_until([b for _, b in ends], _read, lambda got: len(got) == len(sent), time.monotonic() + 10, 0.05)
        assert sorted(got) == sorted(sent.values())
        assert max(b.fileno() for _, b in ends) > (1024 if pairs > 1024 else 0)
    finally:
        for a, b in ends:
            a.close()
            b.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

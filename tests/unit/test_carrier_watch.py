"""The carrier watch's reading of rtnetlink: which watched ports a datagram announces without
carrier (IFF_LOWER_UP clear). No root: datagrams packed as the kernel packs them."""
from __future__ import annotations

import struct

import pytest

from harness.observe.carrier_watch import carrier_losses

RTM_NEWLINK, RTM_DELLINK, RTM_NEWROUTE = 16, 17, 24
UP, LOWER_UP = 0x1, 0x10000


def message(kind: int, index: int, flags: int, attrs: bytes = b"") -> bytes:
    body = struct.pack("=BxHiII", 0, 1, index, flags, 0) + attrs
    length = 16 + len(body)
    return struct.pack("=IHHII", length, kind, 0, 0, 0) + body + b"\0" * ((-length) % 4)


PORTS = {7: "Ethernet0", 9: "Ethernet8"}


@pytest.mark.parametrize(("data", "lost"), [
    (message(RTM_NEWLINK, 7, UP), ["Ethernet0"]),  # admin up, carrier gone
    (message(RTM_NEWLINK, 7, UP | LOWER_UP), []),  # carrier back
    (message(RTM_NEWLINK, 3, UP), []),  # a port not watched
    (message(RTM_DELLINK, 7, UP), []),
    (message(RTM_NEWROUTE, 7, UP), []),
    (message(RTM_NEWLINK, 9, UP | LOWER_UP, b"\x08\0\x03\0abc\0\x05") + message(RTM_NEWLINK, 7, UP),
     ["Ethernet0"]),  # the second of two, past an attribute of odd length
    (message(RTM_NEWLINK, 7, UP)[:20], []),  # cut short
    (b"", []),
])
def test_a_watched_port_without_carrier_is_named(data, lost):
    assert carrier_losses(data, PORTS) == lost


def test_the_message_walk_names_each_message_and_refuses_a_short_length():
    from harness.plumbing import rtnetlink

    first = message(RTM_NEWLINK, 9, UP, b"\x08\0\x03\0abc\0\x05")  # 41 bytes, padded to 44
    walked = list(rtnetlink.messages(first + message(RTM_DELLINK, 7, UP)))
    assert len(first) == 44 and [(kind, at) for kind, _, at in walked] == [(RTM_NEWLINK, 16), (RTM_DELLINK, 60)]
    with pytest.raises(rtnetlink.Malformed, match="length 8"):
        list(rtnetlink.messages(struct.pack("=IHHII", 8, RTM_NEWLINK, 0, 0, 0)))
    assert carrier_losses(message(RTM_NEWLINK, 7, UP) + struct.pack("=IHHII", 8, 16, 0, 0, 0), PORTS) == \
        ["Ethernet0"]  # what came before a malformed message stands


def test_a_neighbour_dump_answers_in_the_namespace_it_was_opened_in():
    from harness.traffic.neighwatch import NeighbourWatch

    watch = NeighbourWatch()  # a dump only reads: no root needed, nothing changed
    try:
        assert watch.resolving() in (True, False) and watch.resolving() in (True, False)  # twice: seq kept
    finally:
        watch.close()

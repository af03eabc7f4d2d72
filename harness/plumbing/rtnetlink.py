"""The messages of an rtnetlink datagram, read by hand: a sender that asks about its neighbours
every millisecond, and a check that waits for a carrier loss, each need only a header walk,
not a netlink library's import in every short-lived process."""
from __future__ import annotations

import struct
from collections.abc import Iterator

HEADER = struct.Struct("=IHHII")  # length, type, flags, seq, pid
NLMSG_ERROR, NLMSG_DONE = 2, 3
RTM_NEWLINK, RTM_NEWNEIGH, RTM_GETNEIGH = 16, 28, 30
RTMGRP_LINK = 1
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300


class Malformed(ValueError):
    """A message whose length is shorter than its own header."""


def messages(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(type, seq, offset of its body) of each message in the datagram, in order."""
    at = 0
    while at + HEADER.size <= len(data):
        length, kind, _, seq, _ = HEADER.unpack_from(data, at)
        if length < HEADER.size:
            raise Malformed(f"netlink: malformed message of length {length}")
        yield kind, seq, at + HEADER.size
        at += (length + 3) & ~3


def request(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    """One message: the header, then the body."""
    return HEADER.pack(HEADER.size + len(body), kind, flags, seq, 0) + body

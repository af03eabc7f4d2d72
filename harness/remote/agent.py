#!/usr/bin/env python3
"""fablab's traffic agent: copied over SSH to a node of a staged fabric and run there
(`fablab check ... --via ssh --allow-traffic`), it holds the node's part of a round of probes,
the sockets fablab would otherwise open in the node's namespace itself (harness/traffic/probe.py).

It reads requests on standard input and answers on standard output, one JSON object a line:

    {"op": "open", "listen": true, "sends": ["Ethernet0"], "macs": ["Ethernet0"]}
        -> {"opened": {"macs": {"Ethernet0": "0a1b2c3d4e5f"}}}   (or {"error": "..."})
    {"op": "send", "port": "Ethernet0", "frame": "<hex>", "copies": 3}
        -> nothing, unless it fails: {"error": "..."}
    {"op": "end"}    -> {"ended": {"sent": 12, "heard": 40}}  (the round's sockets closed)
    {"op": "quit"}, or standard input closed -> it exits

and pushes {"arrival": [probe id, nonce hex, ifindex, address, port]} for every probe the node's
stack hands to its listener. It needs only Python 3.7's standard library and root (AF_PACKET),
deletes its own file once started (`--unlink`), and exits when its SSH channel closes or after
`--max-seconds`: nothing of it stays on the node.

Kept apart from fablab's package on purpose: this file is all that is copied. The probe's format
is fablab's (MAGIC, the payload's layout); tests/unit/test_remote_agent.py holds the two equal.
"""
import argparse
import fcntl
import json
import os
import select
import socket
import struct
import signal
import sys

PROBE_PORT = 33434
MAGIC = b"FLPROBE2"
NONCE_BYTES = 8
PAYLOAD = struct.Struct("!8sI%ds" % NONCE_BYTES)
ETH_P_IP = 0x0800
IP_PKTINFO = 8
SO_RCVBUFFORCE = 33
SIOCGIFHWADDR = 0x8927


class Round:
    def __init__(self, listen, sends, macs):
        self.listener = self.sender = None
        self.sent = self.heard = 0
        self.names = {}
        try:
            if listen:
                self.listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.listener.bind(("0.0.0.0", PROBE_PORT))
                self.listener.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
                try:
                    self.listener.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 4 << 20)
                except PermissionError:
                    self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                self.listener.setblocking(False)
            self.sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # sends only
            self.ports = set(sends)
            self.macs = {}
            for port in macs:
                try:
                    info = fcntl.ioctl(self.sender.fileno(), SIOCGIFHWADDR, struct.pack("256s", port.encode()[:15]))
                except OSError as e:
                    raise RuntimeError("no interface %r (%s)" % (port, e.strerror))
                self.macs[port] = info[18:24].hex()
        except BaseException:
            self.close()
            raise

    def send(self, port, frame, copies):
        if port not in self.ports:
            raise RuntimeError("%s was not opened for sending" % port)
        data = bytes.fromhex(frame)
        for _ in range(copies):
            self.sender.sendto(data, (port, ETH_P_IP))
        self.sent += copies

    def arrivals(self):
        out = []
        while self.listener is not None:
            try:
                data, ancillary, _flags, _addr = self.listener.recvmsg(2048, socket.CMSG_SPACE(12))
            except BlockingIOError:
                break
            if len(data) != PAYLOAD.size:
                continue
            magic, probe_id, nonce = PAYLOAD.unpack(data)
            if magic != MAGIC:
                continue
            ifindex, dst = 0, "?"
            for level, kind, cdata in ancillary:
                if level == socket.IPPROTO_IP and kind == IP_PKTINFO and len(cdata) >= 12:
                    ifindex, _spec, addr = struct.unpack("=i4s4s", cdata[:12])
                    dst = socket.inet_ntoa(addr)
            out.append([probe_id, nonce.hex(), ifindex, dst, self._name(ifindex)])
        self.heard += len(out)
        return out

    def _name(self, ifindex):
        if ifindex not in self.names:
            try:
                self.names[ifindex] = socket.if_indextoname(ifindex)
            except OSError:
                self.names[ifindex] = ""
        return self.names[ifindex]

    def close(self):
        for s in (self.listener, self.sender):
            if s is not None:
                s.close()
        self.listener = self.sender = None


def say(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")


def handle(request, state):
    op = request.get("op")
    if op == "open":
        if state.get("round") is not None:
            state.pop("round").close()
        state["round"] = Round(bool(request.get("listen")), request.get("sends", []), request.get("macs", []))
        say({"opened": {"macs": state["round"].macs}})
    elif op == "send":
        if state.get("round") is None:
            raise RuntimeError("send before open")
        state["round"].send(request["port"], request["frame"], int(request.get("copies", 1)))
    elif op == "end":
        done = state.pop("round", None)
        if done is not None:
            done.close()
        say({"ended": {"sent": done.sent if done else 0, "heard": done.heard if done else 0}})
    elif op == "quit":
        return False
    else:
        raise RuntimeError("unknown op %r" % op)
    return True


def main():
    parser = argparse.ArgumentParser(description="fablab's traffic agent (see its docstring)")
    parser.add_argument("--unlink", action="store_true", help="delete this file once started")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="exit after this long, whatever happens")
    args = parser.parse_args()
    if args.unlink:
        try:
            os.unlink(os.path.abspath(__file__))
        except OSError:
            pass
    signal.alarm(max(1, int(args.max_seconds)))  # SIGALRM's default ends the process, whatever it is doing
    state = {}
    pending = b""
    stdin = sys.stdin.fileno()
    say({"ready": {"python": sys.version.split()[0], "uid": os.getuid()}})
    sys.stdout.flush()
    running = True
    while running:
        rnd = state.get("round")
        watch = [stdin] + ([rnd.listener] if rnd is not None and rnd.listener is not None else [])
        ready, _, _ = select.select(watch, [], [], 1.0)
        if rnd is not None and rnd.listener is not None and rnd.listener in ready:
            for arrival in rnd.arrivals():
                say({"arrival": arrival})
        if stdin in ready:
            chunk = os.read(stdin, 1 << 16)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    running = handle(json.loads(line), state)
                except Exception as e:  # the node's answer, never a traceback: fablab names the node
                    say({"error": "%s: %s" % (type(e).__name__, e)})
                if not running:
                    break
        sys.stdout.flush()
    if state.get("round") is not None:
        state["round"].close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()

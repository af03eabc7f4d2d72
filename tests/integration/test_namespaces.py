"""Namespaces made and entered without helper processes (harness/plumbing/namespaces.py; needs root)."""
from __future__ import annotations

import os
import socket
import subprocess

import pytest

from harness.core.errors import LabError, NamespaceError
from harness.plumbing.namespaces import NETNS_DIR, create, entered, list_namespaces, remove

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates network namespaces")

# Not fablab's fl_<lab>_<node>: a namespace of that form with no lab state is a lab left behind,
# and `fablab clean` in another worker (test_sigkilled_runner_is_cleaned) removed one mid-test.
NAME = f"flnse{os.getpid()}_x"
_SO_NETNS_COOKIE = 71  # Linux >= 5.14; Python does not export it


@pytest.fixture
def made():
    create(NAME)
    try:
        yield NAME
    finally:
        remove(NAME)
        assert NAME not in list_namespaces()


def _here() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


def test_create_binds_a_new_namespace_and_leaves_this_thread_home(made):
    home = _here()
    assert os.stat(f"{NETNS_DIR}/{made}").st_ino != home
    assert _here() == home
    links = subprocess.run(["ip", "-n", made, "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"]  # empty, as a new one is


def _cookie(sock: socket.socket) -> int:
    return int.from_bytes(sock.getsockopt(socket.SOL_SOCKET, _SO_NETNS_COOKIE, 8), "little")


def test_a_socket_opened_inside_stays_in_that_namespace(made):
    home = _here()
    with entered(made):
        assert _here() == os.stat(f"{NETNS_DIR}/{made}").st_ino
        inside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    assert _here() == home
    with inside, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as at_home:
        assert _cookie(inside) != _cookie(at_home)
        with entered(made), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
            assert _cookie(again) == _cookie(inside)  # the control: same namespace, same cookie


def test_remove_says_whether_it_removed_and_refuses_a_bad_name():
    other = f"flnse{os.getpid()}_r"
    create(other)
    assert remove(other) is True  # the control: there, so removed
    assert other not in list_namespaces()
    assert remove(other) is False  # gone already (another teardown or `fablab clean` first)
    with pytest.raises(NamespaceError, match="invalid namespace name"):
        remove("../etc")


def test_create_refuses_a_name_in_use_and_a_bad_name(made):
    with pytest.raises(LabError, match="exists already"):
        create(made)
    with pytest.raises(LabError, match="invalid namespace name"):
        create("../etc")
    with pytest.raises(NamespaceError, match="does not exist"):
        with entered(f"{made}_absent"):
            pass


def test_ip_batch_runs_every_line_and_a_refused_one_is_quoted(made):
    from harness.plumbing.namespaces import ip_batch

    ip_batch(made, ["link set lo up", "addr add 10.255.0.1/32 dev lo", "route add 10.254.0.0/16 dev lo"])
    routes = subprocess.run(["ip", "-n", made, "route"], capture_output=True, text=True, check=True).stdout
    assert "10.254.0.0/16 dev lo" in routes  # the control: each line ran
    with pytest.raises(LabError, match=r"at `route add 10.254.0.0/16 dev lo`: .*File exists"):
        ip_batch(made, ["addr add 10.255.0.2/32 dev lo", "route add 10.254.0.0/16 dev lo", "link set lo down"])
    state = subprocess.run(["ip", "-n", made, "-o", "link", "show", "lo"], capture_output=True, text=True).stdout
    assert "UP" in state.split(">")[0]  # it stopped at the refused line: the one after did not run


def _link_local_routes(ns: str, port: str) -> list[str]:
    out = subprocess.run(["ip", "-n", ns, "-6", "route", "show", "table", "main", "dev", port],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.startswith("fe80::/64")]


def test_a_port_the_kernel_left_without_its_link_local_route_gets_it_back(made):
    """The kernel's own fe80::/64 route of a port went missing at gpu4096 (netns_setup.restore_link_local):
    put back on that port only, once, beside the other ports' routes of the same prefix."""
    from harness.plumbing import wait
    from harness.plumbing.namespaces import ip_batch
    from harness.runtime.netns_setup import restore_link_local

    other = f"flnse{os.getpid()}_y"
    create(other)
    try:
        ip_batch(made, [f"link add E0 up type veth peer name E1 netns {other}",
                        f"link add E2 up type veth peer name E3 netns {other}"])
        ip_batch(other, ["link set E1 up", "link set E3 up"])
        assert wait.within(lambda: [len(_link_local_routes(made, p)) for p in ("E0", "E2")] == [1, 1], 5.0,
                           interval=0.05) is not None
        assert restore_link_local(made, ["E0", "E2"]) == []  # the control: the kernel's own are there
        subprocess.run(["ip", "-n", made, "route", "del", "fe80::/64", "dev", "E0"], check=True)
        assert _link_local_routes(made, "E0") == []  # as the kernel left one port in 27,000
        assert restore_link_local(made, ["E0", "E2"]) == ["E0"]
        assert [len(_link_local_routes(made, p)) for p in ("E0", "E2")] == [1, 1]
        assert "linkdown" not in " ".join(_link_local_routes(made, "E0"))
    finally:
        remove(other)


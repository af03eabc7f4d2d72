# fablab microVM guest script (send_lat), run by the initramfs in a chroot of the host's root.
# Everything it finds goes to /tmp/fablab (the lab's run directory on the host).
OUT=/tmp/fablab
exec > $OUT/guest.log 2>&1
set -u
step() { echo "step $1 $(cut -d' ' -f1 /proc/uptime)"; }
fail() { echo "$*" > $OUT/failed; exit 1; }
wait_for() {  # seconds, then a command that must succeed
    local until=$(( $(date +%s) + $1 )); shift
    until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$until" ] || return 1; sleep 0.1; done
}
step boot
ip link set lo up
sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
    net.ipv4.conf.all.accept_local=1 net.ipv4.conf.all.arp_ignore=1 net.ipv6.conf.all.disable_ipv6=1
# Locally made packets consult their source's table before the local one: an endpoint's
# traffic to another endpoint of this guest leaves by its own NIC, into the fabric.
ip rule add pref 1000 lookup local && ip rule del pref 0
dev=$(for d in /sys/class/net/*; do [ "$(cat $d/address)" = "62:16:b6:21:14:fd" ] && basename $d; done)
[ -n "$dev" ] || fail "no NIC with MAC 62:16:b6:21:14:fd (gpu01:rail0)"
ip link set "$dev" name e0
sysctl -qw net.ipv4.conf.e0.rp_filter=0 net.ipv4.conf.e0.accept_local=1
ip link set e0 mtu 9100 up
ip addr add 10.0.1.1/31 dev e0
ip route add 10.0.1.0/31 dev e0 src 10.0.1.1 table 100
ip route add 10.0.1.0/24 via 10.0.1.0 dev e0 src 10.0.1.1 table 100
# To itself (an unbound socket's second lookup, e.g. perftest's TCP exchange): local.
ip route add local 10.0.1.1 dev lo table 100
ip route add unreachable default table 100
ip rule add pref 100 from 10.0.1.1 iif lo lookup 100
# rdma_cm checks a connection request by a lookup that names the NIC but no input interface
ip rule add pref 200 from 10.0.1.1 oif e0 lookup 100
rdma link add rxe0 type rxe netdev e0 || fail "rdma link add rxe0 failed"
dev=$(for d in /sys/class/net/*; do [ "$(cat $d/address)" = "e6:65:17:16:14:73" ] && basename $d; done)
[ -n "$dev" ] || fail "no NIC with MAC e6:65:17:16:14:73 (gpu05:rail0)"
ip link set "$dev" name e1
sysctl -qw net.ipv4.conf.e1.rp_filter=0 net.ipv4.conf.e1.accept_local=1
ip link set e1 mtu 9100 up
ip addr add 10.0.1.9/31 dev e1
ip route add 10.0.1.8/31 dev e1 src 10.0.1.9 table 101
ip route add 10.0.1.0/24 via 10.0.1.8 dev e1 src 10.0.1.9 table 101
# To itself (an unbound socket's second lookup, e.g. perftest's TCP exchange): local.
ip route add local 10.0.1.9 dev lo table 101
ip route add unreachable default table 101
ip rule add pref 101 from 10.0.1.9 iif lo lookup 101
# rdma_cm checks a connection request by a lookup that names the NIC but no input interface
ip rule add pref 201 from 10.0.1.9 oif e1 lookup 101
rdma link add rxe1 type rxe netdev e1 || fail "rdma link add rxe1 failed"
step nics
gid_index() {  # device, GID: the index of the RoCE v2 entry for that GID
    local p=/sys/class/infiniband/$1/ports/1 f
    for f in $p/gids/*; do
        [ "$(cat $f)" = "$2" ] && [ "$(cat $p/gid_attrs/types/${f##*/} 2>/dev/null)" = "RoCE v2" ] \
            && { echo "${f##*/}"; return 0; }
    done
    return 1
}
wait_for 10 gid_index rxe0 0000:0000:0000:0000:0000:ffff:0a00:0101 || fail "rxe0 has no RoCE v2 GID for 10.0.1.1"
GID0=$(gid_index rxe0 0000:0000:0000:0000:0000:ffff:0a00:0101)
wait_for 10 gid_index rxe1 0000:0000:0000:0000:0000:ffff:0a00:0109 || fail "rxe1 has no RoCE v2 GID for 10.0.1.9"
GID1=$(gid_index rxe1 0000:0000:0000:0000:0000:ffff:0a00:0109)
# The gateways answer before the test starts, so a first packet is not lost to ARP.
wait_for 10 ping -c1 -W1 -I 10.0.1.1 10.0.1.0 || fail "gpu01:rail0: gateway 10.0.1.0 does not answer"
wait_for 10 ping -c1 -W1 -I 10.0.1.9 10.0.1.8 || fail "gpu05:rail0: gateway 10.0.1.8 does not answer"
counters() {
    for d in /sys/class/infiniband/*; do
        for c in $d/ports/1/hw_counters/*; do echo "${d##*/} ${c##*/} $(cat $c)"; done
    done
}
counters > $OUT/counters.before
step ready
stdbuf -oL ib_send_lat -d rxe1 -x $GID1 -F -s 2 -n 1000 -u 18 -p 18515 > $OUT/server.txt 2>&1 &
server=$!
wait_for 20 sh -c "ss -Hltn 'sport = :18515' | grep -q ." || fail "the send_lat server did not get ready"
step client
stdbuf -oL ib_send_lat -d rxe0 -x $GID0 -F -s 2 -n 1000 -u 18 -p 18515 10.0.1.9 > $OUT/client.txt 2>&1
echo $? > $OUT/client.rc
step client-done
wait_for 10 sh -c "! kill -0 $server" || kill $server
wait $server; echo $? > $OUT/server.rc
counters > $OUT/counters.after
ip -s -s link > $OUT/guest-links.txt
step done
echo done > $OUT/done
# The host reads the taps' counters while they still exist, then lets the guest power off.
wait_for 10 test -e $OUT/release

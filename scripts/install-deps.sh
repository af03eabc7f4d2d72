#!/usr/bin/env bash
# Installs the Debian packages fablab needs, only those missing. Safe to run again.
set -euo pipefail

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_cmd vtysh || [ -x /usr/lib/frr/zebra ] || need+=(frr)
have_cmd nft || need+=(nftables)
have_cmd ip || need+=(iproute2)
have_cmd ping || need+=(iputils-ping)
have_cmd pgrep || need+=(procps)
have_cmd yanglint || need+=(libyang2-tools)  # the unit tests validate config_db.json against SONiC's YANG
have_cmd iptables || need+=(iptables)  # a unit test runs init.sh, which keeps eth0 apart with iptables as docker-sonic-vs has it
have_cmd cc || need+=(gcc)  # fablab-bfd-dp, the lab's BFD data plane (BFD offload), is C
[ -e /usr/include/stdio.h ] || need+=(libc6-dev)
have_cmd clang || need+=(clang)  # the lossless data plane's tc programs (harness/dataplane/lossless.bpf.c)
[ -e /usr/include/bpf/libbpf.h ] || need+=(libbpf-dev)  # fablab-lossless-dp loads and attaches them
have_cmd chromium || need+=(chromium)  # a unit test renders the HTML report in headless Chromium
[ -x /usr/sbin/sshd ] || need+=(openssh-server)  # sshd in every lab node's namespace (`fablab check --via ssh`)
[ -x /usr/sbin/lldpd ] || need+=(lldpd)  # lldpd in every lab node's namespace: LLDP as the cabling's evidence
have_cmd ssh-keygen || need+=(openssh-client)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)

if [ ${#need[@]} -eq 0 ]; then
    echo "system packages: all present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${need[*]}; run as root, or: sudo apt-get install ${need[*]}" >&2
    exit 1
fi
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
# Installing openssh-server or lldpd starts its service in the root namespace (sshd on :22 for
# everyone, LLDP out of the machine's own ports). fablab runs both only inside lab namespaces,
# so the install runs under a policy-rc.d that refuses every start; one already there is kept.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# fablab: no service starts while its packages install\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    own_policy=1
fi
trap '[ "$own_policy" = 1 ] && rm -f "$policy"' EXIT
apt-get update -q
apt-get install -y -q --no-install-recommends "${need[@]}"
# Debian starts FRR's own service in the root namespace on install; fablab runs FRR only
# inside lab namespaces, so a frr package it installed is left stopped and disabled.
if printf '%s\n' "${need[@]}" | grep -qx frr && command -v systemctl >/dev/null 2>&1 \
        && [ -d /run/systemd/system ]; then
    systemctl disable --now frr.service || true
fi
for unit in ssh lldpd; do  # enabled by their packages for the next boot: fablab needs neither in the root namespace
    if printf '%s\n' "${need[@]}" | grep -qx "$([ $unit = ssh ] && echo openssh-server || echo lldpd)" \
            && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl disable --now "$unit.service" || true
    fi
done

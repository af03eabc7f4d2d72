#!/usr/bin/env bash
# The RDMA lane's Debian packages (only those missing) and Debian's 6.1 kernel package, whose
# kernel (it has rdma_rxe) the microVM boots. Safe to run again. `make test` runs it, since
# labs/test_rdma.py uses the lane; `make validate` does not need it.
set -euo pipefail

CACHE=${FABLAB_RDMA_CACHE:-/var/cache/fablab/rdma}
need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_cmd qemu-system-x86_64 || need+=(qemu-system-x86)
[ -x /bin/busybox ] || need+=(busybox-static)
have_cmd ib_write_bw || need+=(perftest)
have_cmd rping || need+=(rdmacm-utils)
have_cmd ibv_devices || need+=(ibverbs-utils)
[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] || need+=(ibverbs-providers)
have_kernel() { compgen -G "$CACHE/linux-image-6.1.*-amd64_*.deb" >/dev/null; }

if [ ${#need[@]} -eq 0 ] && have_kernel; then
    echo "RDMA lane: all present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "the RDMA lane needs: ${need[*]} ${CACHE}/linux-image-6.1.*-amd64 .deb; run as root: $0" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
if [ ${#need[@]} -gt 0 ]; then
    echo "installing Debian packages for the RDMA lane: ${need[*]}"
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi
if ! have_kernel; then
    # The kernel image is downloaded, not installed: the host keeps its own kernel and boot
    # files; fablab extracts vmlinux and a few modules from the package into $CACHE.
    pkg=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*-amd64\)$/\1/p' | head -1)
    if [ -z "$pkg" ]; then
        echo "no Debian 6.1 kernel package found (apt-cache depends linux-image-amd64)" >&2
        exit 1
    fi
    echo "downloading $pkg into $CACHE (for the microVM)"
    mkdir -p "$CACHE"
    (cd "$CACHE" && apt-get download -q "$pkg" 2>&1 | grep -v "couldn't be accessed by user '_apt'" || true)
    have_kernel || { echo "download of $pkg failed" >&2; exit 1; }
fi
echo "RDMA lane: ready"

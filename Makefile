# The whole set-up on a fresh Debian 12 machine: `make validate` or `make test`.
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
TOPOLOGY ?= ai-cluster

DATAPLANE := harness/dataplane/build/fablab-bfd-dp
LOSSLESS_DP := harness/dataplane/build/fablab-lossless-dp
LOSSLESS_BPF := harness/dataplane/build/lossless.bpf.o
BGPD_RINGBUF := harness/dataplane/build/libfablab-bgpd-ringbuf.so
FRR_TRIM := harness/dataplane/build/libfablab-frr-trim.so
ZEBRA_RIBQ := harness/dataplane/build/libfablab-zebra-ribq.so

.PHONY: deps venv dataplane rdma-deps validate test unit labs render bench clean distclean

# Booting a lab needs root and Debian's packages (FRR, nftables, ...); rendering does not.
deps:
	@./scripts/install-deps.sh
	@$(MAKE) --no-print-directory venv dataplane

# The lab's BFD and lossless data planes, in C (and a tc program), and what FRR's daemons
# preload (harness/runtime/bgpd_rings.py, zebra_ribq.py, heap_trim.py): the runtime also builds
# them on first use.
dataplane: $(DATAPLANE) $(LOSSLESS_DP) $(LOSSLESS_BPF) $(BGPD_RINGBUF) $(FRR_TRIM) $(ZEBRA_RIBQ)

$(ZEBRA_RIBQ): harness/dataplane/zebra_ribq.c
	@mkdir -p $(@D)
	cc -O2 -Wall -shared -fPIC -pthread -o $@ $<

$(FRR_TRIM): harness/dataplane/frr_trim.c
	@mkdir -p $(@D)
	cc -O2 -Wall -shared -fPIC -pthread -o $@ $<

$(BGPD_RINGBUF): harness/dataplane/bgpd_ringbuf.c
	@mkdir -p $(@D)
	cc -O2 -Wall -shared -fPIC -o $@ $<

$(DATAPLANE): harness/dataplane/bfd_dp.c
	@mkdir -p $(@D)
	cc -O2 -Wall -o $@ $<

$(LOSSLESS_DP): harness/dataplane/lossless_dp.c harness/dataplane/lossless.h
	@mkdir -p $(@D)
	cc -O2 -Wall -o $@ $< -lbpf

$(LOSSLESS_BPF): harness/dataplane/lossless.bpf.c harness/dataplane/lossless.h
	@mkdir -p $(@D)
	clang -O2 -g -mcpu=v3 -target bpf -I /usr/include/x86_64-linux-gnu -c -o $@ $<

# Only the Python package (show, render, audit, diff): no root, no apt.
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -m venv $(VENV) || { echo "$(PYTHON) -m venv failed: install python3-venv (Debian), or make deps as root" >&2; exit 1; }
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

# The RDMA lane (labs/test_rdma.py): QEMU, perftest, rdma-core and Debian's 6.1 kernel.
rdma-deps:
	@./scripts/install-rdma.sh

validate: deps
	$(BIN)/fablab validate $(TOPOLOGY)

# What needs no lab on both cores, then the labs four at a time (five: three of six runs failed a timed case beside the others, docs/performance.md). Labs side by side take turns
# at what is timed (harness/plumbing/priority.py: timed_turn), their FRR runs at nice -5 and
# their traffic ends under SCHED_FIFO; one at a time the labs take 27 minutes
# (docs/performance.md). Both run; either failing fails the target. The labs boot without the
# mgmt services (sshd, lldpd) unless a test asks for them: 80 daemons a boot, a minute of the run.
test: deps rdma-deps
	@$(BIN)/pytest -n 2 tests --ignore=tests/integration; unit=$$?; \
	FABLAB_MGMT_SERVICES=off $(BIN)/pytest -n 4 --dist loadfile --no-loadscope-reorder tests/integration labs; labs=$$?; \
	exit $$(( unit || labs ))

# What needs no root and no lab: unit, judge, architecture and docs tests (tests/integration boots).
unit: venv
	$(BIN)/pytest -n 2 tests --ignore=tests/integration

labs: deps rdma-deps
	$(BIN)/pytest labs

render: venv
	$(BIN)/fablab render $(TOPOLOGY) -o out/$(TOPOLOGY)

clean:
	-$(BIN)/fablab clean

distclean:
	rm -rf $(VENV) out results *.egg-info harness/dataplane/build

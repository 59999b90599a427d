# gemini-companion.nvim — development entry points.
#   make run  [ARGS='--headless --listen /tmp/nvim.sock']   bootstrap, then open Neovim with the plugin live
#   make test                                                bootstrap (with test tools), run the whole suite
#   make test-fast                                           the inner loop: Lua specs and Python tests, no end-to-end Neovim
#   make test-lua | make test-unit                         the quick tiers alone (seconds, no Node clients)
#   make lint | make format | make shape | make doc | make pictures | make bench | make stress (long reliability runs) | make clean
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STYLUA := dev/lint/node_modules/.bin/stylua
LUACHECK := dev/lint/luacheck/luacheck
PYTEST_ARGS ?=

.PHONY: run test test-fast test-lua test-unit lint format shape doc pictures bench stress bootstrap bootstrap-dev clean

bootstrap:
	@dev/bootstrap.sh

bootstrap-dev:
	@dev/bootstrap.sh --dev

run: bootstrap
	dev/nvim $(ARGS)

# One pytest worker per CPU and one more, at most 4 (each test runs a Neovim, a Python host and
# clients; a container may show more CPUs than it may use). The extra worker runs while others wait
# on an agent, pip or a timer: at 2 workers the suite kept 1.3 of 2 CPUs busy (9:18 CPU in 7:54),
# at 3 it took 5:01 instead. Work is stolen so the long real-client tests do not finish last on one
# worker. PYTEST_ARGS='-n 0' runs serially.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n + 1 < 4 ? n + 1 : 4 )))
# A user's Python writes bytecode; a container's may say not to (PYTHONDONTWRITEBYTECODE): without
# it every host the tests start compiles the plugin again, and pytest rewrites every test module.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
test: bootstrap-dev
	$(PYTEST) -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The inner loop: every test not marked e2e (the Lua specs and the Python tests; no Neovim host).
test-fast: bootstrap-dev
	$(PYTEST) -n $(TEST_WORKERS) --dist worksteal -m 'not e2e' $(PYTEST_ARGS)

# The Lua units (a child nvim --clean per spec) and the Python units: no Neovim host, no clients.
test-lua: bootstrap
	@[ -f '$(VENV)/.installed[dev]' ] || $(VENV)/bin/python -m pip install -q -e '.[dev]'
	$(PYTEST) -q tests/lua $(PYTEST_ARGS)

test-unit: bootstrap
	@[ -f '$(VENV)/.installed[dev]' ] || $(VENV)/bin/python -m pip install -q -e '.[dev]'
	$(PYTEST) -q tests/unit $(PYTEST_ARGS)

$(STYLUA):
	cd dev/lint && npm install --no-audit --no-fund --loglevel=error

$(LUACHECK):
	dev/lint/get-luacheck.sh

lint: bootstrap-dev $(STYLUA) $(LUACHECK)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check rplugin tests bench
	$(VENV)/bin/mypy
	$(STYLUA) --check lua plugin tests/lua
	$(LUACHECK) --quiet --codes lua plugin build.lua tests/lua
	$(PY) dev/review_record.py

# The help's generated parts: the settings block from config.py, the tool list from the tools' specs.
doc: bootstrap-dev
	$(PY) dev/gen_doc.py

# The README's pictures, taken from the real runs of the tests that show them (tests/support/screen.py).
pictures: bootstrap-dev
	GEMINI_COMPANION_PICTURES=doc/img $(PY) -m pytest -q -n 0 tests/integration/test_claude_gate.py -k with_comments

format: bootstrap-dev $(STYLUA)
	$(VENV)/bin/ruff format rplugin tests bench
	$(VENV)/bin/ruff check --fix .
	$(STYLUA) lua plugin tests/lua

# The largest modules and longest functions: a report (lint measures complexity).
shape: bootstrap-dev
	$(PY) dev/shape.py

bench: bootstrap-dev
	$(PY) -m bench.run
	$(PY) -m bench.growth

stress: bootstrap-dev
	$(PY) -m bench.reliability

clean:
	rm -rf $(VENV) tests/node/node_modules tests/opencode/node_modules tests/conformance/node_modules tests/gemini_cli/node_modules tests/claude_cli/node_modules \
		dev/lint/node_modules

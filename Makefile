# arbiter: `make demo` and `make test` set up everything they need, idempotently.
SHELL := /bin/bash
# The interpreter that builds the venv: the real binary, not a (slow) pyenv shim.
PYTHON ?= $(shell command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
VENV := .venv
VPY := $(VENV)/bin/python
APT_PACKAGES := g++ bubblewrap valgrind python3 python3-venv python3-numpy python3-sortedcontainers libicu-dev pkg-config
SYSDEPS_STAMP := $(VENV)/.sysdeps-ok
INSTALL_STAMP := $(VENV)/.installed

.PHONY: setup sysdeps demo test test-verl bench bench-load doctor clean

setup: $(INSTALL_STAMP)

# Debian packages: installed with apt-get when root, else a clear message naming what is missing.
$(SYSDEPS_STAMP):
	@missing=""; \
	command -v g++ >/dev/null || missing="$$missing g++"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v valgrind >/dev/null || missing="$$missing valgrind"; \
	command -v python3 >/dev/null || missing="$$missing python3"; \
	[ -x /usr/bin/python3 ] || missing="$$missing python3(debian)"; \
	pkg-config --exists icu-uc 2>/dev/null || missing="$$missing libicu-dev pkg-config"; \
	/usr/bin/python3 -c 'import numpy, sortedcontainers' 2>/dev/null || missing="$$missing python3-numpy python3-sortedcontainers"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages:$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q $(APT_PACKAGES) >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && apt-get install -y -q $(APT_PACKAGES) >/dev/null; } || exit 1; \
	  else \
	    echo "arbiter needs these Debian packages:$$missing"; \
	    echo "install them with: sudo apt-get install -y $(APT_PACKAGES)"; exit 1; \
	  fi; \
	fi
	@mkdir -p $(VENV) && touch $@

sysdeps: $(SYSDEPS_STAMP)

$(VPY): | $(SYSDEPS_STAMP)
	@test -n "$(PYTHON)" || { echo "no python3 found"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

$(INSTALL_STAMP): pyproject.toml $(SYSDEPS_STAMP) | $(VPY)
	$(VPY) -m pip install -q -e '.[test]'
	PYTHONDONTWRITEBYTECODE= $(VPY) -m compileall -q src >/dev/null
	@touch $@

demo: setup
	rm -rf out/demo && $(VENV)/bin/arbiter oracle verify --seeds data/oracle/seeds.jsonl --returns data/oracle/returns.jsonl \
	  --hidden data/oracle/hidden_tests.json --generators data/oracle/generators --out out/demo

# verl 0.9.1 and 0.8.0 live in venvs of their own, kept between runs outside the repository
# (scripts/verl_venv.sh [VERSION]); tests/verl/test_verl09_venv.py runs the verl-only tests in them, or
# skips saying why.
VERL_VENV_SCRIPT := scripts/verl_venv.sh

test: setup
	@bash $(VERL_VENV_SCRIPT) >/dev/null || echo "verl 0.9.1 venv could not be built: the verl 0.9 tests will be skipped"
	@bash $(VERL_VENV_SCRIPT) 0.8.0 >/dev/null || echo "verl 0.8.0 venv could not be built: the verl 0.8 tests will be skipped"
	$(VPY) -m pytest -q

# the verl tests alone, in the verl venvs
test-verl: setup
	VERL_PY=$$(bash $(VERL_VENV_SCRIPT) | tail -1) && PYTHONPATH=src $$VERL_PY -m pytest -q -p no:cacheprovider \
	  tests/verl/test_verl09_reward_loop.py tests/verl/test_verl09_ray.py tests/integrations/test_trainers_real.py
	VERL_PY=$$(bash $(VERL_VENV_SCRIPT) 0.8.0 | tail -1) && PYTHONPATH=src $$VERL_PY -m pytest -q -p no:cacheprovider \
	  tests/verl/test_verl08.py

bench: setup
	for b in executor compile score pie parse acquire judge_overhead; do echo "== bench/$$b.py"; $(VPY) bench/$$b.py || exit 1; done

# verdicts under CPU hogs, other scoring processes and memory pressure (starts and stops its own load)
bench-load: setup
	$(VPY) bench/under_load.py --quick

doctor: setup
	$(VENV)/bin/arbiter doctor

clean:
	rm -rf $(VENV) out .pytest_cache

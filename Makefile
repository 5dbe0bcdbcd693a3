# Two entry points: `make demo` and `make test`. Both install what they need, as root on Debian 12.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)
# Scenarios live in molecule/ at the top, as the design card puts them.
export MOLECULE_GLOB := molecule/*/molecule.yml
DEMO_NODES ?= 2

# The firewalls nccl_network's lab tests run inside lab nodes. Installing them must not start a
# firewall on this host: they are installed with services kept from starting (policy-rc.d), ufw
# stays disabled (its default), and firewalld is disabled where systemd would start it at boot.
FIREWALL_PACKAGES := iptables ufw firewalld
# chromium: the browser test of report.html (Playwright drives this system browser, never a download).
APT_PACKAGES := python3-venv openssh-server openssh-client nftables iproute2 iputils-ping \
	iperf3 netcat-openbsd util-linux procps git make openmpi-bin chromium shellcheck $(FIREWALL_PACKAGES)
APT_STAMP := $(VENV)/.apt-installed
PIP_STAMP := $(VENV)/.pip-installed

# The fast lane for contributors: unit and static tests, no lab, no playbook runs, no molecule
# (about a minute on 2 cores). `lab` and `slow` tests are left out by their markers.
FAST_TESTS := tests/unit tests/static/test_roles_static.py tests/static/test_site_order.py
FAST_MARKERS := not lab and not slow

.PHONY: setup install demo test test-fast test-lab test-cores lint sanity molecule build clean

setup: $(APT_STAMP) $(PIP_STAMP)

$(APT_STAMP):
	@missing=$$(dpkg-query -W -f='$${Package} $${Status}\n' $(APT_PACKAGES) 2>/dev/null \
	  | awk '$$NF != "installed" {print $$1}'; for p in $(APT_PACKAGES); do \
	  dpkg-query -W $$p >/dev/null 2>&1 || echo $$p; done | sort -u); \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages: $$missing"; \
	  policy=/usr/sbin/policy-rc.d; \
	  if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' > $$policy; chmod 755 $$policy; \
	    trap "rm -f $$policy" EXIT; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing || exit 1; \
	  if echo "$$missing" | grep -qw firewalld && [ -d /run/systemd/system ]; then \
	    systemctl disable --now firewalld.service; fi; \
	fi
	@[ -x $(BIN)/python ] || python3 -m venv $(VENV)
	@touch $@

# CPU PyTorch first (a local file here and in CI), so that lightning never pulls a CUDA build.
$(PIP_STAMP): pyproject.toml $(APT_STAMP)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q 'torch==2.13.0'
	$(BIN)/python -m pip install -q '.[test]'
	@touch $@

# Reinstall the package and collection from this checkout, quickly, on every run.
install: setup
	$(BIN)/python -m pip install -q --no-deps --force-reinstall .

# The lab's nodes share this machine's files: the virtualenv's Python (with torch) is the training
# Python, so that validation runs a real Gloo all-reduce across the nodes (they have no GPU).
demo: install
	ncclkit lab up --nodes $(DEMO_NODES)
	ansible-playbook site.yml -i inventories/lab -e nccl_profile_python=$(abspath $(BIN))/python
	ncclkit lab status

test: install
	$(BIN)/pytest -q --durations=30
	$(MAKE) --no-print-directory lint sanity molecule

# No install: the tests import src/ and the collection from this checkout (tests/conftest.py).
test-fast: setup
	$(BIN)/pytest -q -m "$(FAST_MARKERS)" $(FAST_TESTS)

# Only the tests that build lab clusters of network namespaces (root).
test-lab: install
	$(BIN)/pytest -q -m lab

# meta/runtime.yml's requires_ansible claims the lowest and highest ansible-core below: the static
# and unit tests run on each, in its own Python 3.12 venv under build/, with only
# ansible-core and the test libraries (not the whole `ansible` package). The few collections the
# tests use (ansible.posix's json callback, amazon.aws) come from $(VENV)'s `ansible` package (make setup).
CORES := 2.19.0 2.19.14
CORES_PYTHON ?= $(lastword $(sort $(wildcard $(HOME)/.pyenv/versions/3.12.*/bin/python3.12)))
CORES_PIP := pytest hypothesis matplotlib boto3 'moto[server]' alibabacloud-ecs20140526 ansible-runner
# The fast lane's selection (unit and static tests) plus the two playbook runs on localhost.
CORES_MARKERS := not lab and not slow
CORES_TESTS := tests/unit tests/static/test_roles_static.py tests/static/test_site_order.py tests/roles/nccl_preflight/test_network_preflight.py \
	tests/static/test_template_quoting.py

build/core-%/.installed:
	@[ -n "$(CORES_PYTHON)" ] || { echo "test-cores needs a Python 3.12 (pyenv install 3.12)"; exit 1; }
	$(CORES_PYTHON) -m venv build/core-$*
	build/core-$*/bin/python -m pip install -q 'ansible-core==$*' $(CORES_PIP)
	@touch $@

test-cores: $(foreach v,$(CORES),build/core-$(v)/.installed)
	@rc=0; for v in $(CORES); do echo "== ansible-core $$v"; \
	  PATH=$(abspath build)/core-$$v/bin:$$PATH \
	  ANSIBLE_COLLECTIONS_PATH=$(abspath collections):$(abspath $(wildcard $(VENV)/lib/python3*/site-packages)) \
	  build/core-$$v/bin/python -m pytest -q -p no:cacheprovider -m "$(CORES_MARKERS)" $(CORES_TESTS) || rc=1; done; exit $$rc

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ansible-lint --offline

# The wheel (the command and the collection), into dist/
build: setup
	$(BIN)/python -m pip wheel -q --no-deps -w dist .

# ansible-test needs the collection at .../ansible_collections/ncclkit/cluster as real files (it
# resolves collections/'s symlink back to the repository and then finds no such path): the files git
# knows (tracked or new, not ignored) are copied there, the symlink itself left out, and made a git
# repository of their own (ansible-test lists its files with git, and build/ is ignored here). Only the
# files of the last copy are removed first: tests/output keeps ansible-test's own virtual environment
# (it makes a new one, pip download included, when that folder is gone). Every sanity test
# runs in ansible-test's own pinned virtual environments (--venv; no Docker here), cached under
# ~/.ansible/test after the first run. They bootstrap pip with a get-pip.py from the internet: the
# cache is seeded with tools/get_pip_offline.py, which does the same with ensurepip + pip.
SANITY_DIR := build/sanity/ansible_collections/ncclkit/cluster
SANITY_PYTHON := 3.11
# The pip version ansible-test pins for that Python, asked from ansible-test itself (at run time).
ANSIBLE_TEST_PIP = $(shell $(BIN)/python -c 'import types; \
	from ansible_test._internal.python_requirements import get_venv_packages; \
	print(get_venv_packages(types.SimpleNamespace(version="$(SANITY_PYTHON)"))["pip"])')
GET_PIP_CACHE = $(HOME)/.ansible/test/cache/get_pip_$(subst .,_,$(ANSIBLE_TEST_PIP)).py

sanity: setup
	@[ -n "$(ANSIBLE_TEST_PIP)" ] || { echo "sanity: cannot read ansible-test's pip version"; exit 1; }
	[ -e $(GET_PIP_CACHE) ] || install -D -m 0644 tools/get_pip_offline.py $(GET_PIP_CACHE)
	mkdir -p $(SANITY_DIR)
	cd $(SANITY_DIR) && if [ -d .git ]; then git ls-files -z | xargs -0 rm -f; \
	  else git init -q && echo /tests/output/ > .git/info/exclude; fi
	git ls-files -z --cached --others --exclude-standard | grep -zv '^collections/' \
	  | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C $(SANITY_DIR)
	cd $(SANITY_DIR) && git add -A
	cd $(SANITY_DIR) && $(abspath $(BIN))/ansible-test sanity --venv --python $(SANITY_PYTHON) --color no

molecule: install
	$(BIN)/molecule test -s default
	$(BIN)/molecule test -s network

clean:
	-ncclkit lab down
	rm -rf build dist .pytest_cache .hypothesis

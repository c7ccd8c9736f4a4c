# The Scale of Attention: build and test the book.
#   make book     build the HTML site (creates .venv on first use)
#   make test     every test: lint, library, notebooks (nbval), strict site build, browser
#   make test-portable  the numerics-sensitive tests again under other OpenBLAS kernels
#   make execute  re-execute every chapter in a fresh kernel and store its outputs
#   make sweep    re-run the training sweep (and its learned-scale, AdamW and length arms) whose stored results Part IV loads
SHELL := bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export MPLBACKEND := Agg
export PYTHONHASHSEED := 0
export PYDEVD_DISABLE_FILE_VALIDATION := 1

CHAPTERS := $(sort $(wildcard chapters/*.ipynb))

.PHONY: help venv book lab pdf mutate test lint types-site-browser test-code test-lib test-notebooks test-site test-browser test-portable bench timings sweep sweep-main sweep-learned sweep-adamw sweep-lengths sweep-lm execute lock clean

help:
	@echo "make book      build the site into _build/html"
	@echo "make test      run every test (lint, library, notebooks, strict site build, browser)"
	@echo "make test-portable  library tests and notebooks again under other OpenBLAS kernels"
	@echo "make execute   re-execute all chapters and store their outputs"
	@echo "make lab       open the chapters in JupyterLab with the book's environment"
	@echo "make pdf       the whole book as one PDF (needs Chromium)"
	@echo "make mutate   mutation testing of the library (mutmut, about an hour)"
	@echo "make bench     run the benchmarks (then make execute to refresh the appendix)"
	@echo "make timings   nbval over the chapters against the kernel-start floor, and per-chapter times"
	@echo "make sweep     run the Part IV training sweep and its learned-scale, AdamW and length arms (about 40 min on two cores; then make execute)"
	@echo "make sweep-main     only the sweep of both optimisers (about 21 min)"
	@echo "make sweep-learned  only the learned-scale arm (about 10 min)"
	@echo "make sweep-adamw    only the AdamW arm (dot scores, weight decay 0.1, 0.01 and 1; about 8 min)"
	@echo "make sweep-lengths  only the length arm (train at n, test at 4n; about 2 min)"
	@echo "make sweep-lm  train the byte-level language models of chapter 14 (JAX on CPU; about 2 hours on two busy cores; resumes)"
	@echo "make clean     remove _build"

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed, found " + sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet pip==26.3
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# The site renders the chapters' stored outputs (make execute makes them, make
# test checks them with nbval); nothing is executed here.
book: $(STAMP)
	$(BIN)/jupyter-book build . --builder html
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# The whole book as one PDF (_build/pdf/book.pdf): the single-page HTML build
# printed by the Chromium the browser tests use, then a smoke test of the file.
# Not part of make test.
pdf: $(STAMP)
	$(BIN)/jupyter-book build . --builder custom --custom-builder singlehtml
	$(BIN)/python tools/pdf.py

# Mutation testing with mutmut (the [mutate] extra, installed on first use), in a
# scratch copy; prints the score per module. By default the mathematical core (about an
# hour for its 3,700 mutants on this 2-core machine); MUTATE_ARGS="SCRATCH MODULE ..."
# picks other modules; SAMPLE=150 SEED=2026 runs a seeded uniform sample of the mutants
# and scores it with a 95% interval. Not part of make test; CONTRIBUTING.md, "Mutation testing".
mutate: $(STAMP)
	$(BIN)/python -c 'import mutmut' 2>/dev/null || $(BIN)/python -m pip install --quiet --require-hashes -r requirements-tools.txt
	SAMPLE="$(SAMPLE)" SEED="$(SEED)" bash tools/mutate.sh $(MUTATE_ARGS)

# JupyterLab on the chapters, in the book's environment (the [lab] extra of
# pyproject.toml; installed into .venv on first use).
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: $(STAMP)
	$(BIN)/python -c 'import jupyterlab' 2>/dev/null || $(BIN)/python -m pip install --quiet --require-hashes -r requirements-tools.txt
	cd chapters && ../$(BIN)/jupyter lab $(LAB_ARGS)

# After ruff (under a second), two jobs: the pytest session, and beside it the type
# checker, the site build and the browser tests, one after another. The second job
# reads only the stored outputs, which nbval checks, so neither waits for the other,
# and it spends most of its time waiting on Chromium, so mypy (25 s from cold) fits in
# it. Each job's output is printed when it ends; make test fails if either fails.
test: $(STAMP)
	$(BIN)/ruff check .
	$(MAKE) --no-print-directory -j2 --output-sync=recurse test-code types-site-browser
	@echo "All tests passed."

types-site-browser: $(STAMP)
	$(BIN)/mypy
	$(MAKE) --no-print-directory test-site
	$(MAKE) --no-print-directory test-browser

# pyflakes rules over lib/, tests/, bench/, tools/, _ext/ and the chapters, and
# the type checker over the library (both configured in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# Two pytest workers on two cores, each with one BLAS thread: with OpenBLAS's
# default (a thread per core) the workers' threads oversubscribe the cores, and
# nbval over the chapters took 110 s instead of 75 s. test-portable keeps the
# default thread count, so both counts are exercised.
SERIAL_BLAS := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# glued figures are compared as markers, not bytes (tests/nbval_sanitize.cfg)
NBVAL_SANITIZE := --nbval-sanitize-with tests/nbval_sanitize.cfg

# make test runs the library tests and the chapters in one pytest session (test-code):
# each notebook, and each test module, goes whole to one worker (--dist loadfile: a
# chapter's cells share one kernel, a module's fixtures are built once), in the session's
# order (--no-loadscope-reorder; xdist would otherwise hand out the units with the most
# tests first), which puts the longest units first (tests/conftest.py, LONGEST_FIRST).
# test-lib and test-notebooks run one half each.
XDIST := -n 2 --dist loadfile --no-loadscope-reorder
PYTEST_CODE := $(SERIAL_BLAS) $(BIN)/python -m pytest -p no:cacheprovider $(XDIST) $(NBVAL_SANITIZE)
test-code: $(STAMP)
	$(PYTEST_CODE) --nbval $(CHAPTERS) tests --ignore=tests/browser

test-lib: $(STAMP)
	$(PYTEST_CODE) tests --ignore=tests/browser

test-notebooks: $(STAMP)
	$(PYTEST_CODE) --nbval $(CHAPTERS)

# Warnings are errors (-W), references are checked (-n), the whole site is
# rebuilt (--all) so no warning hides in an unchanged page.
test-site: $(STAMP)
	$(BIN)/jupyter-book build . --all --builder html -W -n --keep-going

# The built site in headless Chromium (Debian's chromium; skipped with
# instructions when it is missing, except under CI=true).
test-browser: $(STAMP)
	$(BIN)/python -m pytest tests/browser -p no:cacheprovider

# The library tests and every chapter again under OpenBLAS kernels other than
# this CPU's default (SkylakeX too where the CPU has AVX-512): stored numbers and
# the book's conclusions must not depend on the kernel (see
# lib/attnscale/reproducibility.py for the measured spread).
# NumPy's own SIMD paths (exp, log, sums) differ by CPU too: the Prescott leg keeps only
# NumPy's baseline paths and the Haswell leg its AVX2 ones (NPY_DISABLE_CPU_FEATURES
# switches off the others this CPU has), so the two legs stand for CPUs without AVX2 and
# without AVX-512.
PORTABLE_KERNELS ?= Prescott Haswell $(shell grep -qm1 avx512f /proc/cpuinfo 2>/dev/null && echo SkylakeX)
NUMPY_PATHS_OFF = $(shell $(BIN)/python -c 'import sys; from numpy._core._multiarray_umath import __cpu_dispatch__ as d, __cpu_features__ as f; print(" ".join(x for x in d if f.get(x) and x not in sys.argv[1:]))' $(1))
test-portable: $(STAMP)
	for kernel in $(PORTABLE_KERNELS); do \
	  case $$kernel in Prescott) off="$(call NUMPY_PATHS_OFF)";; Haswell) off="$(call NUMPY_PATHS_OFF,X86_V3)";; *) off="";; esac; \
	  echo "== OPENBLAS_CORETYPE=$$kernel, NumPy paths off: $${off:-none}"; \
	  OPENBLAS_CORETYPE=$$kernel NPY_DISABLE_CPU_FEATURES="$$off" $(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST) $(NBVAL_SANITIZE) --nbval $(CHAPTERS) tests --ignore=tests/browser || exit 1; \
	done

# Benchmarks (not part of `make test`): prints a table, writes
# _build/bench/bench.json and bench/results.json (shown by the appendix page).
bench: $(STAMP)
	$(BIN)/python bench/bench.py
	$(BIN)/python bench/bench_exact.py

# The test loop against its floors: nbval over trivial notebooks (kernel starts), over notebooks
# that only import the stack, and over
# the chapters, and the per-chapter times recorded by make execute. Nothing asserts them.
timings: $(STAMP)
	$(BIN)/python tools/timings.py

# Every cell of the sweep and its arms as one job each, on two worker processes
# (one BLAS thread each), longest first; each result file is written when its
# last cell is done. The sweep-* targets run one arm each.
SWEEP_RUN := OPENBLAS_NUM_THREADS=1 $(BIN)/python -m attnscale.training --jobs 2
sweep: $(STAMP)
	$(SWEEP_RUN)

sweep-main: $(STAMP)
	$(SWEEP_RUN) --arms main

sweep-learned: $(STAMP)
	$(SWEEP_RUN) --arms learned

# AdamW on the dot-score cells, from the Adam cells' seeds: decay 0.1 (the arm), 0.01 and 1 (the grid of decays).
sweep-adamw: $(STAMP)
	$(SWEEP_RUN) --arms adamw

# Train at n, test at 4n under Part III's length rules (dot scores, Adam).
sweep-lengths: $(STAMP)
	$(SWEEP_RUN) --arms lengths

# The byte-level transformer of chapter 14 (JAX on CPU): each group of runs (one compiled,
# vmapped step over its seeds, rates and scales) is stored in chapters/data/bytelm/ when it
# ends; a group already stored is skipped, so an interrupted sweep resumes.
sweep-lm: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m attnscale.bytelm

execute: $(STAMP)
	$(BIN)/python tools/notebooks.py $(CHAPTERS)

# Re-resolve the lock (requirements.txt: pins and hashes) from pyproject.toml's
# extras with pip-tools; pins already in the lock are kept unless UPGRADE=--upgrade.
# requirements-tools.txt locks the optional tools ([lab], [mutate], [lock]) the
# same way, constrained by requirements.txt so the two never disagree.
LOCK_HEADER := '\# The lock: exact pins and SHA-256 hashes of every package the book needs (pip' \
  '\# installs it in hash-checking mode). Made by `make lock` from the extras in' \
  '\# pyproject.toml; edit those, never this file.' '\#'
TOOLS_HEADER := '\# The lock of the optional tools: the book (requirements.txt) plus the [lab],' \
  '\# [mutate] and [lock] extras, with SHA-256 hashes, constrained by requirements.txt.' \
  '\# make lab, make mutate and make lock install it; `make lock` writes it.' '\#'
lock: $(STAMP)
	$(BIN)/python -c 'import piptools' 2>/dev/null || $(BIN)/python -m pip install --quiet --require-hashes -r requirements-tools.txt
	$(BIN)/pip-compile pyproject.toml --extra dev --extra book --generate-hashes --allow-unsafe --strip-extras \
	  --no-header --no-emit-index-url --no-emit-find-links --quiet $(UPGRADE) --output-file requirements.txt
	{ printf '%s\n' $(LOCK_HEADER); cat requirements.txt; } > requirements.new
	mv requirements.new requirements.txt
	$(BIN)/pip-compile pyproject.toml --extra dev --extra book --extra lab --extra mutate --extra lock -c requirements.txt \
	  --generate-hashes --allow-unsafe --strip-extras --no-header --no-emit-index-url --no-emit-find-links --quiet $(UPGRADE) \
	  --output-file requirements-tools.txt
	{ printf '%s\n' $(TOOLS_HEADER); cat requirements-tools.txt; } > requirements.new
	mv requirements.new requirements-tools.txt

clean:
	rm -rf _build

VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PYTHON ?= python3

.PHONY: start test test-ops test-postgres test-k8s test-oldest test-compute test-flyte2 test-deploy lint docs docs-build bench \
	k8s-build dist image clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	$(PIP) install -q -e '.[dev]'
	touch $@

start: $(VENV)/.installed
	$(VENV)/bin/flytelite start $(ARGS)

# Two pytest-xdist workers, each taking whole test files: the suite mostly waits on servers and task processes,
# and each worker starts its own (PYTEST_WORKERS=0 runs in one process). The slowest tests are listed at the end.
PYTEST_WORKERS ?= 2
PYTEST = $(PY) -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile --durations=20

test: $(VENV)/.dev-installed
	$(PYTEST) --ignore=tests/k8s --ignore=tests/compute --ignore=tests/ops --ignore=tests/deploy --ignore=tests/flyte2 \
		$(PYTEST_ARGS)

# Running flytelite as a team does (tests/ops): Prometheus scraping it, traces, JSON logs, upgrading a home
# made by an earlier release, backups. Prometheus is Debian's package (.ci/run installs it).
test-ops: $(VENV)/.dev-installed
	$(PYTEST) tests/ops $(PYTEST_ARGS)

# Tasks as pods on the project's single-node Kubernetes (started by the tests; `make k8s-build` first).
test-k8s: $(VENV)/.dev-installed
	$(PY) -m pytest -q -p no:cacheprovider tests/k8s $(PYTEST_ARGS)

# The database-dependent tests again, on a PostgreSQL cluster the tests start (Debian's postgresql package).
PG_TEST_DIRS ?= tests/store tests/server tests/propeller/test_leases.py tests/admin tests/catalog tests/scheduler tests/console tests/e2e \
	tests/fuzz tests/auth/test_openid.py
# What the database does not touch (warm workers, flytekit fidelity, a one-minute schedule's wait, the engine's
# memory over 20,000 nodes, the console's rendering of a real run) runs once, on SQLite, to keep CI within its budget.
PG_SKIP ?= --ignore=tests/e2e/test_warm_vs_cold.py --ignore=tests/e2e/test_warm_environment.py \
	--ignore=tests/e2e/test_fidelity.py --deselect tests/scheduler/test_schedule_e2e.py::test_fixed_rate_while_active \
	--deselect tests/e2e/test_sleep.py::test_twenty_thousand_leaves_in_one_dynamic_workflow_finish_in_bounded_memory \
	--ignore=tests/e2e/test_console_nodes.py
test-postgres: $(VENV)/.dev-installed
	$(PYTEST) --db=postgresql $(PG_TEST_DIRS) $(PG_SKIP) $(PYTEST_ARGS)

# The end-to-end smoke tests with the oldest supported flytekit (pyproject.toml [tool.flytelite]) as client and
# task runtime, from a virtualenv of its own beside the project's.
OLDEST_VENV ?= .venv-oldest
OLDEST_FLYTEKIT = $(shell $(PYTHON) -c "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb'))['tool']['flytelite']['oldest-flytekit'])")
$(OLDEST_VENV)/.installed: pyproject.toml
	test -x $(OLDEST_VENV)/bin/python || $(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install -q "flytekit==$(OLDEST_FLYTEKIT)"
	touch $@

test-oldest: $(VENV)/.dev-installed $(OLDEST_VENV)/.installed
	FLYTELITE_OLDEST_PYTHON=$(abspath $(OLDEST_VENV))/bin/python $(PY) -m pytest -q -p no:cacheprovider tests/oldest $(PYTEST_ARGS)

# The compute plugins on the real engines (tests/compute): a task environment of its own with flytekit's Spark,
# Ray, Dask and PyTorch plugins at the flytekit release pyproject.toml pins, and the engines they bring (pyspark,
# ray[default], dask[distributed]) and torch's CPU build; Spark also needs a Java runtime on the machine, MPI
# Open MPI's mpirun. The venv lives outside the clone, named by what it is built from (a clean clone reuses it;
# building it takes a minute or two), and only the newest is kept. The tests of the compute task types on
# Kubernetes (test_on_kubernetes.py) start the project's test cluster (`make k8s-build`).
VENV_CACHE ?= $(HOME)/.cache/flytelite-venvs
FLYTEKIT_VERSION = $(shell $(PYTHON) -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print(next(d.split('==')[1] for d in deps if d.startswith('flytekit==')))")
COMPUTE_PLUGINS = spark ray dask kfpytorch kfmpi
# torch's CPU build (the release pip finds on these machines without a download of several GB).
COMPUTE_TORCH ?= torch==2.13.0
COMPUTE_KEY = $(shell echo "$$($(PYTHON) -V) $(FLYTEKIT_VERSION) $(COMPUTE_PLUGINS) $(COMPUTE_TORCH)" | sha256sum | cut -c1-12)
COMPUTE_VENV ?= $(VENV_CACHE)/compute-$(COMPUTE_KEY)
$(COMPUTE_VENV)/.installed:
	find $(VENV_CACHE) -mindepth 1 -maxdepth 1 -name 'compute-*' ! -path '$(COMPUTE_VENV)' -exec rm -rf {} + 2>/dev/null || true
	rm -rf $(COMPUTE_VENV)
	$(PYTHON) -m venv $(COMPUTE_VENV)
	$(COMPUTE_VENV)/bin/python -m pip install -q --upgrade pip setuptools wheel
	$(COMPUTE_VENV)/bin/python -m pip install -q "flytekit==$(FLYTEKIT_VERSION)" \
		$(foreach p,$(COMPUTE_PLUGINS),"flytekitplugins-$(p)==$(FLYTEKIT_VERSION)") "$(COMPUTE_TORCH)"
	touch $@

test-compute: $(VENV)/.dev-installed $(COMPUTE_VENV)/.installed
	FLYTELITE_COMPUTE_PYTHON=$(abspath $(COMPUTE_VENV))/bin/python $(PY) -m pytest -q -p no:cacheprovider tests/compute $(PYTEST_ARGS)

# Flyte 2 (tests/flyte2): the `flyte` SDK at the release pyproject.toml names ([tool.flytelite] flyte-sdk), in a
# virtualenv of its own outside the clone, kept as the compute one is: the tests' client and their tasks' runtime.
FLYTE_SDK = $(shell $(PYTHON) -c "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb'))['tool']['flytelite']['flyte-sdk'])")
FLYTE2_KEY = $(shell echo "$$($(PYTHON) -V) $(FLYTE_SDK)" | sha256sum | cut -c1-12)
FLYTE2_VENV ?= $(VENV_CACHE)/flyte2-$(FLYTE2_KEY)
$(FLYTE2_VENV)/.installed:
	find $(VENV_CACHE) -mindepth 1 -maxdepth 1 -name 'flyte2-*' ! -path '$(FLYTE2_VENV)' -exec rm -rf {} + 2>/dev/null || true
	rm -rf $(FLYTE2_VENV)
	$(PYTHON) -m venv $(FLYTE2_VENV)
	$(FLYTE2_VENV)/bin/python -m pip install -q --upgrade pip
	$(FLYTE2_VENV)/bin/python -m pip install -q "flyte==$(FLYTE_SDK)"
	touch $@

# Then runs of each shape, the faults and the cache again on PostgreSQL (a cluster the tests start, as for
# make test-postgres).
test-flyte2: $(VENV)/.dev-installed $(FLYTE2_VENV)/.installed
	FLYTELITE_FLYTE2_PYTHON=$(abspath $(FLYTE2_VENV))/bin/python $(PY) -m pytest -q -p no:cacheprovider tests/flyte2 $(PYTEST_ARGS)
	FLYTELITE_FLYTE2_PYTHON=$(abspath $(FLYTE2_VENV))/bin/python $(PY) -m pytest -q -p no:cacheprovider --db=postgresql \
		tests/flyte2/test_runs.py::test_remote_run_equals_the_local_run tests/flyte2/test_faults.py \
		tests/flyte2/test_cache.py $(PYTEST_ARGS)

# ruff, then mypy over flytelite/ (its settings and per-module exceptions: pyproject.toml [tool.mypy]), then
# the documentation site's strict build.
lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check benchmarks flytelite tests scripts/docs
	$(VENV)/bin/mypy flytelite
	$(MAKE) --no-print-directory docs-build

# The documentation site (mkdocs.yml, docs/; the configuration reference is generated from flytelite/config at
# each build by scripts/docs/config_reference.py). `make docs` serves it on localhost:8000 and rebuilds it on
# every change; `make docs-build` writes it to site/ and fails on any warning (a broken link or anchor).
# (NO_MKDOCS_2_WARNING: the theme's notice about its future, printed on every build otherwise.)
MKDOCS = NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs
docs: $(VENV)/.dev-installed
	$(MKDOCS) serve $(DOCS_ARGS)

docs-build: $(VENV)/.dev-installed
	$(MKDOCS) build --strict --site-dir site

bench: $(VENV)/.dev-installed
	$(PY) -m benchmarks.run $(BENCH_ARGS)

# The Kubernetes test cluster's binaries (tests/k8s skip without them): built once from Debian's source
# package into $${FLYTELITE_K8S_CACHE:-~/.cache/flytelite-k8s}; a later run finds them and does nothing.
k8s-build:
	scripts/k8s/build.sh

# A wheel of flytelite in dist/, for machines whose package index does not have it.
dist: $(VENV)/.installed
	$(PIP) wheel -q --no-deps -w dist .

# flytelite's OCI images in dist/images (docs/image.md): the server and the default task image, from Debian's
# packages (mmdebstrap) and this checkout's wheels, no Docker. The slow parts are cached in
# $${FLYTELITE_IMAGE_CACHE:-~/.cache/flytelite-image}; IMAGE_ARGS=--no-cache builds them again.
image: $(VENV)/.installed
	BUILD_PYTHON=$(abspath $(PY)) scripts/image/build.sh $(IMAGE_ARGS)

# Deploying (tests/deploy): the images (a build from a fresh root filesystem gives the same digests, skopeo reads
# them, the server and the task helpers run from them), then the manifests of deploy/kubernetes applied on the
# project's test cluster (`make k8s-build`). Needs root, mmdebstrap and skopeo.
test-deploy: $(VENV)/.dev-installed image
	$(PY) -m pytest -q -p no:cacheprovider tests/deploy $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(OLDEST_VENV) $(COMPUTE_VENV) build dist site *.egg-info .mypy_cache

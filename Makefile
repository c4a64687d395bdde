# burstlake — `make demo` and `make test` (the fast default; `make test-all` runs everything, as CI
# does). Each builds .venv from nothing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
LAKE   ?= lake

export GX_ANALYTICS_ENABLED := false
export PYSPARK_PYTHON := $(abspath $(BIN)/python)

.PHONY: venv browser peers demo test test-all bench lint airflow clean

# pip's and setuptools' chatter goes to .venv/install.log; it is shown only if the install fails.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@echo "installing burstlake and its dependencies into $(VENV) (log: $(VENV)/install.log)"
	@{ $(BIN)/python -m pip install --upgrade pip && \
	   $(BIN)/python -m pip install -e '.[dev]'; } > $(VENV)/install.log 2>&1 || \
	 { tail -n 40 $(VENV)/install.log; exit 1; }
	touch $(STAMP)

venv: $(STAMP)

# The report test (in test-all) opens the HTML report in Debian's headless Chromium (never a
# downloaded browser). Installed here when missing and we are root (CI, a fresh dev machine);
# otherwise that one test is skipped with its reason.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium chromium-driver >/dev/null; } || \
	    echo "make: chromium not installed; the browser test of the report will be skipped"; }

# The Zabbix-database tests (in test-all) run a real PostgreSQL server on loopback with Zabbix's
# own schema (Debian's postgresql and zabbix-server-pgsql); the flow engine's agreement test
# drives SimGrid (Debian's python3-simgrid). Installed here when missing and we are root (CI, a
# fresh dev machine); otherwise those tests are skipped with their reason.
peers:
	@{ ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && \
	   [ -f /usr/share/zabbix-server-pgsql/schema.sql.gz ] && \
	   /usr/bin/python3 -c "import simgrid" 2>/dev/null; } || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends postgresql zabbix-server-pgsql python3-simgrid >/dev/null; } || \
	    echo "make: PostgreSQL, Zabbix's schema or SimGrid not installed; their tests will be skipped"; }

demo: venv
	$(BIN)/burstlake demo --lake $(LAKE)

# The fast default: every module's unit and hand-derived tests, one small real-Spark and one
# DuckDB test; the tests marked slow (pyproject.toml, [tool.pytest.ini_options]) are left out.
test: venv
	$(BIN)/python -m pytest -q -m "not slow"

# Everything, as CI runs it: adds Airflow's scheduler, the Spark standalone cluster, Chromium,
# kill tests, the wheel install, the notebooks and the other slow tests.
test-all: venv browser peers
	$(BIN)/python -m pytest -q

bench: venv
	$(BIN)/python -m bench

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

airflow: venv
	. infra/airflow.env && $(BIN)/airflow standalone

clean:
	rm -rf $(VENV) $(LAKE)

# wirepool — the two commands are `make run` and `make test` (see README.md).
# Every target installs what it needs first: exactly the missing Debian
# packages (with sudo when not root), quiet when nothing is missing.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

PRESET ?= release
BUILD := build/$(PRESET)
WERROR ?= 0
CONFIG ?= deploy/wirepool.yaml
# Seconds of libFuzzer per target inside `make test`.
FUZZ_SECONDS ?= 15
# `make test` runs every suite a second time on an AddressSanitizer+UBSan build.
ASAN ?= 1
JOBS ?= $(shell nproc)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# What building and running need.
BUILD_PKGS := cmake ninja-build g++ pkg-config libboost1.81-dev libssl-dev libspdlog-dev \
  libfmt-dev libyaml-cpp-dev libsqlite3-dev libpq-dev default-libmysqlclient-dev unixodbc-dev \
  libgtest-dev libgmock-dev libsystemd-dev libunistring-dev
# What the tests add: real clients, real servers, the fuzzer's compiler.
# (pgbench ships in postgresql-15, the server package.)
TEST_PKGS := clang-14 libclang-rt-14-dev clang-format postgresql-client-15 postgresql-15 \
  python3-psycopg2 python3-psycopg python3-asyncpg python3-sqlalchemy libpostgresql-jdbc-java \
  procps mariadb-server mariadb-client odbc-postgresql odbc-mariadb libsqliteodbc freetds-bin \
  python3-tds pgbouncer prometheus
# What `make bench` adds: gnuplot for the charts of docs/performance.md.
BENCH_PKGS := gnuplot-nox
# `make bench QUICK=1`: the short run (under 10 minutes).
QUICK ?= 0
# Commands that may come from elsewhere than Debian (NodeSource's nodejs bundles npm):
# the Debian package is installed only when the command is missing.
TEST_CMDS := node:nodejs npm:npm javac:openjdk-17-jdk-headless

define install_missing
	missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	for pair in $(2); do \
	  command -v "$${pair%%:*}" >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

.PHONY: deps test-deps configure build run test test-asan unit fuzz bench soak clean format format-check

deps:
	@$(call install_missing,$(BUILD_PKGS),)

test-deps: deps
	@$(call install_missing,$(TEST_PKGS),$(TEST_CMDS))

configure: deps
	@cmake --preset $(PRESET) -DWIREPOOL_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS) --target wirepool
	@ln -sf $(PRESET)/wirepool build/wirepool

run: build
	exec build/wirepool --config $(CONFIG)

# npm packages for the end-to-end clients, cached in the build tree.
build/npm/.installed: tests/e2e/node/package.json tests/e2e/node/package-lock.json
	@mkdir -p build/npm
	@cp tests/e2e/node/package.json tests/e2e/node/package-lock.json build/npm/
	@cd build/npm && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@touch $@

test: test-deps configure build/npm/.installed format-check
	@cmake --build --preset $(PRESET) -j $(JOBS)
	@ln -sf $(PRESET)/wirepool build/wirepool
	@$(MAKE) --no-print-directory fuzz
	cd $(BUILD) && ctest --output-on-failure --timeout 900 $(CTEST_ARGS)
	@if [ "$(ASAN)" = 1 ]; then $(MAKE) --no-print-directory test-asan; fi

# The same suites against an address+undefined-behaviour sanitizer build: a
# memory error or UB anywhere (including in wirepool under the e2e clients,
# whose harness fails on a sanitizer report in the log) fails the run.
test-asan: test-deps build/npm/.installed
	@cmake --preset asan -DWIREPOOL_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF) >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	cd build/asan && ctest --output-on-failure --timeout 900 $(CTEST_ARGS)

# wirepool side by side with PgBouncer, direct connections and the raw C APIs:
# results in bench/results/, then docs/performance.md regenerated from them.
bench: test-deps configure
	@$(call install_missing,$(BENCH_PKGS),)
	@cmake --build --preset $(PRESET) -j $(JOBS)
	@ln -sf $(PRESET)/wirepool build/wirepool
	WIREPOOL_BIN=$(CURDIR)/$(BUILD)/wirepool /usr/bin/python3 bench/run.py $(if $(filter 1,$(QUICK)),--quick,)
	/usr/bin/python3 bench/report.py

# Memory under connection churn (docs/testing.md): SOAK_CONNECTIONS
# connect/login/query/disconnect cycles as fast as 4 churners go, with 16
# pgbench -S clients busy on a pool of 10; fails when wirepool's RSS grows by
# more than SOAK_MAX_GROWTH_KIB after warm-up. The result: build/soak.json.
SOAK_CONNECTIONS ?= 100000
SOAK_MAX_GROWTH_KIB ?= 2048
soak: test-deps build
	/usr/bin/python3 bench/soak.py --connections $(SOAK_CONNECTIONS) --rate 0 --churners 4 \
	  --busy-clients 16 --pool 10 --max-growth-kib $(SOAK_MAX_GROWTH_KIB) \
	  --binary $(CURDIR)/$(BUILD)/wirepool | tee build/soak.json
	cd $(BUILD) && STRESS_CLIENTS=80 STRESS_OPS=40 STRESS_SEEDS=1,2,3 \
	  ctest --output-on-failure -R conformance_stress

unit: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -L unit

# libFuzzer targets (clang), built apart from the main build; a short run each.
fuzz: test-deps
	@if [ ! -f build/fuzz/build.ninja ]; then cmake --preset fuzz >/dev/null; fi
	@cmake --build --preset fuzz -j $(JOBS)
	@for t in build/fuzz/fuzz_*; do \
	  [ -x "$$t" ] && [ -f "$$t" ] || continue; \
	  name=$$(basename $$t); corpus=tests/fuzz/corpus/$${name#fuzz_}; work=build/fuzz/corpus-$${name#fuzz_}; \
	  mkdir -p $$work; \
	  echo "fuzzing $$name for $(FUZZ_SECONDS)s"; \
	  $$t -max_total_time=$(FUZZ_SECONDS) $$work $$corpus >build/fuzz/$$name.out 2>&1 \
	    || { tail -40 build/fuzz/$$name.out; exit 1; }; \
	  grep -E "^Done" build/fuzz/$$name.out | tail -1 || true; \
	done

format:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

format-check:
	@command -v clang-format >/dev/null || { $(call install_missing,clang-format,); }
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run -Werror

clean:
	rm -rf build

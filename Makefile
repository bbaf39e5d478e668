# fixed_window: fixed-window rate limits inside PostgreSQL (PGXS build)

EXTENSION = fixed_window fixed_window_proxy fixed_window_sql
MODULE_big = fixed_window
# The tree's top, as PGXS finds it once included (srcdir): the sources and
# scripts are listed from there, so that a build in another directory
# (make -f TREE/Makefile) finds them too.
fw_top := $(dir $(firstword $(MAKEFILE_LIST)))
OBJS = $(patsubst $(fw_top)%.c,%.o,$(wildcard $(fw_top)src/*.c))
# The install and update scripts, committed as released and never built
# (scripts/released.sha256 holds them frozen).  CREATE EXTENSION fixed_window
# runs fixed_window--1.0.sql and then the updates in order, as an update does;
# the router has an install script of 1.3 of its own, since a new router
# routes by jump where one updated from 1.2 keeps the modulo.
DATA = $(notdir $(wildcard $(fw_top)fixed_window--*.sql $(fw_top)fixed_window_proxy--*.sql))
# The SQL edition (fixed_window_sql, trusted, no C): its install script is
# built from src/sql_edition/*.sql, concatenated in file-name order by
# scripts/sql_edition.sh, which also writes (make sql-edition, which needs no
# PostgreSQL headers) the plain script for psql -f and pg_tle's install script.
fw_sql_version := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(fw_top)fixed_window_sql.control)
fw_sql_sources = $(sort $(wildcard $(fw_top)src/sql_edition/*.sql))
DATA_built = fixed_window_sql--$(fw_sql_version).sql
PGFILEDESC = "fixed_window - fixed-window rate limits and quotas"

# The test suites, in PGXS's places: sql/, expected/ and specs/; TAP in
# test/t.  Their order matters: shared memory outlives each test.  Each runs
# two ways: "make test" runs test-* on throwaway clusters of its own; "make
# installcheck" runs installcheck-* against the server that PGHOST and PGPORT
# name, as packagers' tools do.
REGRESS = fw_api fw_seeds fw_windows fw_errors fw_overflow fw_clock fw_admin fw_hardening \
	fw_policy_define fw_policy_calls fw_policy_overrides fw_policy_counters fw_policy_privileges fw_http \
	fw_security fw_definitions fw_retry fw_schema fw_upgrade fw_capacity fw_metrics
REGRESS_TABLE = fw_table fw_table_stats
ISOLATION = fw_concurrent fw_policy_change fw_stats_pending
ISOLATION_TABLE = fw_table_concurrent fw_table_maintenance fw_drop_extension fw_policy_concurrent \
	fw_policy_change fw_table_invalidation fw_definition_races
TAP_TESTS = 1
PROVE_TESTS = $(srcdir)/test/t/*.pl
TAP_DSM = 001_concurrent_load.pl 003_standby.pl 004_full_memory.pl 005_restart.pl 006_property.pl \
	007_window_boundaries.pl 008_databases.pl 010_policy_atomicity.pl 011_policy_dump.pl \
	014_admin_under_load.pl 017_growth.pl 018_aged_chains.pl 020_transitions.pl
TAP_SQL = 006_property.pl
NO_INSTALLCHECK = 1
EXTRA_CLEAN = tmp_check_* output_dsm output_table output_iso_dsm output_iso_table test/unit/test_window \
	output_sql output_iso_sql tmp_sql_pg tmp_sql_input_* fixed_window_sql.sql fixed_window_sql.pgtle.sql

PG_CPPFLAGS = -I$(srcdir)/src
# One call crosses a dozen small functions in several files (call, store,
# shmem_store, decide, window).  Link-time optimisation inlines them into one
# another, which it may do only if they cannot be interposed by another
# library's symbol of the same name (docs/development.md, The build).  Used
# when $(CC) builds a shared object with these flags (PGXS expands PG_CFLAGS
# once it knows $(CC), into the compile and link lines); FW_LTO=0 leaves them
# out.
FW_LTO ?= 1
FW_LTO_FLAGS = -flto=auto -fno-semantic-interposition
PG_CFLAGS = $(if $(filter 1,$(FW_LTO)),$(shell echo 'int f(void) { return 0; }' | \
	$(CC) $(FW_LTO_FLAGS) -shared -fPIC -x c - -o /dev/null 2>/dev/null && echo '$(FW_LTO_FLAGS)'))

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(wildcard $(PGXS)),)
include $(PGXS)

# Every object is rebuilt when a header of src/ changes.
$(OBJS): $(wildcard $(srcdir)/src/*.h)

# make test's suites, a target for each and each storage: test-regress and
# test-isolation on a server that preloads the library (test/preload.conf);
# -dsm on one that does not, with storage "shmem" (dynamic shared memory,
# created by the first call; test/dsm.conf); -table on one that does not,
# where storage "auto" means the table (test/table.conf).  The servers run
# with MALLOC_PERTURB_ set, so that glibc fills freed memory: a read through
# a pointer into memory already freed (a cache dropped by an invalidation,
# say) then shows as garbage instead of passing unseen.
# $(call fw_suite,SUITE,STORAGE,TESTS): SUITE is regress or isolation,
# STORAGE empty, -dsm or -table.
fw_runner.regress = $(pg_regress_installcheck) $(REGRESS_OPTS)
fw_runner.isolation = $(pg_isolation_regress_installcheck) $(ISOLATION_OPTS)
fw_output.regress = output
fw_output.isolation = output_iso
define fw_suite
test-$(1)$(2): export MALLOC_PERTURB_ = 85
test-$(1)$(2):
	$$(fw_runner.$(1)) --temp-instance=tmp_check_$(1)$(subst -,_,$(2)) \
		--temp-config=$$(srcdir)/test/$(or $(2:-%=%),preload).conf \
		$(if $(2),--outputdir=$(fw_output.$(1))$(subst -,_,$(2))) $(3)
endef
$(eval $(call fw_suite,regress,,$$(REGRESS)))
$(eval $(call fw_suite,regress,-dsm,$$(REGRESS)))
$(eval $(call fw_suite,regress,-table,$$(REGRESS) $$(REGRESS_TABLE)))
$(eval $(call fw_suite,isolation,,$$(ISOLATION)))
$(eval $(call fw_suite,isolation,-dsm,$$(ISOLATION)))
$(eval $(call fw_suite,isolation,-table,$$(ISOLATION_TABLE)))

# The SQL edition against the C extension's table-backend suites, unchanged
# and with the same expected output: on servers of a private copy of this
# PostgreSQL (tmp_sql_pg, scripts/sql_edition_copy.sh) where the extension
# fixed_window is the edition, configured as the table backend's.  Where the
# edition cannot print what the C extension prints, test/sql_edition/NAME.diff
# holds the difference and why (scripts/sql_edition_expected.sh); the tests
# left out test what only the C extension has: fw_upgrade its update scripts
# from 1.0, fw_clock the checks of a declared setting at SET (and an ordinary
# role's SET of the clock, which the edition ignores, leaves it on the real
# clock, whose answers no expected output can hold), fw_capacity shared
# memory's slots and fixed_window.max_counters.  docs/sql-edition.md ("What
# SQL cannot match") lists each.
REGRESS_SQL_EXCLUDE = fw_upgrade fw_clock fw_capacity
ISOLATION_SQL_EXCLUDE =
fw_sql_copy = $(abspath tmp_sql_pg)
# PostgreSQL 16 and later take the expected outputs from the directory
# --expecteddir names (the current one unless told), which 15's pg_regress
# does not know.
fw_expecteddir = $(if $(filter-out 14 15,$(MAJORVERSION)),--expecteddir=$(1))
define fw_sql_suite
test-$(1)-sql: export MALLOC_PERTURB_ = 85
test-$(1)-sql:
	bash $$(srcdir)/scripts/sql_edition_copy.sh '$$(PG_CONFIG)' $(fw_sql_copy) >/dev/null
	bash $$(srcdir)/scripts/sql_edition_expected.sh tmp_sql_input_$(1)
	$$(fw_runner.$(1)) --inputdir=tmp_sql_input_$(1) $$(call fw_expecteddir,tmp_sql_input_$(1)) --bindir='$(fw_sql_copy)$$(bindir)' --temp-instance=tmp_check_$(1)_sql \
		--temp-config=$$(srcdir)/test/table.conf --outputdir=$(fw_output.$(1))_sql $(2)
endef
$(eval $(call fw_sql_suite,regress,$$(filter-out $$(REGRESS_SQL_EXCLUDE),$$(REGRESS) $$(REGRESS_TABLE))))
$(eval $(call fw_sql_suite,isolation,$$(filter-out $$(ISOLATION_SQL_EXCLUDE),$$(ISOLATION_TABLE))))

# TAP tests start clusters of their own either way, from the installed
# files: not from files staged in DESTDIR (a package build), and not as root.
# test-tap-dsm runs the shared-memory suites again, their servers not
# preloading the library (test/t/FwTest.pm).
# test-tap-sql runs the property test against the SQL edition
# (fixed_window_sql, FW_EDITION=sql in test/t/FwTest.pm).
test-tap test-tap-dsm test-tap-sql: export MALLOC_PERTURB_ = 85
test-tap-dsm: export FW_SHMEM = dynamic
test-tap-dsm: PROVE_TESTS = $(addprefix $(srcdir)/test/t/,$(TAP_DSM))
test-tap-sql: export FW_EDITION = sql
test-tap-sql: PROVE_TESTS = $(addprefix $(srcdir)/test/t/,$(TAP_SQL))
test-tap test-tap-dsm test-tap-sql:
	$(prove_installcheck)
ifneq ($(DESTDIR),)
installcheck-tap:
	@echo "installcheck-tap: skipped, the TAP tests need fixed_window installed, not staged in DESTDIR"
else
installcheck-tap:
	@if [ "$$(id -u)" -eq 0 ]; then echo "installcheck-tap: skipped, PostgreSQL's TAP tests cannot run as root"; \
	else $(prove_installcheck); fi
endif
# examples/monitoring: the alert rules' unit tests (promtool), then the
# metrics end to end through postgres_exporter and Prometheus (TAP).
test-monitoring: PROVE_TESTS = $(srcdir)/test/monitoring/*.pl
test-monitoring:
	promtool check config $(srcdir)/examples/monitoring/prometheus.yml
	cd $(srcdir)/examples/monitoring && promtool test rules alerts_test.yml
	$(prove_installcheck)
# The Node.js package clients/node (fixed-window-pg): packed, type-checked,
# and its tests in Express, Fastify and rate-limiter-flexible against a
# throwaway cluster and PgBouncer.
test-node:
	bash $(srcdir)/clients/node/test.sh
# The example HTTP service (Node.js, from npm) against a throwaway cluster.
test-service:
	bash $(srcdir)/examples/service/test.sh
# PgBouncer in transaction mode in front of fw_limit and of the example
# service (test/pgbouncer/NNN_*.sh, each on clusters of its own).
test-pgbouncer:
	bash $(srcdir)/test/pgbouncer/run.sh
# The Debian package: built with dpkg-buildpackage, installed, called (as root).
test-deb:
	bash $(srcdir)/scripts/deb_test.sh

# The suites against a running server, as packagers' tools run them.  Each
# runs in a database made for it (scripts/regress_db.sh) whose calls keep
# counters where the suite wants them: in shared memory (on a server that
# does not preload the library, dynamic shared memory, created by the first
# call), or in the table.  So they run on any server.
# The suites share their databases, so they run one after another, also
# under make -j (trixie's dpkg-buildpackage runs make in parallel).
installcheck:
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) installcheck-regress
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) installcheck-regress-table
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) installcheck-isolation
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) installcheck-isolation-table
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) installcheck-tap
regress_db = bash $(srcdir)/scripts/regress_db.sh '$(bindir)/psql'
installcheck-regress:
	$(regress_db) $(CONTRIB_TESTDB) shmem
	$(fw_runner.regress) --use-existing $(REGRESS)
installcheck-regress-table:
	$(regress_db) $(CONTRIB_TESTDB) table
	$(fw_runner.regress) --use-existing --outputdir=output_table $(REGRESS) $(REGRESS_TABLE)
installcheck-isolation:
	$(regress_db) $(ISOLATION_TESTDB) shmem
	$(fw_runner.isolation) --use-existing $(ISOLATION)
installcheck-isolation-table:
	$(regress_db) $(ISOLATION_TESTDB) table
	$(fw_runner.isolation) --use-existing --outputdir=output_iso_table $(ISOLATION_TABLE)

# C unit tests of the window arithmetic: no server needed.
test/unit/test_window: test/unit/test_window.c src/window.c src/window.h
	$(CC) $(CFLAGS) -DFRONTEND -I$(srcdir)/src -I$(includedir_server) \
		-I$(includedir_internal) -o $@ test/unit/test_window.c src/window.c \
		-L$(pkglibdir) -L$(libdir) -lpgcommon -lpgport
unit: test/unit/test_window
	./test/unit/test_window

# The checks of the tree (each a layer of make test): includes among src/
# files point down the layers only; every place a version lives agrees and
# released scripts are unchanged; the links between the documents resolve,
# and (as root) every block of README.md and docs/ runs as written.
check-layers:
	bash $(srcdir)/scripts/check_layers.sh
check-version:
	bash $(srcdir)/scripts/check_version.sh
check-docs:
	bash $(srcdir)/scripts/check_docs.sh
test-docs: check-docs
	FW_PG_BIN=$(bindir) python3 $(srcdir)/scripts/run_docs.py

DISTNAME = fixed_window-$(shell bash $(srcdir)/scripts/check_version.sh --semver)
# The release archive PGXN takes: the committed tree, in one directory.
dist: check-version
	git -C $(srcdir) archive --format zip --prefix=$(DISTNAME)/ -o $(abspath $(DISTNAME).zip) HEAD
	@echo "wrote $(DISTNAME).zip"
else
all:
	@echo "PostgreSQL's server headers (PGXS) are missing: run 'make test' or 'make demo', which install them."
	@false
endif

# The SQL edition's products (see DATA_built above); each is remade when a
# source, the control file or the script changes.
fw_sql_deps = $(fw_sql_sources) $(fw_top)fixed_window_sql.control $(fw_top)scripts/sql_edition.sh
fixed_window_sql--$(fw_sql_version).sql: $(fw_sql_deps)
	bash $(fw_top)scripts/sql_edition.sh extension $@
fixed_window_sql.sql: $(fw_sql_deps)
	bash $(fw_top)scripts/sql_edition.sh plain $@
fixed_window_sql.pgtle.sql: $(fw_sql_deps)
	bash $(fw_top)scripts/sql_edition.sh pgtle $@
sql-edition: fixed_window_sql.sql fixed_window_sql.pgtle.sql

.PHONY: test demo bench bench-versions unit check-layers check-version check-docs test-docs dist installcheck \
	test-regress test-regress-dsm test-regress-table test-isolation test-isolation-dsm \
	test-isolation-table test-regress-sql test-isolation-sql test-tap test-tap-dsm test-tap-sql test-monitoring sql-edition test-node test-service test-pgbouncer test-deb \
	installcheck-regress installcheck-regress-table installcheck-isolation \
	installcheck-isolation-table installcheck-tap

# The quick-start commands set up whatever is missing, then run.
test:
	bash scripts/test.sh
demo:
	bash scripts/demo.sh
bench:
	bash bench/run.sh
	bash bench/versions.sh
bench-versions:
	bash bench/versions.sh

# fixed_window: fixed-window rate limits inside PostgreSQL (PGXS build)

EXTENSION = fixed_window fixed_window_proxy
MODULE_big = fixed_window
OBJS = \
	src/admin.o \
	src/call.o \
	src/capacity.o \
	src/catalog.o \
	src/decide.o \
	src/define.o \
	src/fixed_window.o \
	src/identity.o \
	src/keeper.o \
	src/limit.o \
	src/placeholder.o \
	src/policy.o \
	src/segment.o \
	src/settings.o \
	src/shmem_store.o \
	src/stats.o \
	src/subxact.o \
	src/store.o \
	src/table_store.o \
	src/trigger.o \
	src/validate.o \
	src/window.o
# A fresh install of the current version runs the same scripts an update
# does, in order: sql/fixed_window--$(EXTVERSION).sql is built from them,
# and so is the router's, which then runs what only a new router does
# (sql/fixed_window_proxy_fresh.sql: it routes by jump, where one updated
# from 1.2 keeps the modulo).  Update scripts of both extensions that end with
# the HTTP functions they share are built from a .sql.in and that text.
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(srcdir)/fixed_window.control)
PROXYVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(srcdir)/fixed_window_proxy.control)
UPGRADES = sql/fixed_window--1.0--1.0.1.sql sql/fixed_window--1.0.1--1.1.sql \
	sql/fixed_window--1.1--1.2.sql sql/fixed_window--1.2--1.2.1.sql sql/fixed_window--1.2.1--1.3.sql \
	sql/fixed_window--1.3--1.4.sql sql/fixed_window--1.4--1.5.sql \
	sql/fixed_window--1.5--1.6.sql
PROXY_UPGRADES = sql/fixed_window_proxy--1.0--1.1.sql sql/fixed_window_proxy--1.1--1.2.sql \
	sql/fixed_window_proxy--1.2--1.3.sql
UPGRADES_built = sql/fixed_window--1.2.1--1.3.sql sql/fixed_window_proxy--1.0--1.1.sql
DATA = sql/fixed_window--1.0.sql sql/fixed_window_proxy--1.0.sql \
	$(filter-out $(UPGRADES_built), $(UPGRADES) $(PROXY_UPGRADES))
DATA_built = sql/fixed_window--$(EXTVERSION).sql sql/fixed_window_proxy--$(PROXYVERSION).sql \
	$(UPGRADES_built)
PGFILEDESC = "fixed_window - fixed-window rate limits and quotas"

# The test suites.  Each runs two ways: "make test" runs test-* on throwaway
# clusters of its own; "make installcheck" runs installcheck-* against the
# server that PGHOST and PGPORT name, as packagers' tools do.
REGRESS = fw_api fw_seeds fw_windows fw_errors fw_overflow fw_clock fw_admin fw_hardening fw_policy fw_http \
	fw_security fw_definitions fw_retry fw_schema fw_upgrade fw_capacity fw_metrics
REGRESS_TABLE = fw_table fw_table_stats
ISOLATION = fw_concurrent fw_policy_change fw_stats_pending
ISOLATION_TABLE = fw_table_concurrent fw_table_maintenance fw_drop_extension fw_policy_concurrent \
	fw_policy_change fw_table_invalidation fw_definition_races
TAP_TESTS = 1
TAP_DSM = 001_concurrent_load.pl 003_standby.pl 004_full_memory.pl 005_restart.pl 006_property.pl \
	007_window_boundaries.pl 008_databases.pl 010_policy_atomicity.pl 011_policy_dump.pl \
	014_admin_under_load.pl 017_growth.pl 018_aged_chains.pl 020_transitions.pl
NO_INSTALLCHECK = 1
# Every test lives under test/: sql/ and expected/ for pg_regress (isolation's
# expected files too), specs/, t/ for TAP, unit/ for the C unit tests.
REGRESS_OPTS = --inputdir=$(srcdir)/test
ISOLATION_OPTS = --inputdir=$(srcdir)/test
PROVE_TESTS = $(srcdir)/test/t/*.pl
EXTRA_CLEAN = tmp_check_regress tmp_check_isolation tmp_check_regress_table \
	tmp_check_isolation_table tmp_check_regress_dsm tmp_check_isolation_dsm output_table \
	output_iso_table output_dsm output_iso_dsm test/unit/test_window

PG_CPPFLAGS = -I$(srcdir)/src
PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)

ifneq ($(wildcard $(PGXS)),)
include $(PGXS)

# One call crosses a dozen small functions in several files (call, store,
# shmem_store, decide, window).  Link-time optimisation inlines them into one
# another, which it may do only if they cannot be interposed by another
# library's symbol of the same name (docs/development.md, The build).  Used
# when $(CC) builds a shared object with these flags; FW_LTO=0 leaves them
# out.
FW_LTO ?= 1
FW_LTO_FLAGS = -flto=auto -fno-semantic-interposition
ifeq ($(FW_LTO),1)
ifeq ($(shell echo 'int f(void) { return 0; }' | $(CC) $(FW_LTO_FLAGS) -shared -fPIC -x c - -o /dev/null 2>/dev/null && echo yes),yes)
override CFLAGS += $(FW_LTO_FLAGS)
endif
endif

sql/fixed_window--$(EXTVERSION).sql: sql/fixed_window--1.0.sql $(UPGRADES)
	{ echo "/* fixed_window--$(EXTVERSION).sql: built by make from $(notdir $^) */"; \
	  for f in $^; do echo; echo "-- from $$(basename $$f)"; cat $$f; done; } > $@
sql/fixed_window_proxy--$(PROXYVERSION).sql: sql/fixed_window_proxy--1.0.sql $(PROXY_UPGRADES) \
		sql/fixed_window_proxy_fresh.sql
	{ echo "/* fixed_window_proxy--$(PROXYVERSION).sql: built by make from $(notdir $^) */"; \
	  for f in $^; do echo; echo "-- from $$(basename $$f)"; cat $$f; done; } > $@
# The most windows a policy has follows the C code's FW_MAX_WINDOWS.
FW_MAX_WINDOWS = $(shell sed -n 's/^\#define FW_MAX_WINDOWS[[:space:]]*\([0-9]*\).*/\1/p' $(srcdir)/src/window.h)
sql/fixed_window--1.2.1--1.3.sql: sql/fixed_window--1.2.1--1.3.sql.in sql/fw_http--1.3.sql.in src/window.h
	cat $(filter %.in,$^) | sed 's/@FW_MAX_WINDOWS@/$(FW_MAX_WINDOWS)/g' > $@
sql/fixed_window_proxy--1.0--1.1.sql: sql/fixed_window_proxy--1.0--1.1.sql.in sql/fw_http--1.3.sql.in
	cat $^ > $@

# Every object is rebuilt when a header of src/ changes.
$(OBJS): $(wildcard $(srcdir)/src/*.h)


# The suites on throwaway clusters (make test): shared memory on a server
# that preloads the library; the same suites again on one that does not,
# with storage "shmem" (dynamic shared memory, created by the first call);
# the table on one that does not, where storage "auto" means the table, plus
# what only the table backend does.  Their
# servers run with MALLOC_PERTURB_ set, so that glibc fills freed memory: a
# read through a pointer into memory already freed (a cache dropped by an
# invalidation, say) then shows as garbage instead of passing unseen.
test-regress test-regress-table test-regress-dsm test-isolation test-isolation-table \
	test-isolation-dsm test-tap test-tap-dsm: export MALLOC_PERTURB_ = 85
PRELOADED = --temp-config=$(srcdir)/test/preload.conf
NOT_PRELOADED = --temp-config=$(srcdir)/test/table.conf
DYNAMIC = --temp-config=$(srcdir)/test/dsm.conf
test-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --temp-instance=tmp_check_regress \
		$(PRELOADED) $(REGRESS)
test-regress-dsm:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --temp-instance=tmp_check_regress_dsm \
		$(DYNAMIC) --outputdir=output_dsm $(REGRESS)
test-regress-table:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --temp-instance=tmp_check_regress_table \
		$(NOT_PRELOADED) --outputdir=output_table $(REGRESS) $(REGRESS_TABLE)
test-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --temp-instance=tmp_check_isolation \
		$(PRELOADED) $(ISOLATION)
test-isolation-table:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --temp-instance=tmp_check_isolation_table \
		$(NOT_PRELOADED) --outputdir=output_iso_table $(ISOLATION_TABLE)
test-isolation-dsm:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --temp-instance=tmp_check_isolation_dsm \
		$(DYNAMIC) --outputdir=output_iso_dsm $(ISOLATION)
# TAP tests start clusters of their own either way, from the installed
# files: not from files staged in DESTDIR (a package build), and not as root.
test-tap:
	$(prove_installcheck)
# The shared-memory TAP suites again, their servers not preloading the
# library and keeping counters in dynamic shared memory (test/t/shmem.inc).
test-tap-dsm: export FW_SHMEM = dynamic
test-tap-dsm: PROVE_TESTS = $(addprefix $(srcdir)/test/t/,$(TAP_DSM))
test-tap-dsm:
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
	$(pg_regress_installcheck) $(REGRESS_OPTS) --use-existing $(REGRESS)
installcheck-isolation:
	$(regress_db) $(ISOLATION_TESTDB) shmem
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --use-existing $(ISOLATION)
installcheck-regress-table:
	$(regress_db) $(CONTRIB_TESTDB) table
	$(pg_regress_installcheck) $(REGRESS_OPTS) --use-existing \
		--outputdir=output_table $(REGRESS) $(REGRESS_TABLE)
installcheck-isolation-table:
	$(regress_db) $(ISOLATION_TESTDB) table
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --use-existing \
		--outputdir=output_iso_table $(ISOLATION_TABLE)

# C unit tests of the window arithmetic: no server needed.
test/unit/test_window: test/unit/test_window.c src/window.c src/window.h
	$(CC) $(CFLAGS) -DFRONTEND -I$(srcdir)/src -I$(includedir_server) \
		-I$(includedir_internal) -o $@ test/unit/test_window.c src/window.c \
		-L$(pkglibdir) -L$(libdir) -lpgcommon -lpgport
unit: test/unit/test_window
	./test/unit/test_window

# Includes among src/ files point down the layers only.
check-layers:
	bash $(srcdir)/scripts/check_layers.sh

# The version lives in the control files; META.json (PGXN) must agree.
check-version:
	bash $(srcdir)/scripts/check_version.sh

# Every block of README.md and docs/ runs as written (as root).
test-docs: check-docs
	FW_PG_BIN=$(bindir) python3 $(srcdir)/scripts/run_docs.py

# The links between the documents resolve.
check-docs:
	bash $(srcdir)/scripts/check_docs.sh

DISTNAME = fixed_window-$(shell bash $(srcdir)/scripts/check_version.sh --semver)
# The release archive PGXN takes: the committed tree, in one directory,
# with the install scripts make builds (META.json names them).
dist: check-version $(DATA_built)
	git -C $(srcdir) archive --format zip --prefix=$(DISTNAME)/sql/ \
		$(foreach f,$(DATA_built),--add-file=$(abspath $(f))) --prefix=$(DISTNAME)/ \
		-o $(abspath $(DISTNAME).zip) HEAD
	@echo "wrote $(DISTNAME).zip"
else
all:
	@echo "PostgreSQL's server headers (PGXS) are missing: run 'make test' or 'make demo', which install them."
	@false
endif

.PHONY: test demo bench bench-versions unit check-layers check-version check-docs test-docs dist installcheck \
	test-regress test-regress-table test-isolation test-isolation-table test-tap test-monitoring test-service test-pgbouncer test-deb \
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

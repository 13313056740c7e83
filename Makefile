# gpuidx: compressed posting lists, a GPU-ready text index and a GPU worker for
# PostgreSQL.  `make` builds the extension (and the CUDA engine when nvcc is
# found, see Makefile.cuda), `make install`, `make installcheck` (pg_regress
# and the isolation specs), `make prove-tap` (TAP),
# `make unit` (C unit tests, no PostgreSQL), `make prove` (pgTAP).

EXTENSION = gpuidx
MODULE_big = gpuidx
# The extension's scripts: each released version's install script, frozen
# (sql/gpuidx--0.1.sql), the version being made (default_version in
# gpuidx.control: sql/gpuidx--0.2.sql) and the updates between them
# (sql/gpuidx--0.1--0.2.sql).  Every change of the SQL objects goes into the
# install script and the update script to it; t/023_extension_update.pl
# fails when ALTER EXTENSION gpuidx UPDATE does not make what CREATE
# EXTENSION makes (docs/RELIABILITY.md, "Extension versions").
DATA = $(wildcard sql/gpuidx--*.sql)

CODEC_SRCS = $(wildcard src/codec/*.c)
CPU_SRCS = $(wildcard src/cpu/*.c)
RANK_SRCS = src/rank/wand.c
ENGINE_SRCS = $(wildcard src/engine/*.c)
PG_SRCS = $(wildcard src/type/*.c) $(wildcard src/store/*.c) $(wildcard src/text/*.c) $(wildcard src/am/*.c) $(wildcard src/query/*.c) \
	$(wildcard src/sched/*.c) $(wildcard src/worker/*.c) $(wildcard src/scan/*.c) \
	$(wildcard src/*.c)
OBJS = $(patsubst %.c,%.o,$(CODEC_SRCS) $(CPU_SRCS) $(RANK_SRCS) $(ENGINE_SRCS) $(PG_SRCS))

# pg_regress: every sql/NAME.sql but the extension scripts
REGRESS = $(filter-out gpuidx--%,$(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql))))
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)
# isolation tests: every specs/NAME.spec, expected output in expected/
ISOLATION = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
ISOLATION_OPTS = --inputdir=. --load-extension=$(EXTENSION)
# sql/readme.sql is README.md's SQL (scripts/readme_sql.sh): installcheck
# first checks that the two agree
REGRESS_PREP = readme-check
# no TAP_TESTS: installcheck runs pg_regress and the isolation specs only;
# the TAP tests are `make prove-tap`
EXTRA_CLEAN = tmp_check

# Only the fmgr entry points and _PG_init leave the shared object.
PG_CPPFLAGS = -Iinclude -Isrc -DPGDLLEXPORT='__attribute__((visibility("default")))'
# -ffp-contract=off: no fused multiply-add, so BM25 scores match bit for bit
# everywhere (src/rank/bm25.h)
PG_CFLAGS = -fvisibility=hidden -std=gnu99 -ffp-contract=off $(if $(WERROR),-Werror)

EXTRA_CLEAN += test/unit/build test/gpu/build

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
# without PostgreSQL (the GPU machine) the engine, unit tests and checks still build
ifneq ($(PGXS),)
include $(PGXS)
# the bitcode that JIT may inline (PG_CFLAGS does not reach it) must not fuse either
BITCODE_CFLAGS += -ffp-contract=off
endif

# PGXS tracks no header dependencies: any header change rebuilds every object
$(OBJS): $(wildcard include/*.h src/*.h src/*/*.h)

# The engine process: a program of its own, exec'd by the GPU worker's
# supervisor (src/engine_process); no PostgreSQL code, the engines linked in
# or loaded.  Installed beside the module, where the supervisor looks.
ENGINE_PROGRAM = src/engine_process/build/gpuidx_engine
ENGINE_PROGRAM_SRCS = $(wildcard src/engine_process/*.c) $(CODEC_SRCS) $(CPU_SRCS) $(RANK_SRCS) $(ENGINE_SRCS) \
	src/store/parse.c src/store/rankdata.c
ENGINE_PROGRAM_CC ?= cc

$(ENGINE_PROGRAM): $(ENGINE_PROGRAM_SRCS) $(wildcard src/engine_process/*.h src/codec/*.h src/cpu/*.h src/rank/*.h src/engine/*.h src/store/parse.h src/store/rankdata.h src/store/varint.h include/*.h)
	@mkdir -p $(dir $@)
	$(ENGINE_PROGRAM_CC) -std=gnu99 -D_GNU_SOURCE -O2 -g -ffp-contract=off -Wall -Wextra -Wdeclaration-after-statement \
		$(if $(WERROR),-Werror) -Iinclude -Isrc -o $@ $(ENGINE_PROGRAM_SRCS) -lm -lpthread -ldl

.PHONY: engine-program install-engine-program
engine-program: $(ENGINE_PROGRAM)
# installdirs first: under make -j install the target folder may not be there yet
install-engine-program: $(ENGINE_PROGRAM) installdirs
	$(INSTALL_PROGRAM) $(ENGINE_PROGRAM) '$(DESTDIR)$(pkglibdir)/gpuidx_engine'
all: engine-program
install: install-engine-program
EXTRA_CLEAN += src/engine_process/build

# A test engine whose device starts only when told (test/worker/flaky_engine.c),
# for the worker's retries (t/019); installed for the tests only.
FLAKY_ENGINE = test/worker/build/gpuidx_flaky_engine.so
# (rebuilt when a header changes: an engine built for another ABI is refused)
$(FLAKY_ENGINE): test/worker/flaky_engine.c $(CODEC_SRCS) $(CPU_SRCS) $(RANK_SRCS) $(ENGINE_SRCS) src/store/parse.c src/store/rankdata.c \
		$(wildcard include/*.h src/codec/*.h src/cpu/*.h src/engine/*.h src/rank/*.h src/store/parse.h src/store/rankdata.h)
	@mkdir -p $(dir $@)
	$(ENGINE_PROGRAM_CC) -std=gnu99 -D_GNU_SOURCE -O2 -fPIC -shared -fvisibility=hidden -ffp-contract=off -Wall -Wextra \
		$(if $(WERROR),-Werror) -Iinclude -Isrc -o $@ $(filter %.c,$^) -lm -lpthread -ldl

.PHONY: install-test-engine
install-test-engine: $(FLAKY_ENGINE) installdirs
	$(INSTALL_SHLIB) $(FLAKY_ENGINE) '$(DESTDIR)$(pkglibdir)/gpuidx_flaky_engine.so'
EXTRA_CLEAN += test/worker/build

# the GPU engine, when nvcc is there
include Makefile.cuda
all: cuda-engine
install: install-cuda-engine
EXTRA_CLEAN += cuda/build

# what install put beside the module (the engine program, the engines): make
# uninstall takes it away with the module and the SQL scripts
.PHONY: uninstall-engines
uninstall-engines:
	rm -f '$(DESTDIR)$(pkglibdir)/gpuidx_engine' '$(DESTDIR)$(pkglibdir)/gpuidx_cuda.so' \
		'$(DESTDIR)$(pkglibdir)/gpuidx_flaky_engine.so'
uninstall: uninstall-engines

# ---------------------------------------------------------------------------
# C unit tests: codecs and CPU algorithms, built without PostgreSQL

UNIT_CC ?= cc
UNIT_CFLAGS ?= -std=gnu99 -O2 -g -ffp-contract=off -Wall -Wextra -Wdeclaration-after-statement -Werror
UNIT_TESTS = $(patsubst test/unit/%.c,%,$(wildcard test/unit/test_*.c))
UNIT_LIB_SRCS = $(CODEC_SRCS) $(CPU_SRCS) $(RANK_SRCS) $(ENGINE_SRCS) src/store/parse.c src/store/posrec.c src/store/rankdata.c src/sched/placement.c src/worker/arena.c

UNIT_HDRS = $(wildcard src/codec/*.h src/cpu/*.h src/rank/*.h src/engine/*.h src/store/parse.h src/store/posrec.h src/store/rankdata.h src/store/varint.h src/sched/*.h src/worker/arena.h include/*.h test/*.h test/unit/*.h)
# the library's sources compiled once a flavour (UNIT_SUFFIX: -asan), then linked into each test
UNIT_OBJDIR = test/unit/build/obj$(UNIT_SUFFIX)
UNIT_LIB_OBJS = $(patsubst %.c,$(UNIT_OBJDIR)/%.o,$(UNIT_LIB_SRCS))

$(UNIT_OBJDIR)/%.o: %.c $(UNIT_HDRS)
	@mkdir -p $(dir $@)
	$(UNIT_CC) $(UNIT_CFLAGS) $(UNIT_EXTRA) -Iinclude -Isrc -c -o $@ $<

unit-build-%: test/unit/%.c $(UNIT_LIB_OBJS) $(UNIT_HDRS)
	@mkdir -p test/unit/build
	$(UNIT_CC) $(UNIT_CFLAGS) $(UNIT_EXTRA) -Iinclude -Isrc -o test/unit/build/$*$(UNIT_SUFFIX) $< $(UNIT_LIB_OBJS) -lm -lpthread -ldl

.PHONY: readme-sql readme-check
readme-sql:
	bash scripts/readme_sql.sh
readme-check:
	bash scripts/readme_sql.sh --check

.PHONY: unit unit-asan prove prove-tap
unit: $(addprefix unit-build-,$(UNIT_TESTS))
	@set -e; for t in $(UNIT_TESTS); do ./test/unit/build/$$t$(UNIT_SUFFIX); done

# the same tests under AddressSanitizer and UndefinedBehaviorSanitizer
unit-asan:
	$(MAKE) unit UNIT_SUFFIX=-asan UNIT_CFLAGS="-std=gnu99 -O1 -g -ffp-contract=off -Wall -Wextra -Werror -fno-omit-frame-pointer" \
		UNIT_EXTRA="-fsanitize=address,undefined -fno-sanitize-recover=all"

# pgTAP: the API contract, against the server the environment points to
prove:
	pg_prove --ext .sql test/*.sql

# TAP tests alone (t/*.pl, PostgreSQL::Test::Cluster; must not run as root)
prove-tap:
	$(prove_installcheck)

# ---------------------------------------------------------------------------
# Engine checks: an engine against a reference, bit for bit (test/gpu/)

ENGINE_CHECK = test/gpu/build/engine_check
$(ENGINE_CHECK): test/gpu/engine_check.c test/gpu/harness.c test/gpu/harness.h $(UNIT_LIB_SRCS) $(wildcard src/*/*.h include/*.h test/unit/unit.h) test/reference.h
	@mkdir -p test/gpu/build
	$(UNIT_CC) -std=gnu99 -O2 -g -ffp-contract=off -Wall -Wextra -Werror $(UNIT_EXTRA) -Iinclude -Isrc -o $@ \
		test/gpu/engine_check.c test/gpu/harness.c $(UNIT_LIB_SRCS) -lm -lpthread -ldl

# CI: the CPU engine against plain arrays; the CUDA engine where a GPU is,
# and everywhere the same engine over a host emulation of the device (its
# planning, rounds, chunking, cache, one-launch small batches, and with lists
# up to 1M postings the results packed on the device and copied back)
.PHONY: engine-check gpu-check
# Ranked queries (--ranked) against scores computed in the checker itself
# (plain) or by the CPU engine (cpu).
engine-check: $(ENGINE_CHECK)
	$(ENGINE_CHECK) --engine cpu --reference plain --threads 2 --queries 30000 --ranked 2000 --max-len 200000
	@if [ -f $(CUDA_ENGINE) ]; then $(ENGINE_CHECK) --engine $(CUDA_ENGINE) --skip-if-no-device --queries 20000 --ranked 3000 --max-len 200000; fi
	@if [ -f $(CUDA_HOSTEMU) ]; then \
		$(ENGINE_CHECK) --engine $(CUDA_HOSTEMU) --reference plain --queries 20000 --ranked 2000 --max-len 100000 && \
		$(ENGINE_CHECK) --engine $(CUDA_HOSTEMU) --reference plain --queries 5000 --ranked 500 --max-len 50000 --batch-bytes 600000 && \
		$(ENGINE_CHECK) --engine $(CUDA_HOSTEMU) --reference plain --queries 3000 --ranked 200 --max-len 1000000 --seed 3; fi

# the GPU machine: >= 10 million random queries, ranked ones, plus the real packs given in PACKS
GPU_CHECK_QUERIES ?= 10000000
GPU_CHECK_RANKED ?= 200000
gpu-check: $(ENGINE_CHECK) $(CUDA_ENGINE)
	$(ENGINE_CHECK) --engine $(CUDA_ENGINE) --reference cpu --queries $(GPU_CHECK_QUERIES) --ranked $(GPU_CHECK_RANKED) $(foreach p,$(PACKS),--pack $(p))

# ---------------------------------------------------------------------------
# Fuzzing: libFuzzer targets over the codecs, the CPU set operations and
# the index's page readers, built without PostgreSQL (test/fuzz/,
# docs/RELIABILITY.md).  `make fuzz` runs each FUZZ_SECONDS, `make fuzz-ci`
# briefly; both fail on any crash.

FUZZ_CC ?= clang
FUZZ_CFLAGS ?= -std=gnu99 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Wdeclaration-after-statement \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 60
FUZZ_CI_SECONDS ?= 20
FUZZ_BUILD = test/fuzz/build
FUZZ_TARGETS = fuzz_list_open fuzz_list_ops fuzz_differential fuzz_index_pages fuzz_posrec
FUZZ_LIB_SRCS = $(CODEC_SRCS) $(CPU_SRCS)
# the page readers alone: what the server runs on index pages
FUZZ_SRCS_index_pages = src/store/parse.c src/codec/crc32c.c
# the positions records' decoder alone
FUZZ_SRCS_posrec = src/store/posrec.c
FUZZ_DEPS = $(FUZZ_LIB_SRCS) src/store/parse.c src/store/posrec.c test/fuzz/fuzz_common.h test/page_build.h \
	test/reference.h $(wildcard src/codec/*.h src/cpu/*.h src/store/parse.h src/store/posrec.h src/store/varint.h \
	src/sched/*.h include/*.h)
GPUIDX_DATA ?= $(HOME)/.cache/gpuidx-data
# Comparison tracing (for the structure checks' exact values) stays with
# fuzz_list_open; in the other two the set operations' loops dominate and it
# costs three quarters of their speed (differential: byte code, not bytes).
FUZZ_EXTRA_list_ops = -fno-sanitize-coverage=trace-cmp
FUZZ_EXTRA_differential = -fno-sanitize-coverage=trace-cmp

$(FUZZ_BUILD)/fuzz_%: test/fuzz/fuzz_%.c $(FUZZ_DEPS)
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_EXTRA_$*) -Iinclude -Isrc -o $@ $< $(or $(FUZZ_SRCS_$*),$(FUZZ_LIB_SRCS)) -lm

# the seed generator needs no sanitizer; seeds are regenerated by fuzz-seeds
$(FUZZ_BUILD)/gen_seeds: test/fuzz/gen_seeds.c $(FUZZ_DEPS)
	@mkdir -p $(FUZZ_BUILD)
	$(UNIT_CC) -std=gnu99 -O2 -g -Wall -Wextra -Werror -Iinclude -Isrc -o $@ $< $(FUZZ_LIB_SRCS) src/store/posrec.c -lm

# reads a reproducer: show list_open|list_ops|differential FILE
$(FUZZ_BUILD)/show: test/fuzz/show.c $(FUZZ_DEPS)
	@mkdir -p $(FUZZ_BUILD)
	$(UNIT_CC) -std=gnu99 -O1 -g -Wall -Wextra -Werror -Iinclude -Isrc -o $@ $< $(FUZZ_LIB_SRCS) -lm

$(FUZZ_BUILD)/seeds/.done: $(FUZZ_BUILD)/gen_seeds
	rm -rf $(FUZZ_BUILD)/seeds
	$(FUZZ_BUILD)/gen_seeds $(GPUIDX_DATA) $(FUZZ_BUILD)/seeds
	@touch $@

.PHONY: fuzz fuzz-ci fuzz-build fuzz-seeds fuzz-repro fuzz-clean
fuzz-build: $(addprefix $(FUZZ_BUILD)/,$(FUZZ_TARGETS)) $(FUZZ_BUILD)/show
fuzz-seeds: $(FUZZ_BUILD)/seeds/.done

fuzz: fuzz-build fuzz-seeds
	test/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-ci: fuzz-build fuzz-seeds
	test/fuzz/run.sh $(FUZZ_CI_SECONDS) $(FUZZ_TARGETS)

# replay the committed reproducers of past findings (test/fuzz/repro/TARGET/*);
# fails if any of them crashes again
fuzz-repro: fuzz-build
	@status=0; for t in $(FUZZ_TARGETS); do \
		for f in test/fuzz/repro/$${t#fuzz_}/*; do [ -f "$$f" ] || continue; \
			if $(FUZZ_BUILD)/$$t "$$f" >/dev/null 2>&1; then echo "fixed:   $$f"; \
			else echo "crashes: $$f"; status=1; fi; done; done; exit $$status

# the build folder, with the corpora grown by earlier runs and their crashes
fuzz-clean:
	rm -rf $(FUZZ_BUILD)

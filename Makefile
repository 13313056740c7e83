# gpuidx: compressed posting lists, a GPU-ready text index and a GPU worker for
# PostgreSQL.  `make` builds the extension (and the CUDA engine when nvcc is
# found, see Makefile.cuda), `make install`, `make installcheck` (pg_regress),
# `make unit` (C unit tests, no PostgreSQL), `make prove` (pgTAP).

EXTENSION = gpuidx
MODULE_big = gpuidx
DATA = $(wildcard sql/gpuidx--*.sql)

CODEC_SRCS = $(wildcard src/codec/*.c)
CPU_SRCS = $(wildcard src/cpu/*.c)
ENGINE_SRCS = $(wildcard src/engine/*.c)
PG_SRCS = $(wildcard src/type/*.c) $(wildcard src/store/*.c) $(wildcard src/text/*.c) $(wildcard src/am/*.c) $(wildcard src/query/*.c) \
	$(wildcard src/sched/*.c) $(wildcard src/worker/*.c) $(wildcard src/scan/*.c) \
	$(wildcard src/*.c)
OBJS = $(patsubst %.c,%.o,$(CODEC_SRCS) $(CPU_SRCS) $(ENGINE_SRCS) $(PG_SRCS))

# pg_regress: every sql/NAME.sql but the extension scripts
REGRESS = $(filter-out gpuidx--%,$(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql))))
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)
TAP_TESTS = 1

# Only the fmgr entry points and _PG_init leave the shared object.
PG_CPPFLAGS = -Iinclude -Isrc -DPGDLLEXPORT='__attribute__((visibility("default")))'
PG_CFLAGS = -fvisibility=hidden -std=gnu99 $(if $(WERROR),-Werror)

EXTRA_CLEAN = test/unit/build test/gpu/build

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
# without PostgreSQL (the GPU machine) the engine, unit tests and checks still build
ifneq ($(PGXS),)
include $(PGXS)
endif

# PGXS tracks no header dependencies: any header change rebuilds every object
$(OBJS): $(wildcard include/*.h src/*.h src/*/*.h)

# the GPU engine, when nvcc is there
include Makefile.cuda
all: cuda-engine
install: install-cuda-engine
EXTRA_CLEAN += cuda/build

# ---------------------------------------------------------------------------
# C unit tests: codecs and CPU algorithms, built without PostgreSQL

UNIT_CC ?= cc
UNIT_CFLAGS ?= -std=gnu99 -O2 -g -Wall -Wextra -Wdeclaration-after-statement -Werror
UNIT_TESTS = $(patsubst test/unit/%.c,%,$(wildcard test/unit/test_*.c))
UNIT_LIB_SRCS = $(CODEC_SRCS) $(CPU_SRCS) $(ENGINE_SRCS) src/store/parse.c

unit-build-%: test/unit/%.c $(UNIT_LIB_SRCS) $(wildcard src/codec/*.h src/cpu/*.h src/engine/*.h include/*.h test/unit/*.h)
	@mkdir -p test/unit/build
	$(UNIT_CC) $(UNIT_CFLAGS) $(UNIT_EXTRA) -Iinclude -Isrc -o test/unit/build/$*$(UNIT_SUFFIX) $< $(UNIT_LIB_SRCS) -lm -lpthread -ldl

.PHONY: unit unit-asan prove prove-tap
unit: $(addprefix unit-build-,$(UNIT_TESTS))
	@set -e; for t in $(UNIT_TESTS); do ./test/unit/build/$$t$(UNIT_SUFFIX); done

# the same tests under AddressSanitizer and UndefinedBehaviorSanitizer
unit-asan:
	$(MAKE) unit UNIT_SUFFIX=-asan UNIT_CFLAGS="-std=gnu99 -O1 -g -Wall -Wextra -Werror -fno-omit-frame-pointer" \
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
$(ENGINE_CHECK): test/gpu/engine_check.c test/gpu/harness.c test/gpu/harness.h $(UNIT_LIB_SRCS) $(wildcard src/*/*.h include/*.h test/unit/unit.h)
	@mkdir -p test/gpu/build
	$(UNIT_CC) -std=gnu99 -O2 -g -Wall -Wextra -Werror $(UNIT_EXTRA) -Iinclude -Isrc -o $@ \
		test/gpu/engine_check.c test/gpu/harness.c $(UNIT_LIB_SRCS) -lm -lpthread -ldl

# CI: the CPU engine against plain arrays; the CUDA engine where a GPU is,
# and everywhere the same engine over a host emulation of the device (its
# planning, rounds, compaction, chunking and cache, without a GPU)
.PHONY: engine-check gpu-check
engine-check: $(ENGINE_CHECK)
	$(ENGINE_CHECK) --engine cpu --reference plain --threads 2 --queries 30000 --max-len 200000
	@if [ -f $(CUDA_ENGINE) ]; then $(ENGINE_CHECK) --engine $(CUDA_ENGINE) --skip-if-no-device --queries 20000 --max-len 200000; fi
	@if [ -f $(CUDA_HOSTEMU) ]; then \
		$(ENGINE_CHECK) --engine $(CUDA_HOSTEMU) --reference plain --queries 20000 --max-len 100000 && \
		$(ENGINE_CHECK) --engine $(CUDA_HOSTEMU) --reference plain --queries 5000 --max-len 50000 --batch-bytes 600000; fi

# the GPU machine: >= 10 million random queries plus the real packs given in PACKS
GPU_CHECK_QUERIES ?= 10000000
gpu-check: $(ENGINE_CHECK) $(CUDA_ENGINE)
	$(ENGINE_CHECK) --engine $(CUDA_ENGINE) --reference cpu --queries $(GPU_CHECK_QUERIES) $(foreach p,$(PACKS),--pack $(p))

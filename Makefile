# gpuidx: compressed posting lists, a GPU-ready text index and a GPU worker for
# PostgreSQL.  `make` builds the extension (and the CUDA engine when nvcc is
# found, see Makefile.cuda), `make install`, `make installcheck` (pg_regress),
# `make unit` (C unit tests, no PostgreSQL), `make prove` (pgTAP).

EXTENSION = gpuidx
MODULE_big = gpuidx
DATA = $(wildcard sql/gpuidx--*.sql)

CODEC_SRCS = $(wildcard src/codec/*.c)
CPU_SRCS = $(wildcard src/cpu/*.c)
PG_SRCS = $(wildcard src/type/*.c) $(wildcard src/store/*.c) $(wildcard src/text/*.c) $(wildcard src/am/*.c) $(wildcard src/query/*.c) \
	$(wildcard src/sched/*.c) $(wildcard src/worker/*.c) $(wildcard src/scan/*.c) \
	$(wildcard src/*.c)
OBJS = $(patsubst %.c,%.o,$(CODEC_SRCS) $(CPU_SRCS) $(PG_SRCS))

# pg_regress: every sql/NAME.sql but the extension scripts
REGRESS = $(filter-out gpuidx--%,$(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql))))
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)
TAP_TESTS = 1

# Only the fmgr entry points and _PG_init leave the shared object.
PG_CPPFLAGS = -Iinclude -Isrc -DPGDLLEXPORT='__attribute__((visibility("default")))'
PG_CFLAGS = -fvisibility=hidden -std=gnu99 $(if $(WERROR),-Werror)

EXTRA_CLEAN = test/unit/build

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# ---------------------------------------------------------------------------
# C unit tests: codecs and CPU algorithms, built without PostgreSQL

UNIT_CC ?= cc
UNIT_CFLAGS ?= -std=gnu99 -O2 -g -Wall -Wextra -Wdeclaration-after-statement -Werror
UNIT_TESTS = $(patsubst test/unit/%.c,%,$(wildcard test/unit/test_*.c))
UNIT_LIB_SRCS = $(CODEC_SRCS) $(CPU_SRCS)

unit-build-%: test/unit/%.c $(UNIT_LIB_SRCS) $(wildcard src/codec/*.h src/cpu/*.h include/*.h test/unit/*.h)
	@mkdir -p test/unit/build
	$(UNIT_CC) $(UNIT_CFLAGS) $(UNIT_EXTRA) -Iinclude -Isrc -o test/unit/build/$*$(UNIT_SUFFIX) $< $(UNIT_LIB_SRCS) -lm

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

/*
 * engine_int.h
 *	  What the CUDA engine's parts share: engine.cu (the engine's life, its
 *	  API table, host copies), engine_cache.cu (the device list cache: an
 *	  arena with LRU eviction), engine_batch.cu (batches of set queries) and
 *	  engine_rank.cu (ranked batches).  The engine's state, a cache entry,
 *	  and the helpers more than one part calls.
 */
#ifndef GPUIDX_CUDA_ENGINE_INT_H
#define GPUIDX_CUDA_ENGINE_INT_H

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C"
{
#include "gpuidx_engine.h"
#include "codec/codec.h"
#include "engine/engine.h"
#include "engine/lru.h"
#include "store/rankdata.h"
}

#include "device_ops.h"
#include "host_team.h"

/* the device the engine was linked with: CUDA, or the host emulation */
#define OPS (&engine_device_ops)

#define ERR(error, status, ...) engine_set_error((error), (status), __FILE__, __LINE__, __VA_ARGS__)

#define ALIGN 256
#define ALIGN_UP(x) (((uint64_t) (x) + ALIGN - 1) & ~(uint64_t) (ALIGN - 1))
#define DEFAULT_BATCH_BYTES (UINT64_C(1) << 30)

struct plan_space;
void plan_space_free(plan_space *plan);
struct rank_space;
void rank_space_free(rank_space *rank);

/* what a cache entry holds: a list, or ranking's data (GPUIDX_DATA_*) */
#define DATA_LIST 0

/* a cached entry: where it sits in the arena and how to find its parts */
struct dev_list
{
	lru_entry	entry;
	uint64_t	offset;			/* in the arena */
	uint64_t	alloc;			/* bytes reserved */
	uint32_t	kind;			/* DATA_LIST or GPUIDX_DATA_* */
	uint32_t	count;			/* FREQS: its df; DOCLENS: ndocs */
	uint32_t	nchunks;		/* DOCLENS */
	list_desc	rel;			/* a list's pointers relative to its start */
};

struct gpuidx_engine
{
	int			device;
	cudaStream_t stream;
	gpuidx_engine_info info;
	uint32_t	skip_ratio;
	host_team  *team;			/* host threads for planning and large copies */
	bool		lost;			/* a sticky CUDA error: only destroy is left */

	uint8_t    *arena;			/* the cache's device memory */
	uint64_t	arena_bytes;
	std::map<uint64_t, uint64_t> free_space;	/* offset -> size */
	lru_cache	cache;

	uint64_t	batch_budget;	/* device scratch one chunk of a batch may use */
	uint8_t    *scratch;
	uint64_t	scratch_bytes;
	struct plan_space *plan;	/* the host's planning arrays, kept between batches */
	struct rank_space *rank;	/* the same for ranked batches */
	small_state *small;			/* device memory of the one-launch path, zero between batches */
	uint8_t    *pinned;			/* host staging and results, page-locked */
	uint8_t    *pinned_device;	/* the same memory as the kernels address it */
	uint64_t	pinned_bytes;
};


#define CUDA_TRY(e, error, call) \
	do { \
		cudaError_t cuda_err_ = (call); \
		if (cuda_err_ != cudaSuccess) \
		{ \
			int st_ = cuda_status((e), cuda_err_); \
			ERR((error), st_, "%s: %s", #call, OPS->error_string(cuda_err_)); \
			return st_; \
		} \
	} while (0)

/* a launch, counted in the batch's stats */
#define LAUNCH_TRY(e, error, stats, call) \
	do { \
		CUDA_TRY((e), (error), (call)); \
		if (stats) \
			(stats)->launches++; \
	} while (0)

/* CTAs per multiprocessor the grid-stride kernels start */
#define CTAS_PER_SM 8

/* a CUDA error as the ABI's status; sticky errors lose the device */
int			cuda_status(gpuidx_engine *e, cudaError_t err);
double		now_seconds(void);
/* DEVICE_LOST, reported in error: a call made once an earlier one lost the device (e->lost) */
int			device_lost(gpuidx_engine_error *error);
/* a batch's start: its stats zeroed (NULL: none), the device checked and made current */
int			batch_begin(gpuidx_engine *e, gpuidx_batch_stats *stats, gpuidx_engine_error *error);
/* a batch's totals into stats (NULL: none): its queries, the host's last phase from clock, all from start */
void		batch_stats_end(gpuidx_batch_stats *stats, uint32_t nqueries, double start, double clock);

/* engine_cache.cu */
void		cache_drop(gpuidx_engine *e, lru_entry *entry, int evicted);
bool		list_layout_ok(const pl_view *v, const uint8_t *bytes);
int			cuda_cache_put(gpuidx_engine *e, uint64_t key, const void *bytes, uint64_t len,
						   gpuidx_engine_error *error);
int			cuda_cache_put_data(gpuidx_engine *e, uint64_t key, uint32_t kind, const void *bytes, uint64_t len,
								gpuidx_engine_error *error);
int			cuda_cache_contains(gpuidx_engine *e, uint64_t key);
int			cuda_cache_remove(gpuidx_engine *e, uint64_t key);
void		cuda_cache_get_stats(gpuidx_engine *e, gpuidx_cache_stats *stats);

/* engine.cu: host copies */

/*
 * Copies of more than this are cut into parts for the engine's host team:
 * one core copies pinned memory into a caller's arrays at ~5 GB/s, so even a
 * 4 MB result would take most of a millisecond on one thread.
 */
#define PARALLEL_COPY_BYTES (UINT64_C(256) << 10)

/* one memcpy of a set that is copied together */
struct copy_piece
{
	uint8_t    *dst;
	const uint8_t *src;
	uint64_t	len;
};
void		copy_pieces(gpuidx_engine *e, const std::vector<copy_piece> &pieces);

/* engine_batch.cu */
/* a growing bump allocator over one buffer, for laying out a chunk */
struct layout
{
	uint64_t	used = 0;

	uint64_t take(uint64_t bytes)
	{
		uint64_t	at = used;

		used = ALIGN_UP(used + bytes);
		return at;
	}
};
int			ensure_buffers(gpuidx_engine *e, uint64_t device_bytes, uint64_t host_bytes, gpuidx_engine_error *error);
int			cuda_run_batch(gpuidx_engine *e, gpuidx_query *queries, uint32_t nqueries,
						   gpuidx_batch_stats *stats, gpuidx_engine_error *error);

/* engine_rank.cu */
int			cuda_run_ranked(gpuidx_engine *e, gpuidx_rank_query *queries, uint32_t nqueries,
							gpuidx_batch_stats *stats, gpuidx_engine_error *error);

#endif							/* GPUIDX_CUDA_ENGINE_INT_H */

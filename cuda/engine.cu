/*
 * engine.cu
 *	  The CUDA engine behind gpuidx_engine.h: a device-memory list cache
 *	  (an arena with LRU eviction), and batches of queries run with every
 *	  kernel serving all the batch's queries at once.
 *
 * Host side of a batch: resolve each query's lists (cached, or staged from
 * its bytes), describe each query as a job whose work items are its
 * shortest list's blocks (or its initial set's), upload the descriptions,
 * and launch intersect (each item's candidates through all the query's other
 * lists, every round decided on the device, excluded lists subtracted) and
 * pack (each item's place among its query's ids by a scan, then the ids each
 * query asks for, written into mapped pinned memory), then synchronize once
 * and copy each query's ids into its array.  A union runs as disjoint pieces
 * (each list less the longer ones), merged on the way into its array.
 * docs/ENGINE.md tells the design and its measurements.
 */
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
static void plan_space_free(plan_space *plan);
struct rank_space;
static void rank_space_free(rank_space *rank);

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

/* map a CUDA error to the ABI's status; sticky errors lose the device */
static int
cuda_status(gpuidx_engine *e, cudaError_t err)
{
	switch (err)
	{
		case cudaSuccess:
			return GPUIDX_ENGINE_OK;
		case cudaErrorMemoryAllocation:
			return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
		case cudaErrorNoDevice:
		case cudaErrorInsufficientDriver:
		case cudaErrorInvalidDevice:
		case cudaErrorDevicesUnavailable:
			return GPUIDX_ENGINE_ERR_NO_DEVICE;
		case cudaErrorLaunchOutOfResources:
		case cudaErrorInvalidConfiguration:
		case cudaErrorInvalidDeviceFunction:
		case cudaErrorNoKernelImageForDevice:
			return GPUIDX_ENGINE_ERR_LAUNCH;
		default:
			if (e != NULL)
				e->lost = true;
			return GPUIDX_ENGINE_ERR_DEVICE_LOST;
	}
}

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

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- arena */

static bool
arena_alloc(gpuidx_engine *e, uint64_t bytes, uint64_t *offset)
{
	bytes = ALIGN_UP(bytes);
	for (auto it = e->free_space.begin(); it != e->free_space.end(); ++it)
		if (it->second >= bytes)
		{
			uint64_t	off = it->first;
			uint64_t	left = it->second - bytes;

			e->free_space.erase(it);
			if (left > 0)
				e->free_space[off + bytes] = left;
			*offset = off;
			return true;
		}
	return false;
}

static void
arena_free(gpuidx_engine *e, uint64_t offset, uint64_t bytes)
{
	auto		next = e->free_space.lower_bound(offset);

	/* coalesce with the free neighbours */
	if (next != e->free_space.end() && offset + bytes == next->first)
	{
		bytes += next->second;
		next = e->free_space.erase(next);
	}
	if (next != e->free_space.begin())
	{
		auto		prev = std::prev(next);

		if (prev->first + prev->second == offset)
		{
			prev->second += bytes;
			return;
		}
	}
	e->free_space[offset] = bytes;
}

static void
cache_drop(gpuidx_engine *e, lru_entry *entry, int evicted)
{
	dev_list   *l = (dev_list *) entry->data;

	lru_remove(&e->cache, entry, evicted);
	arena_free(e, l->offset, l->alloc);
	delete l;
}

/* ----------------------------------------------------------- lists */

/* the payload's 64-bit data area needs 8-byte alignment on the device */
static bool
list_layout_ok(const pl_view *v, const uint8_t *bytes)
{
	return v->codec == GPUIDX_CODEC_RAW || ((v->data - bytes) % 8) == 0;
}

/* ------------------------------------------------------------ API */

static int
cuda_create(const gpuidx_engine_config *config, gpuidx_engine **out, gpuidx_engine_error *error)
{
	gpuidx_engine *e;
	device_props props;
	cudaError_t err;
	int			st;

	if (config == NULL || config->struct_size < sizeof(gpuidx_engine_config))
	{
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "engine configuration of an unknown size");
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	err = OPS->open(config->device, &props);
	if (err != cudaSuccess && OPS->driver_absent())
	{
		ERR(error, GPUIDX_ENGINE_ERR_NO_DRIVER, "no CUDA driver is installed on this machine (%s)",
			OPS->error_string(err));
		return GPUIDX_ENGINE_ERR_NO_DRIVER;
	}
	if (err != cudaSuccess)
	{
		st = cuda_status(NULL, err);
		ERR(error, st, "no usable CUDA device %d: %s", config->device, OPS->error_string(err));
		return st;
	}
	e = new(std::nothrow) gpuidx_engine();
	if (e == NULL)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	e->device = config->device;
	e->skip_ratio = config->skip_ratio ? config->skip_ratio : 32;
	e->team = new(std::nothrow) host_team(std::max(1u, std::min(config->threads, 64u)));
	if (e->team == NULL)
	{
		delete e;
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	e->batch_budget = config->batch_bytes ? config->batch_bytes : DEFAULT_BATCH_BYTES;
	/* default cache: a quarter of the device, within half of what is free */
	e->arena_bytes = config->cache_bytes ? config->cache_bytes
		: std::min((uint64_t) props.total_memory / 4, (uint64_t) props.free_memory / 2);
	e->arena_bytes = ALIGN_UP(e->arena_bytes);
	err = OPS->stream_create(&e->stream);
	if (err == cudaSuccess)
		err = OPS->dev_alloc((void **) &e->arena, e->arena_bytes);
	if (err == cudaSuccess)
		err = OPS->dev_alloc((void **) &e->small, sizeof(small_state));
	if (err == cudaSuccess)
	{
		small_state zero;

		memset(&zero, 0, sizeof(zero));
		err = OPS->copy(e->small, &zero, sizeof(zero));
	}
	if (err != cudaSuccess)
	{
		st = cuda_status(NULL, err);
		ERR(error, st, "initializing CUDA device %d: %s", e->device, OPS->error_string(err));
		OPS->dev_free(e->small);
		OPS->dev_free(e->arena);
		OPS->stream_destroy(e->stream);
		delete e->team;
		delete e;
		return st;
	}
	if (!lru_init(&e->cache, e->arena_bytes))
	{
		OPS->dev_free(e->small);
		OPS->dev_free(e->arena);
		OPS->stream_destroy(e->stream);
		delete e->team;
		delete e;
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	e->free_space[0] = e->arena_bytes;
	memset(&e->info, 0, sizeof(e->info));
	snprintf(e->info.kind, sizeof(e->info.kind), "%s", OPS->kind);
	snprintf(e->info.device_name, sizeof(e->info.device_name), "%.95s", props.name);
	e->info.device = e->device;
	e->info.compute_major = props.major;
	e->info.compute_minor = props.minor;
	e->info.multiprocessors = props.multiprocessors;
	e->info.device_memory = props.total_memory;
	e->info.abi_version = GPUIDX_ENGINE_ABI_VERSION;
	*out = e;
	return GPUIDX_ENGINE_OK;
}

static void
cuda_destroy(gpuidx_engine *e)
{
	lru_entry  *entry;

	if (e == NULL)
		return;
	OPS->set_device(e->device);
	while ((entry = lru_oldest(&e->cache)) != NULL)
		cache_drop(e, entry, 0);
	lru_free(&e->cache);
	OPS->dev_free(e->arena);
	OPS->dev_free(e->small);
	OPS->dev_free(e->scratch);
	OPS->host_free(e->pinned);
	OPS->stream_destroy(e->stream);
	plan_space_free(e->plan);
	rank_space_free(e->rank);
	delete e->team;
	delete e;
}

static int
cuda_get_info(gpuidx_engine *e, gpuidx_engine_info *info)
{
	*info = e->info;
	return GPUIDX_ENGINE_OK;
}

/*
 * Upload bytes (checked by the caller) under key as entry l describes it,
 * replacing what the key held and evicting the least recently used entries
 * to make room.  l is the cache's on success, freed otherwise.
 */
static int
cache_store(gpuidx_engine *e, uint64_t key, const void *bytes, uint64_t len, dev_list *l,
			gpuidx_engine_error *error)
{
	lru_entry  *old;
	uint64_t	offset;

	if (ALIGN_UP(len) > e->arena_bytes)
	{
		ERR(error, GPUIDX_ENGINE_ERR_TOO_LARGE, "%s of %llu bytes is larger than the GPU cache (%llu bytes)",
			l->kind == DATA_LIST ? "list" : "ranking data", (unsigned long long) len,
			(unsigned long long) e->arena_bytes);
		delete l;
		return GPUIDX_ENGINE_ERR_TOO_LARGE;
	}
	if ((old = lru_find(&e->cache, key)) != NULL)
		cache_drop(e, old, 0);
	/* evict least recently used entries until the arena has a hole that fits */
	while (!arena_alloc(e, len, &offset))
	{
		lru_entry  *victim = lru_oldest(&e->cache);

		if (victim == NULL)
		{
			delete l;
			ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "GPU cache cannot hold %llu bytes",
				(unsigned long long) len);
			return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
		}
		cache_drop(e, victim, 1);
	}
	{
		cudaError_t err = OPS->set_device(e->device);

		if (err == cudaSuccess)
			err = OPS->copy(e->arena + offset, bytes, len);
		if (err != cudaSuccess)
		{
			int			s = cuda_status(e, err);

			arena_free(e, offset, ALIGN_UP(len));
			delete l;
			ERR(error, s, "copying to the GPU cache: %s", OPS->error_string(err));
			return s;
		}
	}
	l->offset = offset;
	l->alloc = ALIGN_UP(len);
	l->entry.key = key;
	l->entry.bytes = l->alloc;
	l->entry.data = l;
	if (!lru_insert(&e->cache, &l->entry))
	{
		arena_free(e, offset, l->alloc);
		delete l;
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	return GPUIDX_ENGINE_OK;
}

static int
cuda_cache_put(gpuidx_engine *e, uint64_t key, const void *bytes, uint64_t len,
			   gpuidx_engine_error *error)
{
	pl_view		view;
	pl_status	st;
	dev_list   *l;

	if (e->lost)
	{
		ERR(error, GPUIDX_ENGINE_ERR_DEVICE_LOST, "the device failed earlier");
		return GPUIDX_ENGINE_ERR_DEVICE_LOST;
	}
	st = pl_open(&view, bytes, len, PL_OPEN_VERIFY_CHECKSUM);
	if (st != PL_OK || !list_layout_ok(&view, (const uint8_t *) bytes))
	{
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "list for key %llu: %s", (unsigned long long) key,
			st != PL_OK ? pl_status_message(st) : "data area not 8-byte aligned");
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	l = new(std::nothrow) dev_list();
	if (l == NULL)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	l->kind = DATA_LIST;
	l->rel = relative_desc(&view, (const uint8_t *) bytes);
	return cache_store(e, key, bytes, len, l, error);
}

static int
cuda_cache_put_data(gpuidx_engine *e, uint64_t key, uint32_t kind, const void *bytes, uint64_t len,
					gpuidx_engine_error *error)
{
	const char *why;
	dev_list   *l;

	if (e->lost)
	{
		ERR(error, GPUIDX_ENGINE_ERR_DEVICE_LOST, "the device failed earlier");
		return GPUIDX_ENGINE_ERR_DEVICE_LOST;
	}
	if (kind == GPUIDX_DATA_FREQS)
		why = bytes == NULL ? "no bytes" : gpx_freq_record_check((const uint8_t *) bytes, len);
	else if (kind == GPUIDX_DATA_DOCLENS)
		why = bytes == NULL ? "no bytes" : gpx_doclens_check((const uint8_t *) bytes, len);
	else
		why = "unknown kind of ranking data";
	if (why != NULL)
	{
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "ranking data (kind %u) for key %llu: %s", kind,
			(unsigned long long) key, why);
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	l = new(std::nothrow) dev_list();
	if (l == NULL)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	l->kind = kind;
	if (kind == GPUIDX_DATA_FREQS)
		l->count = gpx_freq_record_df((const uint8_t *) bytes);
	else
	{
		gpuidx_doclens_header h;

		memcpy(&h, bytes, sizeof(h));
		l->count = h.ndocs;
		l->nchunks = h.nchunks;
	}
	return cache_store(e, key, bytes, len, l, error);
}

static int
cuda_cache_contains(gpuidx_engine *e, uint64_t key)
{
	return lru_find(&e->cache, key) != NULL;
}

static int
cuda_cache_remove(gpuidx_engine *e, uint64_t key)
{
	lru_entry  *entry = lru_find(&e->cache, key);

	if (entry == NULL)
		return 0;
	cache_drop(e, entry, 0);
	return 1;
}

static void
cuda_cache_get_stats(gpuidx_engine *e, gpuidx_cache_stats *stats)
{
	*stats = e->cache.stats;
}

/* ------------------------------------------------------------ host copies */

/* one memcpy of a set that is copied together */
struct copy_piece
{
	uint8_t    *dst;
	const uint8_t *src;
	uint64_t	len;
};

/* the part of the pieces' concatenation in [from, to) */
static void
copy_range(const std::vector<copy_piece> &pieces, uint64_t from, uint64_t to)
{
	uint64_t	at = 0;

	for (const copy_piece &p : pieces)
	{
		uint64_t	s = std::max(at, from);
		uint64_t	e = std::min(at + p.len, to);

		if (s < e)
			memcpy(p.dst + (s - at), p.src + (s - at), e - s);
		at += p.len;
		if (at >= to)
			break;
	}
}

/*
 * Copy the pieces, cutting their concatenation into equal parts for the
 * engine's host team when it is large: one core copies pinned memory into a
 * caller's arrays at ~5 GB/s, so even a 4 MB result would take most of a
 * millisecond on one thread.
 */
#define PARALLEL_COPY_BYTES (UINT64_C(256) << 10)

static void
copy_pieces(gpuidx_engine *e, const std::vector<copy_piece> &pieces)
{
	uint64_t	total = 0;
	uint32_t	nparts;

	for (const copy_piece &p : pieces)
		total += p.len;
	/* parts of at least half the threshold: below it, one part */
	nparts = (uint32_t) std::min<uint64_t>(e->team->size(), total / (PARALLEL_COPY_BYTES / 2));
	if (nparts <= 1)
	{
		copy_range(pieces, 0, total);
		return;
	}
	e->team->run(nparts, [&](uint32_t part) {
		copy_range(pieces, total * part / nparts, total * (part + 1) / nparts);
	});
}

/* ------------------------------------------------------------ batches */

/*
 * The first 'want' ids of the union of k sorted, pairwise disjoint arrays
 * (a union's pieces) into out: two directly, more by a heap of the arrays'
 * heads.  Each piece brings at most its first 'want' ids: the union's first
 * 'want' are among them.
 */
static void
merge_pieces(const uint32_t *const *src, const uint32_t *len, uint32_t k, uint32_t *out, uint32_t want)
{
	uint32_t	heap[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	at[GPUIDX_ENGINE_MAX_TERMS] = {0};
	uint32_t	h = 0;
	auto		head = [&](uint32_t i) { return src[i][at[i]]; };
	auto		sift_down = [&](uint32_t i) {
		for (;;)
		{
			uint32_t	c = 2 * i + 1;

			if (c >= h)
				return;
			if (c + 1 < h && head(heap[c + 1]) < head(heap[c]))
				c++;
			if (head(heap[i]) <= head(heap[c]))
				return;
			std::swap(heap[i], heap[c]);
			i = c;
		}
	};

	if (k == 2)
	{
		/* the common "a | b": one comparison an id, no heap */
		uint32_t	i = 0;
		uint32_t	j = 0;

		for (uint32_t o = 0; o < want; o++)
			out[o] = j == len[1] || (i < len[0] && src[0][i] < src[1][j]) ? src[0][i++] : src[1][j++];
		return;
	}
	for (uint32_t i = 0; i < k; i++)
		if (len[i] > 0)
			heap[h++] = i;
	for (uint32_t i = h / 2; i-- > 0;)
		sift_down(i);
	for (uint32_t o = 0; o < want && h > 0; o++)
	{
		uint32_t	top = heap[0];

		out[o] = src[top][at[top]++];
		if (at[top] == len[top])
			heap[0] = heap[--h];
		sift_down(0);
	}
}

/* first index of sorted a[0..n) with a[i] >= x */
static uint32_t
lower_bound_u32(const uint32_t *a, uint32_t n, uint32_t x)
{
	return (uint32_t) (std::lower_bound(a, a + n, x) - a);
}

/*
 * merge_pieces, cut by value for the engine's host team when the result is
 * large: part p takes the ids in [s_p, s_p+1), split values taken from the
 * longest piece, and writes them where the ids below s_p end.  The pieces
 * are disjoint, so that place is the sum of their counts below s_p; for the
 * union's first 'want' ids it is exact even when pieces brought only their
 * first 'want' (each holds fewer than 'want' ids below any of them).
 */
static void
merge_pieces_parallel(gpuidx_engine *e, const uint32_t *const *src, const uint32_t *len, uint32_t k,
					  uint32_t *out, uint32_t want)
{
	uint32_t	longest = 0;
	uint32_t	nparts;

	for (uint32_t i = 1; i < k; i++)
		if (len[i] > len[longest])
			longest = i;
	nparts = (uint32_t) std::min<uint64_t>(std::min<uint64_t>(e->team->size(), len[longest]),
										   (uint64_t) want * sizeof(uint32_t) / (PARALLEL_COPY_BYTES / 2));
	if (nparts <= 1)
	{
		merge_pieces(src, len, k, out, want);
		return;
	}
	e->team->run(nparts, [&](uint32_t part) {
		const uint32_t *big = src[longest];
		uint32_t	from = part == 0 ? 0 : big[(uint64_t) len[longest] * part / nparts];
		uint32_t	to = part + 1 == nparts ? 0 : big[(uint64_t) len[longest] * (part + 1) / nparts];
		const uint32_t *psrc[GPUIDX_ENGINE_MAX_TERMS];
		uint32_t	plen[GPUIDX_ENGINE_MAX_TERMS];
		uint64_t	at = 0;
		uint64_t	n = 0;

		for (uint32_t i = 0; i < k; i++)
		{
			uint32_t	lo = part == 0 ? 0 : lower_bound_u32(src[i], len[i], from);
			uint32_t	hi = part + 1 == nparts ? len[i] : lower_bound_u32(src[i], len[i], to);

			psrc[i] = src[i] + lo;
			plen[i] = hi - lo;
			at += lo;
			n += plen[i];
		}
		if (at < want)
			merge_pieces(psrc, plen, k, out + at, (uint32_t) std::min<uint64_t>(n, want - at));
	});
}

/*
 * One query of a chunk, as planned on the host; a union is planned as one
 * piece per list (below), consecutive and in the same chunk.  Its job, with
 * term indexes relative to first_term: the source's candidates through
 * job_terms lists from job_first on, the last job_exclude subtracted.
 */
struct query_plan
{
	uint32_t	qi;				/* index in the caller's array */
	uint32_t	first_term;		/* into the chunk's term list, ordered (resolve_query) */
	uint32_t	nterms;			/* the query's */
	bool		has_initial;
	int32_t		source;			/* the source term, or -1: the initial set */
	uint32_t	job_first;
	uint32_t	job_terms;
	uint32_t	job_exclude;
	uint32_t	piece;			/* a union's piece: this one, of npieces (else 0 of 1) */
	uint32_t	npieces;
	uint32_t	cap;			/* its source's length: the initial set or the shortest list */
	uint32_t	bound;			/* most ids its result can have */
	uint32_t	items;			/* its source's blocks: work items */
	uint32_t	slot_len;		/* survivors' room per item */
	bool		store;			/* survivors kept (ids asked for) */
	uint32_t	wanted_bound;	/* most ids it asks back */
	/* places in the chunk's arrays, set by run_chunk */
	uint64_t	item_base;
	uint64_t	slot_base;
	uint64_t	result_base;
	uint64_t	initial_offset;
};

/* one term of a chunk: its descriptor (device pointers) and what to stage */
struct term_plan
{
	list_desc	desc;
	const uint8_t *stage_src;	/* inline bytes to copy, or NULL when cached */
	uint64_t	stage_len;
	uint64_t	stage_offset;	/* in the staging area */
};

/*
 * Arrays a batch is planned in, kept by the engine so that their memory is
 * reused: allocated afresh, a 4096-query batch's few MB were mapped and
 * page-faulted in on every batch.
 */
struct query_lookup
{
	int32_t		status;			/* OK, INVALID or NOT_CACHED */
	uint32_t	resolved;		/* terms looked up before a failure (all on OK) */
	uint64_t	list_bytes;
};

struct plan_space
{
	std::vector<query_plan> plans;
	std::vector<term_plan> terms;
	std::vector<lru_entry *> entries;
	std::vector<query_lookup> lookups;
	std::vector<uint32_t> first;
	std::vector<query_plan> chunk;
	std::vector<term_plan> chunk_terms;
	std::vector<query_job> jobs;
	std::vector<uint64_t> prefix;
	std::vector<uint64_t> unit_prefix;
	std::vector<copy_piece> pieces;
	small_launch small;			/* a small batch's launch parameters */
};

static void
plan_space_free(plan_space *plan)
{
	delete plan;
}

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

static int
ensure_buffers(gpuidx_engine *e, uint64_t device_bytes, uint64_t host_bytes, gpuidx_engine_error *error)
{
	if (device_bytes > e->scratch_bytes)
	{
		OPS->dev_free(e->scratch);
		e->scratch = NULL;
		e->scratch_bytes = 0;
		CUDA_TRY(e, error, OPS->dev_alloc((void **) &e->scratch, device_bytes));
		e->scratch_bytes = device_bytes;
	}
	if (host_bytes > e->pinned_bytes)
	{
		OPS->host_free(e->pinned);
		e->pinned = NULL;
		e->pinned_bytes = 0;
		e->pinned_device = NULL;
		CUDA_TRY(e, error, OPS->host_alloc((void **) &e->pinned, host_bytes));
		e->pinned_bytes = host_bytes;
		CUDA_TRY(e, error, OPS->mapped((void **) &e->pinned_device, e->pinned));
	}
	return GPUIDX_ENGINE_OK;
}

#define LAUNCH_TRY(e, error, stats, call) \
	do { \
		CUDA_TRY((e), (error), (call)); \
		if (stats) \
			(stats)->launches++; \
	} while (0)

/* results from which a batch of at most DMA_MAX_QUERIES is packed on the device and copied */
#define DMA_RESULTS_BYTES (UINT64_C(4) << 20)
#define DMA_MAX_QUERIES 256

/* CTAs per multiprocessor the grid-stride kernels start */
#define CTAS_PER_SM 8

/*
 * Items per unit of the intersect kernel: one while the batch has fewer
 * items than the device has warps to run them (latency first), growing to
 * at most MAX_CHUNK as batches grow, so that each warp still gets a few
 * units to balance the load while walking each list forward.
 */
#define MAX_CHUNK 32
#define WARPS_PER_SM 32

static uint32_t
unit_chunk(const gpuidx_engine *e, uint64_t items)
{
	uint64_t	warps = (uint64_t) std::max(1u, e->info.multiprocessors) * WARPS_PER_SM;

	return (uint32_t) std::max<uint64_t>(1, std::min<uint64_t>(MAX_CHUNK, items / (4 * warps)));
}

/*
 * Run the queries plans[0..np) of one chunk: one upload, two launches
 * (intersect, then pack with its scan: CUB's for large batches) and one
 * synchronization, whatever the queries'
 * number of terms; the results land in mapped pinned memory and are then
 * copied into the queries' arrays.  Terms are resolved and sorted by count
 * within each query.
 */
static int
run_chunk(gpuidx_engine *e, gpuidx_query *queries, std::vector<query_plan> &plans,
		  std::vector<term_plan> &terms, uint64_t stage_bytes, double *clock,
		  gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	uint32_t	np = (uint32_t) plans.size();
	uint64_t	items = 0,
				slots = 0,
				results = 0,
				initial = 0;
	uint32_t	max_rounds = 0;
	size_t		temp_bytes = 0;
	layout		dev,
				host;
	uint64_t	at_status,
				at_descs,
				at_jobs,
				at_prefix,
				at_unit_prefix,
				at_stage,
				at_initial,
				upload_end,
				at_counts,
				at_pos,
				at_temp,
				at_slots,
				at_dev_results,
				at_status_out,
				at_totals,
				at_results;
	std::vector<query_job> &jobs = e->plan->jobs;
	std::vector<uint64_t> &prefix = e->plan->prefix;
	std::vector<uint64_t> &unit_prefix = e->plan->unit_prefix;
	uint32_t	chunk;
	bool		small;
	bool		dma;
	batch_launch l;
	batch_status status;
	double		device_start;
	double		return_start;

	jobs.clear();
	prefix.assign(1, 0);
	unit_prefix.assign(1, 0);
	for (uint32_t i = 0; i < np; i++)
	{
		query_plan &p = plans[i];
		query_job	j = {};

		p.item_base = items;
		p.slot_base = slots;
		p.result_base = results;
		p.initial_offset = initial;
		items += p.items;
		slots += p.store ? (uint64_t) p.items * p.slot_len : 0;
		results += p.wanted_bound;
		initial += p.has_initial ? p.cap : 0;
		max_rounds = std::max(max_rounds, p.job_terms);
		if (p.items == 0)
			continue;			/* an empty source: nothing to run, total 0 */
		j.source = p.source < 0 ? -1 : (int32_t) (p.first_term + p.source);
		j.first_term = p.first_term + p.job_first;
		j.nterms = p.job_terms;
		j.nexclude = p.job_exclude;
		j.query = i;
		j.initial_offset = p.initial_offset;
		j.ninitial = p.has_initial ? p.cap : 0;
		j.slot_len = p.slot_len;
		j.slot_base = p.slot_base;
		j.result_base = p.result_base;
		j.result = queries[p.qi].result;
		j.store = p.store;
		jobs.push_back(j);
		prefix.push_back(items);
	}
	chunk = unit_chunk(e, items);
	for (uint32_t j = 0; j < jobs.size(); j++)
		unit_prefix.push_back(unit_prefix.back() + dev_units(prefix[j + 1] - prefix[j], chunk));
	l.items = items;
	CUDA_TRY(e, error, OPS->pack(&l, 0, NULL, &temp_bytes, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e->stream));

	/*
	 * device: [status | descs | jobs | prefix | staged lists | initial sets] (uploaded)
	 *         [counts | pos | scan temp | survivors' slots]
	 * pinned: the uploaded part, then [status | totals | results] the kernels write
	 */
	at_status = dev.take(sizeof(batch_status));
	at_descs = dev.take(terms.size() * sizeof(list_desc));
	at_jobs = dev.take(jobs.size() * sizeof(query_job));
	at_prefix = dev.take(prefix.size() * sizeof(uint64_t));
	at_unit_prefix = dev.take(unit_prefix.size() * sizeof(uint64_t));
	at_stage = dev.take(stage_bytes);
	at_initial = dev.take(initial * sizeof(uint32_t));
	upload_end = dev.used;
	at_counts = dev.take((items + 1) * sizeof(uint32_t));
	at_pos = dev.take((items + 1) * sizeof(uint32_t));
	at_temp = dev.take(temp_bytes);
	at_slots = dev.take(slots * sizeof(uint32_t));
	/*
	 * Large results of few queries are packed in device memory and copied
	 * back by DMA: the pack kernel's writes into mapped memory run at ~21
	 * GB/s, a copy at ~55 (bench/results/gpu.md); the second synchronization
	 * this takes is nothing beside megabytes.
	 */
	dma = results * sizeof(uint32_t) >= DMA_RESULTS_BYTES && np <= DMA_MAX_QUERIES;
	at_dev_results = dma ? dev.take(results * sizeof(uint32_t)) : 0;
	host.used = upload_end;
	at_status_out = host.take(sizeof(batch_status));
	at_totals = host.take((uint64_t) np * sizeof(uint32_t));
	at_results = host.take(results * sizeof(uint32_t));
	{
		int			st = ensure_buffers(e, dev.used, host.used, error);

		if (st != GPUIDX_ENGINE_OK)
			return st;
	}

	/* host staging mirrors the device layout up to upload_end */
	{
		std::vector<copy_piece> &pieces = e->plan->pieces;

		pieces.clear();

		for (auto &t : terms)
			if (t.stage_src != NULL)
			{
				pieces.push_back({e->pinned + at_stage + t.stage_offset, t.stage_src, t.stage_len});
				t.desc = absolute_desc(t.desc, e->scratch + at_stage + t.stage_offset);
			}
		for (auto &p : plans)
			if (p.has_initial)
				pieces.push_back({e->pinned + at_initial + p.initial_offset * sizeof(uint32_t),
								  (const uint8_t *) queries[p.qi].initial, (uint64_t) p.cap * sizeof(uint32_t)});
		copy_pieces(e, pieces);
	}
	memset(e->pinned + at_status, 0, sizeof(batch_status));
	for (size_t i = 0; i < terms.size(); i++)
		memcpy(e->pinned + at_descs + i * sizeof(list_desc), &terms[i].desc, sizeof(list_desc));
	memcpy(e->pinned + at_jobs, jobs.data(), jobs.size() * sizeof(query_job));
	memcpy(e->pinned + at_prefix, prefix.data(), prefix.size() * sizeof(uint64_t));
	memcpy(e->pinned + at_unit_prefix, unit_prefix.data(), unit_prefix.size() * sizeof(uint64_t));

	l.jobs = (const query_job *) (e->scratch + at_jobs);
	l.prefix = (const uint64_t *) (e->scratch + at_prefix);
	l.njobs = (uint32_t) jobs.size();
	l.descs = (const list_desc *) (e->scratch + at_descs);
	l.initial = (const uint32_t *) (e->scratch + at_initial);
	l.skip_ratio = e->skip_ratio;
	l.unit_prefix = (const uint64_t *) (e->scratch + at_unit_prefix);
	l.units = unit_prefix.back();
	l.chunk = chunk;

	/* cached lists only, few enough to travel as launch parameters: one launch */
	small = stage_bytes == 0 && initial == 0 && jobs.size() <= SMALL_JOBS && terms.size() <= SMALL_DESCS &&
		items <= SMALL_ITEMS;
	device_start = now_seconds();
	if (stats)
		stats->host_seconds += device_start - *clock;
	if (items > 0)
	{
		unsigned	max_ctas = std::max(1u, e->info.multiprocessors) * CTAS_PER_SM;
		uint32_t   *counts = (uint32_t *) (e->scratch + at_counts);
		uint32_t   *pos = (uint32_t *) (e->scratch + at_pos);
		uint32_t   *slot_area = (uint32_t *) (e->scratch + at_slots);
		batch_status *dev_status = (batch_status *) (e->scratch + at_status);

		uint32_t   *results_dev = dma ? (uint32_t *) (e->scratch + at_dev_results)
			: (uint32_t *) (e->pinned_device + at_results);
		uint32_t   *totals_dev = (uint32_t *) (e->pinned_device + at_totals);
		batch_status *status_dev = (batch_status *) (e->pinned_device + at_status_out);

		if (small)
		{
			small_launch &sl = e->plan->small;

			sl.l = l;
			memcpy(sl.jobs, jobs.data(), jobs.size() * sizeof(query_job));
			memcpy(sl.prefix, prefix.data(), prefix.size() * sizeof(uint64_t));
			memcpy(sl.unit_prefix, unit_prefix.data(), unit_prefix.size() * sizeof(uint64_t));
			for (size_t i = 0; i < terms.size(); i++)
				sl.descs[i] = terms[i].desc;
			LAUNCH_TRY(e, error, stats, OPS->small(&sl, max_ctas, slot_area, counts, e->small, results_dev,
													totals_dev, status_dev, e->stream));
		}
		else
		{
			CUDA_TRY(e, error, OPS->copy_async(e->scratch, e->pinned, upload_end, e->stream));
			LAUNCH_TRY(e, error, stats, OPS->intersect(&l, max_ctas, slot_area, counts, dev_status, e->stream));
			LAUNCH_TRY(e, error, stats, OPS->pack(&l, max_ctas, e->scratch + at_temp, &temp_bytes, slot_area,
												   counts, pos, dev_status, results_dev, totals_dev, status_dev,
												   e->stream));
			if (stats)
				stats->bytes_uploaded += upload_end;
		}
		CUDA_TRY(e, error, OPS->sync(e->stream));
		memcpy(&status, e->pinned + at_status_out, sizeof(status));
		if (dma && !status.bad)
		{
			const uint32_t *totals = (const uint32_t *) (e->pinned + at_totals);

			for (uint32_t i = 0; i < np; i++)
			{
				uint64_t	at = plans[i].result_base * sizeof(uint32_t);
				uint32_t	wanted = plans[i].items > 0 ? gpuidx_result_wanted(queries[plans[i].qi].result, totals[i]) : 0;

				if (wanted > 0)
					CUDA_TRY(e, error, OPS->copy_async(e->pinned + at_results + at, e->scratch + at_dev_results + at,
													   (uint64_t) wanted * sizeof(uint32_t), e->stream));
			}
			CUDA_TRY(e, error, OPS->sync(e->stream));
		}
	}
	else
		memset(&status, 0, sizeof(status));
	if (status.bad)
	{
		ERR(error, GPUIDX_ENGINE_ERR_INTERNAL, "a list failed to decode on the GPU");
		return GPUIDX_ENGINE_ERR_INTERNAL;
	}

	/* results: what each query asks for, from mapped memory to its array */
	return_start = now_seconds();
	if (stats)
	{
		stats->device_seconds += return_start - device_start;
		stats->rounds = std::max(stats->rounds, max_rounds);
		stats->merge_rounds += (uint32_t) status.merged;
		stats->search_rounds += (uint32_t) status.searched;
	}
	{
		std::vector<copy_piece> &pieces = e->plan->pieces;

		pieces.clear();
		const uint32_t *totals = (const uint32_t *) (e->pinned + at_totals);
		uint64_t	returned = 0;

		for (uint32_t i = 0; i < np; i += plans[i].npieces)
		{
			query_plan &p = plans[i];
			gpuidx_query *q = &queries[p.qi];
			uint32_t	total = 0;
			uint32_t	wanted;

			for (uint32_t k = 0; k < p.npieces; k++)
				total += plans[i + k].items > 0 ? totals[i + k] : 0;
			wanted = gpuidx_result_wanted(q->result, total);
			if (wanted > q->out_capacity)
			{
				/* a union longer than the room its caller gave it */
				q->out_count = q->total = 0;
				q->status = GPUIDX_ENGINE_ERR_INVALID;
				continue;
			}
			q->out_count = wanted;
			q->total = total;
			q->status = GPUIDX_ENGINE_OK;
			if (p.npieces > 1)
			{
				const uint32_t *src[GPUIDX_ENGINE_MAX_TERMS];
				uint32_t	len[GPUIDX_ENGINE_MAX_TERMS];

				for (uint32_t k = 0; k < p.npieces; k++)
				{
					const query_plan &piece = plans[i + k];

					src[k] = (const uint32_t *) (e->pinned + at_results) + piece.result_base;
					len[k] = piece.items > 0 ? gpuidx_result_wanted(q->result, totals[i + k]) : 0;
					returned += len[k];
				}
				merge_pieces_parallel(e, src, len, p.npieces, q->out, wanted);
				continue;
			}
			returned += wanted;
			if (wanted > 0)
				pieces.push_back({(uint8_t *) q->out, e->pinned + at_results + p.result_base * sizeof(uint32_t),
								  (uint64_t) wanted * sizeof(uint32_t)});
		}
		copy_pieces(e, pieces);
		if (stats)
			stats->bytes_returned += returned * sizeof(uint32_t);
	}
	*clock = now_seconds();
	if (stats)
		stats->return_seconds += *clock - return_start;
	return GPUIDX_ENGINE_OK;
}

/*
 * Planning runs in two passes.  resolve_query finds a query's lists and
 * checks them, touching nothing shared, so the host team runs it for many
 * queries at once; then, in the batch's order on one thread, the cache's hits
 * and misses are counted and the LRU order updated (touch_query), exactly as
 * one lru_use per term would.
 */
static void
resolve_query(gpuidx_engine *e, const gpuidx_query *q, term_plan *slots, lru_entry **entries,
			  query_lookup *r)
{
	uint64_t	counts[GPUIDX_ENGINE_MAX_TERMS];
	uint64_t	bound;
	uint32_t	npos = q->nterms - q->nexclude;
	auto		ascending = [](const term_plan &x, const term_plan &y) { return x.desc.count < y.desc.count; };
	auto		descending = [](const term_plan &x, const term_plan &y) { return x.desc.count > y.desc.count; };

	r->status = GPUIDX_ENGINE_OK;
	r->resolved = 0;
	r->list_bytes = 0;
	if (!gpuidx_query_shape_ok(q) || (q->out == NULL && q->out_capacity > 0))
	{
		r->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const gpuidx_term_ref *ref = &q->terms[t];
		term_plan  *tp = &slots[t];

		memset(tp, 0, sizeof(*tp));
		entries[t] = NULL;
		if (ref->bytes != NULL)
		{
			pl_view		v;

			if (pl_open(&v, ref->bytes, ref->len, 0) != PL_OK ||
				!list_layout_ok(&v, (const uint8_t *) ref->bytes))
			{
				r->status = GPUIDX_ENGINE_ERR_INVALID;
				return;
			}
			tp->desc = relative_desc(&v, (const uint8_t *) ref->bytes);
			tp->stage_src = (const uint8_t *) ref->bytes;
			tp->stage_len = ref->len;
			r->list_bytes += ref->len;
		}
		else
		{
			lru_entry  *entry = lru_find(&e->cache, ref->key);
			dev_list   *l;

			if (entry == NULL)
			{
				r->status = GPUIDX_ENGINE_ERR_NOT_CACHED;
				return;
			}
			entries[t] = entry;
			l = (dev_list *) entry->data;
			if (l->kind != DATA_LIST)
			{
				r->status = GPUIDX_ENGINE_ERR_INVALID;
				return;
			}
			tp->desc = absolute_desc(l->rel, e->arena + l->offset);
			r->list_bytes += entry->bytes;
		}
		r->resolved = t + 1;
		counts[t] = tp->desc.count;
	}
	bound = gpuidx_query_bound(q, counts);
	/* a union's pieces are kept by the engine: its room is checked against the union itself */
	if (q->op != GPUIDX_OP_OR &&
		gpuidx_result_wanted(q->result, (uint32_t) std::min<uint64_t>(bound, UINT32_MAX)) > q->out_capacity)
	{
		r->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}

	/*
	 * AND: the lists intersected shortest first (SvS), then the excluded
	 * ones longest first (the most candidates gone soonest).  OR: longest
	 * first, each piece a list less the longer ones (plan_union).
	 */
	if (q->op == GPUIDX_OP_OR)
		std::sort(slots, slots + q->nterms, descending);
	else
	{
		std::sort(slots, slots + npos, ascending);
		std::sort(slots + npos, slots + q->nterms, descending);
	}
}

/*
 * Lookups ahead of the one in hand, so that a batch's misses on the cache's
 * table overlap: query qi's cached keys, step 0 (bucket) or 1 (first entry).
 */
#define PREFETCH_QUERIES 4

static void
prefetch_query(gpuidx_engine *e, const gpuidx_query *queries, uint32_t qi, uint32_t end, int step)
{
	if (qi >= end || queries[qi].nterms > GPUIDX_ENGINE_MAX_TERMS)
		return;
	for (uint32_t t = 0; t < queries[qi].nterms; t++)
		if (queries[qi].terms[t].bytes == NULL)
			lru_prefetch(&e->cache, queries[qi].terms[t].key, step);
}

/* the recency ring's neighbours a coming touch_query will relink */
static void
prefetch_neighbours(lru_entry *const *entries, uint32_t n)
{
	for (uint32_t t = 0; t < n; t++)
		if (entries[t] != NULL)
		{
			__builtin_prefetch(entries[t]->older, 1);
			__builtin_prefetch(entries[t]->newer, 1);
		}
}

static void
touch_query(gpuidx_engine *e, lru_entry *const *entries, const query_lookup &r)
{
	for (uint32_t t = 0; t < r.resolved; t++)
		if (entries[t] != NULL)
			lru_touch(&e->cache, entries[t]);
	if (r.status == GPUIDX_ENGINE_ERR_NOT_CACHED)
		e->cache.stats.misses++;
}

/*
 * Memory a query needs in a chunk: device (its items' counts and scan, its
 * survivors' slots, its initial set, its staged lists) and pinned (its ids).
 */
static uint64_t
query_footprint(const query_plan &p, const term_plan *qterms)
{
	uint64_t	bytes = (uint64_t) p.items * 2 * sizeof(uint32_t) + (uint64_t) p.wanted_bound * sizeof(uint32_t);

	if (p.store)
		bytes += (uint64_t) p.items * p.slot_len * sizeof(uint32_t);
	if (p.has_initial)
		bytes += (uint64_t) p.cap * sizeof(uint32_t);
	/* a union's pieces share its lists: staged once, with the first */
	for (uint32_t t = 0; t < p.nterms && p.piece == 0; t++)
		if (qterms[t].stage_src != NULL)
			bytes += ALIGN_UP(qterms[t].stage_len);
	return bytes;
}

/* a source term's work items and survivors' room per item */
static void
plan_source(query_plan &p, const list_desc &d)
{
	p.items = d.nblocks;
	p.slot_len = d.codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;
}

/* the query answered TOO_LARGE when alone too large for the GPU's batch memory: the caller's CPU answers it */
static bool
plan_fits(const gpuidx_engine *e, gpuidx_query *q, uint64_t footprint)
{
	if (footprint <= e->batch_budget)
		return true;
	q->status = GPUIDX_ENGINE_ERR_TOO_LARGE;
	return false;
}

/*
 * An AND's plan (p: the query's fields set): the initial set or its
 * shortest list through the other lists, the excluded ones last.
 */
static void
plan_and(const gpuidx_engine *e, gpuidx_query *q, const term_plan *terms, query_plan &p,
		 std::vector<query_plan> &plans)
{
	uint32_t	npos = q->nterms - q->nexclude;

	p.has_initial = q->initial != NULL;
	p.source = p.has_initial ? -1 : 0;
	p.job_first = p.has_initial ? 0 : 1;
	p.job_terms = q->nterms - p.job_first;
	p.job_exclude = q->nexclude;
	p.cap = p.has_initial ? q->ninitial : terms[0].desc.count;
	p.bound = npos > 0 ? std::min(p.cap, terms[0].desc.count) : p.cap;
	p.wanted_bound = gpuidx_result_wanted(q->result, p.bound);
	if (p.has_initial)
	{
		p.items = (p.cap + GPUIDX_EF_BLOCK - 1) / GPUIDX_EF_BLOCK;
		p.slot_len = GPUIDX_EF_BLOCK;
	}
	else
		plan_source(p, terms[0].desc);
	if (plan_fits(e, q, query_footprint(p, terms)))
		plans.push_back(p);
}

/*
 * A union's plan: piece i is list i less the lists before it (longest
 * first, so each piece searches longer lists), so the pieces are disjoint
 * and their counts add up to the union's; run_chunk merges their ids.
 */
static void
plan_union(const gpuidx_engine *e, gpuidx_query *q, const term_plan *terms, query_plan &p,
		   std::vector<query_plan> &plans)
{
	uint64_t	footprint = 0;
	size_t		at = plans.size();

	p.has_initial = false;
	p.npieces = q->nterms;
	for (uint32_t i = 0; i < q->nterms; i++)
	{
		p.piece = i;
		p.source = (int32_t) i;
		p.job_first = 0;
		p.job_terms = i;
		p.job_exclude = i;
		p.cap = p.bound = terms[i].desc.count;
		p.wanted_bound = gpuidx_result_wanted(q->result, p.bound);
		plan_source(p, terms[i].desc);
		footprint += query_footprint(p, terms);
		plans.push_back(p);
	}
	if (!plan_fits(e, q, footprint))
		plans.resize(at);
}

/* run plans[from, to) as one chunk, with their terms renumbered and restaged */
static int
run_plans(gpuidx_engine *e, gpuidx_query *queries, const std::vector<query_plan> &plans,
		  size_t from, size_t to, const std::vector<term_plan> &terms,
		  double *clock, gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	std::vector<query_plan> &chunk = e->plan->chunk;
	std::vector<term_plan> &chunk_terms = e->plan->chunk_terms;
	uint64_t	stage = 0;

	chunk.assign(plans.begin() + from, plans.begin() + to);
	chunk_terms.clear();

	for (auto &p : chunk)
	{
		uint32_t	first = (uint32_t) chunk_terms.size();

		/* a union's later pieces name the terms its first one put */
		if (p.piece > 0)
		{
			p.first_term = (&p - 1)->first_term;
			continue;
		}
		for (uint32_t t = 0; t < p.nterms; t++)
		{
			term_plan	tp = terms[p.first_term + t];

			if (tp.stage_src != NULL)
			{
				tp.stage_offset = stage;
				stage = ALIGN_UP(stage + tp.stage_len);
			}
			chunk_terms.push_back(tp);
		}
		p.first_term = first;
	}
	return run_chunk(e, queries, chunk, chunk_terms, stage, clock, stats, error);
}

static int
cuda_run_batch(gpuidx_engine *e, gpuidx_query *queries, uint32_t nqueries,
			   gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	double		start = now_seconds();
	double		clock = start;		/* where host time runs from */
	int			st = GPUIDX_ENGINE_OK;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (e->lost)
	{
		ERR(error, GPUIDX_ENGINE_ERR_DEVICE_LOST, "the device failed earlier");
		return GPUIDX_ENGINE_ERR_DEVICE_LOST;
	}
	CUDA_TRY(e, error, OPS->set_device(e->device));
	try
	{
		if (e->plan == NULL)
			e->plan = new plan_space();
		std::vector<query_plan> &plans = e->plan->plans;
		std::vector<term_plan> &terms = e->plan->terms;
		std::vector<lru_entry *> &entries = e->plan->entries;
		std::vector<query_lookup> &lookups = e->plan->lookups;
		std::vector<uint32_t> &first = e->plan->first;
		size_t		from = 0;
		uint64_t	used = 0;
		uint32_t	nparts;

		plans.clear();
		lookups.resize(nqueries);
		first.assign(nqueries + 1, 0);
		/* each query's slots: its terms, in order, then sorted by count */
		for (uint32_t qi = 0; qi < nqueries; qi++)
			first[qi + 1] = first[qi] +
				(queries[qi].nterms <= GPUIDX_ENGINE_MAX_TERMS ? queries[qi].nterms : 0);
		terms.resize(first[nqueries]);
		entries.resize(first[nqueries]);
		/*
		 * Batches under 1024 queries are resolved on this thread: waking the
		 * team costs tens of µs, about what one thread takes for a thousand
		 * queries.  Larger ones in parts of at least 64 queries, four per
		 * thread, so that a thread that wakes late finds the parts taken
		 * rather than holding up the batch with its own (one part per thread
		 * made a 4096 batch's planning twice as slow, bench/results/gpu.md).
		 */
		nparts = nqueries < 1024 ? 1 : std::max(1u, std::min(e->team->size() * 4, nqueries / 64));
		e->team->run(nparts, [&](uint32_t part) {
			uint32_t	from = (uint64_t) nqueries * part / nparts;
			uint32_t	to = (uint64_t) nqueries * (part + 1) / nparts;

			for (uint32_t qi = from; qi < to; qi++)
			{
				prefetch_query(e, queries, qi + 2 * PREFETCH_QUERIES, to, 0);
				prefetch_query(e, queries, qi + PREFETCH_QUERIES, to, 1);
				resolve_query(e, &queries[qi], terms.data() + first[qi], entries.data() + first[qi],
							  &lookups[qi]);
			}
		});
		for (uint32_t qi = 0; qi < nqueries; qi++)
		{
			gpuidx_query *q = &queries[qi];
			const query_lookup &r = lookups[qi];
			query_plan	p = {};

			if (qi + PREFETCH_QUERIES < nqueries)
				prefetch_neighbours(entries.data() + first[qi + PREFETCH_QUERIES],
									lookups[qi + PREFETCH_QUERIES].resolved);
			touch_query(e, entries.data() + first[qi], r);
			if (stats)
				stats->list_bytes += r.list_bytes;
			q->out_count = 0;
			q->total = 0;
			q->status = r.status;
			if (r.status != GPUIDX_ENGINE_OK)
				continue;
			p.qi = qi;
			p.first_term = first[qi];
			p.nterms = q->nterms;
			p.store = q->result != GPUIDX_RESULT_COUNT;
			p.npieces = 1;
			if (q->op == GPUIDX_OP_OR)
				plan_union(e, q, terms.data() + first[qi], p, plans);
			else
				plan_and(e, q, terms.data() + first[qi], p, plans);
		}
		/* chunks of consecutive queries (a union's pieces together) that fit the batch memory */
		for (size_t i = 0; i <= plans.size() && st == GPUIDX_ENGINE_OK;)
		{
			uint32_t	group = i < plans.size() ? plans[i].npieces : 1;
			uint64_t	need = 0;

			for (uint32_t k = 0; k < group && i + k < plans.size(); k++)
				need += query_footprint(plans[i + k], terms.data() + plans[i + k].first_term);
			if (i > from && (i == plans.size() || used + need > e->batch_budget))
			{
				/*
				 * Host time is measured, not derived: one clock read ends each
				 * phase and starts the next, host (planning, staging), device,
				 * return, and host again after the chunk.
				 */
				st = run_plans(e, queries, plans, from, i, terms, &clock, stats, error);
				from = i;
				used = 0;
			}
			used += need;
			i += group;
		}
	}
	catch (const std::bad_alloc &)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory planning a batch");
		st = GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	if (stats)
	{
		double		end = now_seconds();

		stats->queries = nqueries;
		stats->host_seconds += end - clock;
		stats->seconds = end - start;
	}
	return st;
}

/* ------------------------------------------------------------ ranked queries */

/*
 * Data a ranked query reads: cached (dev points into the arena) or the
 * caller's bytes, staged with the chunk (stage_offset set by the chunk).
 */
struct rank_ref
{
	const uint8_t *dev;
	const uint8_t *src;
	uint64_t	len;
	uint64_t	stage_offset;
};

struct rank_term_plan
{
	rank_ref	list;
	list_desc	rel;			/* the list's pointers relative to its start */
	rank_ref	tf;				/* the inline tfs, or the frequency record */
	bool		inline_tfs;
	double		idf;
};

/* one ranked query of a batch as planned on the host */
struct rank_plan
{
	uint32_t	qi;				/* index in the caller's array */
	uint32_t	first_term;		/* into the batch's rank_term_plans, in the query's order */
	uint32_t	nterms;
	rank_ref	doclens;
	uint32_t	ndocs;
	uint32_t	nchunks;
	uint32_t	nslots;			/* its accumulator table (rank_table_size) */
	uint32_t	hash_shift;		/* 0: the table is dense, a slot per doc */
	uint64_t	footprint;		/* device bytes it needs in a chunk */
	/* places in the chunk's arrays, set by run_rank_chunk */
	uint64_t	out_base;		/* its k places among the chunk's outputs */
	uint64_t	slots_offset;
	uint64_t	best_offset;	/* its parts' best keys */
	uint64_t	surv_docs_offset;	/* its survivors */
	uint64_t	surv_scores_offset;
};

/* the ranked path's planning arrays, kept between batches as plan_space's are */
struct rank_space
{
	std::vector<rank_plan> plans;
	std::vector<rank_term_plan> terms;
	std::vector<rank_job> jobs;
	std::vector<rank_term_desc> descs;
	std::vector<uint32_t> pass_jobs;
	std::vector<uint64_t> pass_prefix;
	std::vector<rank_pass> passes;
	std::vector<uint64_t> slot_prefix;
	std::vector<copy_piece> pieces;
	std::vector<uint32_t> order;
};

static void
rank_space_free(rank_space *rank)
{
	delete rank;
}

/* a cached entry of the kind asked for, touched as a query's use; a status otherwise */
static int
rank_lookup(gpuidx_engine *e, uint64_t key, uint32_t kind, dev_list **out)
{
	lru_entry  *entry = lru_find(&e->cache, key);

	if (entry == NULL)
	{
		e->cache.stats.misses++;
		return GPUIDX_ENGINE_ERR_NOT_CACHED;
	}
	lru_touch(&e->cache, entry);
	*out = (dev_list *) entry->data;
	return (*out)->kind == kind ? GPUIDX_ENGINE_OK : GPUIDX_ENGINE_ERR_INVALID;
}

static rank_ref
rank_cached(gpuidx_engine *e, const dev_list *l)
{
	rank_ref	r = {};

	r.dev = e->arena + l->offset;
	r.len = l->entry.bytes;
	return r;
}

static rank_ref
rank_inline(const void *bytes, uint64_t len)
{
	rank_ref	r = {};

	r.src = (const uint8_t *) bytes;
	r.len = len;
	return r;
}

/*
 * The accumulator table of a query with 'postings' postings in a segment of
 * ndocs (rank_ops.cuh): hashed, with the power of two of slots at or above
 * twice the postings (at most half full, so probes stay short), unless
 * a slot per doc takes no more room (16 bytes a slot either way).  Its
 * size, zeroing and sweeps follow the postings: a query of a few lists in
 * a large segment does not pay for the segment.
 */
static void
rank_table_size(uint64_t postings, uint32_t ndocs, uint32_t *nslots, uint32_t *hash_shift)
{
	uint32_t	log2_slots = 6;

	while (log2_slots < 32 && (UINT64_C(1) << log2_slots) < 2 * postings)
		log2_slots++;
	if (log2_slots >= 32 || (UINT64_C(1) << log2_slots) >= (uint64_t) ndocs)
	{
		*nslots = ndocs;
		*hash_shift = 0;
	}
	else
	{
		*nslots = 1u << log2_slots;
		*hash_shift = 32 - log2_slots;
	}
}

/* device bytes a ranked query needs besides what it stages */
static uint64_t
rank_scratch_bytes(uint32_t nslots, uint32_t k, uint32_t nterms)
{
	uint64_t	nparts = ((uint64_t) nslots + RANK_SLOT_CHUNK - 1) / RANK_SLOT_CHUNK * RANK_PARTS_PER_ITEM;

	return ALIGN_UP((uint64_t) nslots * sizeof(rank_slot)) + RANK_BINS * sizeof(uint32_t) +
		ALIGN_UP(nparts * 2 * sizeof(uint64_t)) +
		ALIGN_UP(RANK_SURVIVORS * sizeof(uint32_t)) + ALIGN_UP(RANK_SURVIVORS * sizeof(double)) +
		sizeof(rank_select) + (uint64_t) k * (sizeof(uint32_t) + sizeof(double)) + sizeof(rank_job) +
		(uint64_t) nterms * (sizeof(rank_term_desc) + sizeof(uint32_t) + sizeof(uint64_t)) +
		sizeof(uint64_t);
}

/*
 * Check query q and find its data: every argument, the lists (structure and
 * checksum when inline), their tfs or frequency records (df = the list's
 * count), the doc lengths (every list's last doc below ndocs).  Appends its
 * terms to rs->terms; OK, INVALID or NOT_CACHED.
 */
static int
resolve_ranked(gpuidx_engine *e, const gpuidx_rank_query *q, rank_space *rs, rank_plan *p,
			   uint64_t *list_bytes)
{
	dev_list   *l;
	int			st;

	if (q->terms == NULL || q->nterms == 0 || q->nterms > GPUIDX_ENGINE_MAX_TERMS || q->k == 0 ||
		q->k > GPUIDX_RANK_MAX_K || q->k > q->out_capacity || q->out_docs == NULL ||
		q->out_scores == NULL || !(q->k1 > 0.0) || !isfinite(q->k1) || !(q->b >= 0.0 && q->b <= 1.0) ||
		!(q->avgdl >= 0.0) || !isfinite(q->avgdl))
		return GPUIDX_ENGINE_ERR_INVALID;
	if (q->doclens.bytes != NULL)
	{
		gpuidx_doclens_header h;

		if (gpx_doclens_check((const uint8_t *) q->doclens.bytes, q->doclens.len) != NULL)
			return GPUIDX_ENGINE_ERR_INVALID;
		memcpy(&h, q->doclens.bytes, sizeof(h));
		p->doclens = rank_inline(q->doclens.bytes, q->doclens.len);
		p->ndocs = h.ndocs;
		p->nchunks = h.nchunks;
	}
	else
	{
		if ((st = rank_lookup(e, q->doclens.key, GPUIDX_DATA_DOCLENS, &l)) != GPUIDX_ENGINE_OK)
			return st;
		p->doclens = rank_cached(e, l);
		p->ndocs = l->count;
		p->nchunks = l->nchunks;
	}
	p->first_term = (uint32_t) rs->terms.size();
	p->nterms = q->nterms;
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const gpuidx_rank_term *rt = &q->terms[t];
		rank_term_plan tp = {};
		uint32_t	df;

		if (!isfinite(rt->idf) || !(rt->idf >= 0.0))
			return GPUIDX_ENGINE_ERR_INVALID;
		tp.idf = rt->idf;
		if (rt->list.bytes != NULL)
		{
			pl_view		v;

			if (pl_open(&v, rt->list.bytes, rt->list.len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK ||
				!list_layout_ok(&v, (const uint8_t *) rt->list.bytes))
				return GPUIDX_ENGINE_ERR_INVALID;
			tp.rel = relative_desc(&v, (const uint8_t *) rt->list.bytes);
			tp.list = rank_inline(rt->list.bytes, rt->list.len);
		}
		else
		{
			if ((st = rank_lookup(e, rt->list.key, DATA_LIST, &l)) != GPUIDX_ENGINE_OK)
				return st;
			tp.rel = l->rel;
			tp.list = rank_cached(e, l);
		}
		*list_bytes += tp.list.len;
		if (tp.rel.count > 0 && tp.rel.last >= p->ndocs)
			return GPUIDX_ENGINE_ERR_INVALID;
		if (rt->tfs != NULL)
		{
			/* tfs are 1..255: a 0 would count a doc the CPU does not */
			if (memchr(rt->tfs, 0, tp.rel.count) != NULL)
				return GPUIDX_ENGINE_ERR_INVALID;
			tp.inline_tfs = true;
			tp.tf = rank_inline(rt->tfs, tp.rel.count);
		}
		else
		{
			if (rt->freqs.bytes != NULL)
			{
				if (gpx_freq_record_check((const uint8_t *) rt->freqs.bytes, rt->freqs.len) != NULL)
					return GPUIDX_ENGINE_ERR_INVALID;
				df = gpx_freq_record_df((const uint8_t *) rt->freqs.bytes);
				tp.tf = rank_inline(rt->freqs.bytes, rt->freqs.len);
			}
			else
			{
				if ((st = rank_lookup(e, rt->freqs.key, GPUIDX_DATA_FREQS, &l)) != GPUIDX_ENGINE_OK)
					return st;
				df = l->count;
				tp.tf = rank_cached(e, l);
			}
			if (df != tp.rel.count)
				return GPUIDX_ENGINE_ERR_INVALID;
		}
		rs->terms.push_back(tp);
	}
	{
		uint64_t	postings = 0;

		for (uint32_t t = 0; t < q->nterms; t++)
			postings += rs->terms[p->first_term + t].rel.count;
		rank_table_size(postings, p->ndocs, &p->nslots, &p->hash_shift);
	}
	p->footprint = rank_scratch_bytes(p->nslots, q->k, q->nterms);
	if (p->doclens.src != NULL)
		p->footprint += ALIGN_UP(p->doclens.len);
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const rank_term_plan &tp = rs->terms[p->first_term + t];

		if (tp.list.src != NULL)
			p->footprint += ALIGN_UP(tp.list.len);
		if (tp.tf.src != NULL)
			p->footprint += ALIGN_UP(tp.tf.len);
	}
	return GPUIDX_ENGINE_OK;
}

/* a ref's place in device memory, staging it when it is the caller's */
static const uint8_t *
rank_place(gpuidx_engine *e, rank_ref &r, uint64_t at_stage, uint64_t *stage,
		   std::vector<copy_piece> &pieces)
{
	if (r.src == NULL)
		return r.dev;
	r.stage_offset = *stage;
	*stage = ALIGN_UP(*stage + r.len);
	if (r.len > 0)
		pieces.push_back({e->pinned + at_stage + r.stage_offset, r.src, r.len});
	return e->scratch + at_stage + r.stage_offset;
}

/* plans[from, to) as one chunk: one upload, the term passes, the select, one copy back */
static int
run_rank_chunk(gpuidx_engine *e, gpuidx_rank_query *queries, size_t from, size_t to, double *clock,
			   gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	rank_space *rs = e->rank;
	rank_plan  *plans = rs->plans.data() + from;
	uint32_t	np = (uint32_t) (to - from);
	uint32_t	max_terms = 0;
	uint64_t	stage = 0,
				outs = 0,
				slot_items = 0;
	layout		dev,
				host;
	uint64_t	at_jobs,
				at_descs,
				at_pass_jobs,
				at_pass_prefix,
				at_slot_prefix,
				at_stage,
				upload_end,
				at_bad,
				at_sel,
				at_out_docs,
				at_out_scores,
				return_end,
				at_hist,
				host_return;
	unsigned	max_ctas = std::max(1u, e->info.multiprocessors) * CTAS_PER_SM;
	rank_launch l;
	double		device_start,
				return_start;

	/* the chunk's sizes: staging, outputs, work items */
	for (uint32_t i = 0; i < np; i++)
	{
		rank_plan  &p = plans[i];

		for (uint32_t t = 0; t < p.nterms; t++)
		{
			const rank_term_plan &tp = rs->terms[p.first_term + t];

			stage += tp.list.src ? ALIGN_UP(tp.list.len) : 0;
			stage += tp.tf.src ? ALIGN_UP(tp.tf.len) : 0;
		}
		stage += p.doclens.src ? ALIGN_UP(p.doclens.len) : 0;
		p.out_base = outs;
		outs += queries[p.qi].k;
		max_terms = std::max(max_terms, p.nterms);
		slot_items += (p.nslots + RANK_SLOT_CHUNK - 1) / RANK_SLOT_CHUNK;
	}

	/* the term passes: pass j takes term j of every query that has one */
	rs->pass_jobs.clear();
	rs->pass_prefix.clear();
	rs->passes.assign(max_terms, rank_pass());
	for (uint32_t j = 0; j < max_terms; j++)
	{
		rank_pass  &pass = rs->passes[j];
		uint64_t	items = 0;

		pass.term = j;
		pass.jobs = (const uint32_t *) (uintptr_t) rs->pass_jobs.size();		/* offsets until placed */
		pass.prefix = (const uint64_t *) (uintptr_t) rs->pass_prefix.size();
		rs->pass_prefix.push_back(0);
		for (uint32_t i = 0; i < np; i++)
			if (plans[i].nterms > j)
			{
				rs->pass_jobs.push_back(i);
				items += rs->terms[plans[i].first_term + j].rel.nblocks;
				rs->pass_prefix.push_back(items);
			}
		pass.njobs = (uint32_t) (rs->pass_prefix.size() - 1 - (uintptr_t) pass.prefix);
		pass.items = items;
	}
	rs->slot_prefix.assign(1, 0);
	for (uint32_t i = 0; i < np; i++)
		rs->slot_prefix.push_back(rs->slot_prefix.back() + (plans[i].nslots + RANK_SLOT_CHUNK - 1) / RANK_SLOT_CHUNK);

	/*
	 * device: [jobs | descs | pass jobs | pass prefixes | slot prefix | staged] (uploaded)
	 *         [bad | selections | out docs | out scores] (zeroed, copied back)
	 *         [histograms | each query's table: sums, counts, keys; parts' bests; survivors] (zeroed)
	 * pinned: the uploaded part, then the part copied back
	 */
	at_jobs = dev.take((uint64_t) np * sizeof(rank_job));
	at_descs = dev.take(rs->terms.size() * sizeof(rank_term_desc));
	at_pass_jobs = dev.take(rs->pass_jobs.size() * sizeof(uint32_t));
	at_pass_prefix = dev.take(rs->pass_prefix.size() * sizeof(uint64_t));
	at_slot_prefix = dev.take(rs->slot_prefix.size() * sizeof(uint64_t));
	at_stage = dev.take(stage);
	upload_end = dev.used;
	at_bad = dev.take(sizeof(int32_t));
	at_sel = dev.take((uint64_t) np * sizeof(rank_select));
	at_out_docs = dev.take(outs * sizeof(uint32_t));
	at_out_scores = dev.take(outs * sizeof(double));
	return_end = dev.used;
	at_hist = dev.take((uint64_t) np * RANK_BINS * sizeof(uint32_t));
	for (uint32_t i = 0; i < np; i++)
	{
		plans[i].slots_offset = dev.take((uint64_t) plans[i].nslots * sizeof(rank_slot));
		plans[i].best_offset = dev.take((rs->slot_prefix[i + 1] - rs->slot_prefix[i]) * RANK_PARTS_PER_ITEM *
										2 * sizeof(uint64_t));
		plans[i].surv_docs_offset = dev.take(RANK_SURVIVORS * sizeof(uint32_t));
		plans[i].surv_scores_offset = dev.take(RANK_SURVIVORS * sizeof(double));
	}
	host.used = upload_end;
	host_return = host.take(return_end - at_bad);
	{
		int			st = ensure_buffers(e, dev.used, host.used, error);

		if (st != GPUIDX_ENGINE_OK)
			return st;
	}

	/* descriptors with device pointers; inline bytes staged in pinned memory */
	{
		std::vector<copy_piece> &pieces = rs->pieces;
		uint64_t	at = 0;

		pieces.clear();
		rs->jobs.resize(np);
		rs->descs.resize(rs->terms.size());
		for (uint32_t i = 0; i < np; i++)
		{
			rank_plan  &p = plans[i];
			const gpuidx_rank_query *q = &queries[p.qi];
			rank_job   &job = rs->jobs[i];

			memset(&job, 0, sizeof(job));
			job.doclens = rank_place(e, p.doclens, at_stage, &at, pieces);
			job.ndocs = p.ndocs;
			job.nchunks = p.nchunks;
			job.first_term = p.first_term - plans[0].first_term;
			job.nterms = p.nterms;
			job.every_term = q->every_term != 0;
			job.k = q->k;
			job.k1 = q->k1;
			job.b = q->b;
			job.avgdl = q->avgdl;
			job.slots = (rank_slot *) (e->scratch + p.slots_offset);
			job.hashed = p.hash_shift != 0;
			job.nslots = p.nslots;
			job.hash_shift = p.hash_shift;
			job.hist = (uint32_t *) (e->scratch + at_hist) + (uint64_t) i * RANK_BINS;
			job.best = (uint64_t *) (e->scratch + p.best_offset);
			job.surv_docs = (uint32_t *) (e->scratch + p.surv_docs_offset);
			job.surv_scores = (double *) (e->scratch + p.surv_scores_offset);
			job.sel = (rank_select *) (e->scratch + at_sel) + i;
			job.out_docs = (uint32_t *) (e->scratch + at_out_docs) + p.out_base;
			job.out_scores = (double *) (e->scratch + at_out_scores) + p.out_base;
			for (uint32_t t = 0; t < p.nterms; t++)
			{
				rank_term_plan &tp = rs->terms[p.first_term + t];
				rank_term_desc &d = rs->descs[job.first_term + t];
				const uint8_t *tf;

				memset(&d, 0, sizeof(d));
				d.list = absolute_desc(tp.rel, rank_place(e, tp.list, at_stage, &at, pieces));
				tf = rank_place(e, tp.tf, at_stage, &at, pieces);
				if (tp.inline_tfs)
					d.tfs = tf;
				else
					d.freq = tf;
				d.idf = tp.idf;
			}
		}
		copy_pieces(e, pieces);
	}
	memcpy(e->pinned + at_jobs, rs->jobs.data(), (uint64_t) np * sizeof(rank_job));
	memcpy(e->pinned + at_descs, rs->descs.data(), rs->descs.size() * sizeof(rank_term_desc));
	memcpy(e->pinned + at_pass_jobs, rs->pass_jobs.data(), rs->pass_jobs.size() * sizeof(uint32_t));
	memcpy(e->pinned + at_pass_prefix, rs->pass_prefix.data(), rs->pass_prefix.size() * sizeof(uint64_t));
	memcpy(e->pinned + at_slot_prefix, rs->slot_prefix.data(), rs->slot_prefix.size() * sizeof(uint64_t));
	for (rank_pass &pass : rs->passes)
	{
		pass.jobs = (const uint32_t *) (e->scratch + at_pass_jobs) + (uintptr_t) pass.jobs;
		pass.prefix = (const uint64_t *) (e->scratch + at_pass_prefix) + (uintptr_t) pass.prefix;
	}
	l.jobs = (const rank_job *) (e->scratch + at_jobs);
	l.njobs = np;
	l.terms = (const rank_term_desc *) (e->scratch + at_descs);
	l.slot_prefix = (const uint64_t *) (e->scratch + at_slot_prefix);
	l.slot_items = slot_items;
	l.bad = (int32_t *) (e->scratch + at_bad);

	/* the device: every launch serves all the chunk's queries; one synchronization */
	device_start = now_seconds();
	if (stats)
		stats->host_seconds += device_start - *clock;
	CUDA_TRY(e, error, OPS->copy_async(e->scratch, e->pinned, upload_end, e->stream));
	CUDA_TRY(e, error, OPS->zero_async(e->scratch + at_bad, dev.used - at_bad, e->stream));
	for (uint32_t j = 0; j < max_terms; j++)
		LAUNCH_TRY(e, error, stats, OPS->rank_term(&l, &rs->passes[j], max_ctas, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_best(&l, max_ctas, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_bound(&l, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_gather(&l, max_ctas, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_final(&l, e->stream));
	CUDA_TRY(e, error, OPS->copy_async(e->pinned + host_return, e->scratch + at_bad, return_end - at_bad,
									   e->stream));
	CUDA_TRY(e, error, OPS->sync(e->stream));

	/*
	 * Queries whose survivors overflowed select from their whole tables: the
	 * radix passes (the others are done and skip them), a second copy back.
	 */
	{
		bool		overflowed = false;

		for (uint32_t i = 0; i < np && !overflowed; i++)
		{
			rank_select s;

			memcpy(&s, e->pinned + host_return + (at_sel - at_bad) + (uint64_t) i * sizeof(rank_select), sizeof(s));
			overflowed = s.overflow != 0;
		}
		if (overflowed)
		{
			for (uint32_t pass = 0; pass < RANK_PASSES; pass++)
			{
				LAUNCH_TRY(e, error, stats, OPS->rank_hist(&l, pass, max_ctas, e->stream));
				LAUNCH_TRY(e, error, stats, OPS->rank_pick(&l, pass, e->stream));
			}
			LAUNCH_TRY(e, error, stats, OPS->rank_collect(&l, max_ctas, e->stream));
			CUDA_TRY(e, error, OPS->copy_async(e->pinned + host_return, e->scratch + at_bad, return_end - at_bad,
											   e->stream));
			CUDA_TRY(e, error, OPS->sync(e->stream));
		}
	}
	return_start = now_seconds();
	if (stats)
	{
		stats->device_seconds += return_start - device_start;
		stats->bytes_uploaded += upload_end;
		stats->bytes_returned += return_end - at_bad;
	}
	{
		int32_t		bad;

		memcpy(&bad, e->pinned + host_return, sizeof(bad));
		if (bad)
		{
			ERR(error, GPUIDX_ENGINE_ERR_INTERNAL, "a list failed to decode on the GPU");
			return GPUIDX_ENGINE_ERR_INTERNAL;
		}
	}

	/* each query's docs at or above its k-th, sorted: score descending, then doc */
	for (uint32_t i = 0; i < np; i++)
	{
		const rank_plan &p = plans[i];
		gpuidx_rank_query *q = &queries[p.qi];
		rank_select s;
		const uint32_t *docs = (const uint32_t *) (e->pinned + host_return + (at_out_docs - at_bad)) + p.out_base;
		const double *scores = (const double *) (e->pinned + host_return + (at_out_scores - at_bad)) + p.out_base;
		std::vector<uint32_t> &order = rs->order;
		uint32_t	n;

		memcpy(&s, e->pinned + host_return + (at_sel - at_bad) + (uint64_t) i * sizeof(rank_select), sizeof(s));
		n = std::min(s.matched, q->k);
		if (s.taken != n)
		{
			ERR(error, GPUIDX_ENGINE_ERR_INTERNAL, "the GPU selected %u docs of %u for a top %u",
				s.taken, s.matched, q->k);
			return GPUIDX_ENGINE_ERR_INTERNAL;
		}
		order.resize(n);
		for (uint32_t j = 0; j < n; j++)
			order[j] = j;
		std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
			return scores[a] != scores[b] ? scores[a] > scores[b] : docs[a] < docs[b];
		});
		for (uint32_t j = 0; j < n; j++)
		{
			q->out_docs[j] = docs[order[j]];
			q->out_scores[j] = scores[order[j]];
		}
		q->out_count = n;
		q->matched = s.matched;
		q->status = GPUIDX_ENGINE_OK;
	}
	*clock = now_seconds();
	if (stats)
		stats->return_seconds += *clock - return_start;
	return GPUIDX_ENGINE_OK;
}

static int
cuda_run_ranked(gpuidx_engine *e, gpuidx_rank_query *queries, uint32_t nqueries,
				gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	double		start = now_seconds();
	double		clock = start;
	int			st = GPUIDX_ENGINE_OK;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (e->lost)
	{
		ERR(error, GPUIDX_ENGINE_ERR_DEVICE_LOST, "the device failed earlier");
		return GPUIDX_ENGINE_ERR_DEVICE_LOST;
	}
	CUDA_TRY(e, error, OPS->set_device(e->device));
	try
	{
		if (e->rank == NULL)
			e->rank = new rank_space();
		rank_space *rs = e->rank;
		size_t		from = 0;
		uint64_t	used = 0;

		rs->plans.clear();
		rs->terms.clear();
		for (uint32_t qi = 0; qi < nqueries; qi++)
		{
			gpuidx_rank_query *q = &queries[qi];
			rank_plan	p = {};
			uint64_t	list_bytes = 0;
			size_t		nterms_before = rs->terms.size();

			q->out_count = 0;
			q->matched = 0;
			p.qi = qi;
			q->status = resolve_ranked(e, q, rs, &p, &list_bytes);
			if (stats)
				stats->list_bytes += list_bytes;
			if (q->status == GPUIDX_ENGINE_OK && p.footprint > e->batch_budget)
				q->status = GPUIDX_ENGINE_ERR_TOO_LARGE;	/* alone too large: the CPU answers it */
			if (q->status != GPUIDX_ENGINE_OK)
			{
				rs->terms.resize(nterms_before);
				continue;
			}
			rs->plans.push_back(p);
		}
		/* chunks of consecutive queries that fit the batch memory */
		for (size_t i = 0; i <= rs->plans.size() && st == GPUIDX_ENGINE_OK; i++)
		{
			uint64_t	need = i < rs->plans.size() ? rs->plans[i].footprint : 0;

			if (i > from && (i == rs->plans.size() || used + need > e->batch_budget))
			{
				st = run_rank_chunk(e, queries, from, i, &clock, stats, error);
				from = i;
				used = 0;
			}
			used += need;
		}
	}
	catch (const std::bad_alloc &)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory planning a ranked batch");
		st = GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	if (stats)
	{
		double		end = now_seconds();

		stats->queries = nqueries;
		stats->host_seconds += end - clock;
		stats->seconds = end - start;
	}
	return st;
}

static const gpuidx_engine_api cuda_api = {
	GPUIDX_ENGINE_ABI_VERSION,
	sizeof(gpuidx_engine_api),
	cuda_create,
	cuda_destroy,
	cuda_get_info,
	cuda_cache_put,
	cuda_cache_contains,
	cuda_cache_remove,
	cuda_cache_get_stats,
	cuda_cache_put_data,
	cuda_run_batch,
	cuda_run_ranked,
};

extern "C" __attribute__((visibility("default"))) const gpuidx_engine_api *
gpuidx_engine_entry(uint32_t abi_version)
{
	return abi_version == GPUIDX_ENGINE_ABI_VERSION ? &cuda_api : NULL;
}

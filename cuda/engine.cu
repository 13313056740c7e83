/*
 * engine.cu
 *	  The CUDA engine behind gpuidx_engine.h: a device-memory list cache
 *	  (an arena with LRU eviction), and batches of queries run as SvS rounds
 *	  in which every kernel serves all the batch's queries at once.
 *
 * Host side of a batch: resolve each query's lists (cached, or staged from
 * its bytes), decode each query's shortest list (or take its initial set)
 * into one array A of current elements, then per round flag the elements
 * found in each query's next list (merge or search, chosen per query by
 * length ratio), compact A with a prefix sum, and read the new counts back.
 * The results come back in one copy.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

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
}

#include "device_ops.h"
#include "host_team.h"

/* the device the engine was linked with: CUDA, or the host emulation */
#define OPS (&engine_device_ops)

#define ERR(error, status, ...) engine_set_error((error), (status), __FILE__, __LINE__, __VA_ARGS__)

#define ALIGN 256
#define ALIGN_UP(x) (((uint64_t) (x) + ALIGN - 1) & ~(uint64_t) (ALIGN - 1))
#define DEFAULT_BATCH_BYTES (UINT64_C(1) << 30)

/* a cached list: where it sits in the arena and how to find its parts */
struct dev_list
{
	lru_entry	entry;
	uint64_t	offset;			/* in the arena */
	uint64_t	alloc;			/* bytes reserved */
	list_desc	rel;			/* pointers relative to the list's start */
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
	uint8_t    *pinned;			/* host staging, page-locked */
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
	if (err != cudaSuccess)
	{
		st = cuda_status(NULL, err);
		ERR(error, st, "initializing CUDA device %d: %s", e->device, OPS->error_string(err));
		OPS->stream_destroy(e->stream);
		delete e->team;
		delete e;
		return st;
	}
	if (!lru_init(&e->cache, e->arena_bytes))
	{
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
	OPS->dev_free(e->scratch);
	OPS->host_free(e->pinned);
	OPS->stream_destroy(e->stream);
	delete e->team;
	delete e;
}

static int
cuda_get_info(gpuidx_engine *e, gpuidx_engine_info *info)
{
	*info = e->info;
	return GPUIDX_ENGINE_OK;
}

static int
cuda_cache_put(gpuidx_engine *e, uint64_t key, const void *bytes, uint64_t len,
			   gpuidx_engine_error *error)
{
	pl_view		view;
	pl_status	st;
	dev_list   *l;
	lru_entry  *old;
	uint64_t	offset;

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
	if (ALIGN_UP(len) > e->arena_bytes)
	{
		ERR(error, GPUIDX_ENGINE_ERR_TOO_LARGE, "list of %llu bytes is larger than the GPU cache (%llu bytes)",
			(unsigned long long) len, (unsigned long long) e->arena_bytes);
		return GPUIDX_ENGINE_ERR_TOO_LARGE;
	}
	if ((old = lru_find(&e->cache, key)) != NULL)
		cache_drop(e, old, 0);
	/* evict least recently used lists until the arena has a hole that fits */
	while (!arena_alloc(e, len, &offset))
	{
		lru_entry  *victim = lru_oldest(&e->cache);

		if (victim == NULL)
		{
			ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "GPU cache cannot hold %llu bytes",
				(unsigned long long) len);
			return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
		}
		cache_drop(e, victim, 1);
	}
	CUDA_TRY(e, error, OPS->set_device(e->device));
	{
		cudaError_t err = OPS->copy(e->arena + offset, bytes, len);

		if (err != cudaSuccess)
		{
			int			s = cuda_status(e, err);

			arena_free(e, offset, ALIGN_UP(len));
			ERR(error, s, "copying a list to the GPU: %s", OPS->error_string(err));
			return s;
		}
	}
	l = new(std::nothrow) dev_list();
	if (l == NULL)
	{
		arena_free(e, offset, ALIGN_UP(len));
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	l->offset = offset;
	l->alloc = ALIGN_UP(len);
	l->rel = relative_desc(&view, (const uint8_t *) bytes);
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

/* one query of a chunk, as planned on the host */
struct query_plan
{
	uint32_t	qi;				/* index in the caller's array */
	uint32_t	first_term;		/* into the chunk's term list, sorted by count */
	uint32_t	nterms;
	bool		has_initial;
	uint32_t	cap;			/* most elements it can hold: its round-0 size */
	uint32_t	count;			/* current elements */
	uint32_t	offset;			/* of its current elements in A */
	uint32_t	wanted;			/* ids it asks back (gpuidx_result_wanted) */
	uint64_t	result_offset;	/* of them in the packed results */
};

/* one term of a chunk: its descriptor (device pointers) and what to stage */
struct term_plan
{
	list_desc	desc;
	const uint8_t *stage_src;	/* inline bytes to copy, or NULL when cached */
	uint64_t	stage_len;
	uint64_t	stage_offset;	/* in the staging area */
};

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
		CUDA_TRY(e, error, OPS->host_alloc((void **) &e->pinned, host_bytes));
		e->pinned_bytes = host_bytes;
	}
	return GPUIDX_ENGINE_OK;
}

/* per-element device bytes of a chunk: A, A', flags, prefix sums */
#define BYTES_PER_ELEMENT 16

/* a round's jobs, built on the host, copied to the device with their prefix */
struct job_set
{
	std::vector<round_job> jobs;
	std::vector<uint64_t> prefix;

	void clear()
	{
		jobs.clear();
		prefix.assign(1, 0);
	}
	void add(const round_job &j, uint64_t items)
	{
		jobs.push_back(j);
		prefix.push_back(prefix.back() + items);
	}
};

/*
 * Copy a job set into the pinned round area at *host_at (and the same
 * offset on the device) and describe it for a launch.
 */
static round_launch
stage_jobs(gpuidx_engine *e, const job_set &set, uint64_t round_base, uint64_t *at)
{
	round_launch l;
	uint64_t	jobs_at = *at;
	uint64_t	prefix_at;

	memcpy(e->pinned + round_base + jobs_at, set.jobs.data(), set.jobs.size() * sizeof(round_job));
	*at = ALIGN_UP(*at + set.jobs.size() * sizeof(round_job) + 1);
	prefix_at = *at;
	memcpy(e->pinned + round_base + prefix_at, set.prefix.data(), set.prefix.size() * sizeof(uint64_t));
	*at = ALIGN_UP(*at + set.prefix.size() * sizeof(uint64_t));
	l.jobs = (const round_job *) (e->scratch + round_base + jobs_at);
	l.prefix = (const uint64_t *) (e->scratch + round_base + prefix_at);
	l.njobs = (uint32_t) set.jobs.size();
	l.items = set.prefix.back();
	return l;
}

#define LAUNCH_TRY(e, error, stats, call) \
	do { \
		CUDA_TRY((e), (error), (call)); \
		if (stats) \
			(stats)->launches++; \
	} while (0)

/*
 * A chunk's results: the ids each query asks for (all, the first n, none for
 * a count), packed on the device by one gather (into a2, free by now) when
 * that is less than A holds, copied back in one copy, then into the
 * queries' arrays.  at_round, at_bad: the chunk's round area and its flag of
 * a list that failed to decode.
 */
static int
return_results(gpuidx_engine *e, gpuidx_query *queries, std::vector<query_plan> &plans,
			   const uint32_t *a, uint32_t *a2, uint64_t at_round, uint64_t at_bad,
			   gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	job_set		gather;
	uint64_t	wanted = 0;
	bool		packed = true;	/* every query wants all its ids: A is the result */
	const uint32_t *src = a;
	int			bad;

	gather.clear();
	for (auto &p : plans)
	{
		round_job	j;

		p.wanted = gpuidx_result_wanted(queries[p.qi].result, p.count);
		p.result_offset = wanted;
		packed &= p.wanted == p.count && p.offset == wanted;
		j = {p.offset, p.wanted, -1, (uint32_t) wanted};
		gather.add(j, p.wanted);
		wanted += p.wanted;
	}
	CUDA_TRY(e, error, OPS->copy_async(e->pinned + at_bad, e->scratch + at_bad, sizeof(int), e->stream));
	if (!packed && wanted > 0)
	{
		uint64_t	at = 0;
		round_launch l = stage_jobs(e, gather, at_round, &at);

		CUDA_TRY(e, error, OPS->copy_async(e->scratch + at_round, e->pinned + at_round, at, e->stream));
		LAUNCH_TRY(e, error, stats, OPS->gather(&l, a, a2, e->stream));
		src = a2;
	}
	if (wanted > 0)
		CUDA_TRY(e, error, OPS->copy_async(e->pinned, src, wanted * sizeof(uint32_t), e->stream));
	CUDA_TRY(e, error, OPS->sync(e->stream));
	memcpy(&bad, e->pinned + at_bad, sizeof(int));
	if (bad)
	{
		ERR(error, GPUIDX_ENGINE_ERR_INTERNAL, "a list failed to decode on the GPU");
		return GPUIDX_ENGINE_ERR_INTERNAL;
	}
	if (stats)
		stats->bytes_returned += wanted * sizeof(uint32_t);
	{
		std::vector<copy_piece> pieces;

		for (auto &p : plans)
			if (p.wanted > 0)
				pieces.push_back({(uint8_t *) queries[p.qi].out, e->pinned + p.result_offset * sizeof(uint32_t),
								  (uint64_t) p.wanted * sizeof(uint32_t)});
		copy_pieces(e, pieces);
	}
	for (auto &p : plans)
	{
		gpuidx_query *q = &queries[p.qi];

		q->out_count = p.wanted;
		q->total = p.count;
		q->status = GPUIDX_ENGINE_OK;
	}
	return GPUIDX_ENGINE_OK;
}

/*
 * Run the queries plans[0..np) of one chunk.  Terms are already resolved and
 * sorted by count within each query.
 */
static int
run_chunk(gpuidx_engine *e, gpuidx_query *queries, std::vector<query_plan> &plans,
		  std::vector<term_plan> &terms, uint64_t stage_bytes, double *clock,
		  gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	uint32_t	np = (uint32_t) plans.size();
	uint64_t	total = 0;
	uint32_t	max_rounds = 0;
	layout		dev;
	uint64_t	at_descs,
				at_stage,
				at_a,
				at_a2,
				at_flags,
				at_pos,
				at_counts,
				at_bad,
				at_temp,
				at_round;
	size_t		temp_bytes = 0;
	uint64_t	round_bytes;
	uint64_t	upload_end;
	bool		any_initial = false;
	uint32_t   *a;
	uint32_t   *a2;
	job_set		decode,
				merge,
				search;
	double		device_start;
	double		return_start;

	for (auto &p : plans)
	{
		p.offset = (uint32_t) total;
		total += p.cap;
		max_rounds = std::max(max_rounds, p.has_initial ? p.nterms : p.nterms - 1);
		any_initial |= p.has_initial;
	}
	CUDA_TRY(e, error, OPS->scan(NULL, &temp_bytes, NULL, NULL, total, e->stream));
	/* jobs of a round: at most one per query in each set, plus prefixes */
	round_bytes = 3 * ALIGN_UP(((uint64_t) np + 1) * (sizeof(round_job) + sizeof(uint64_t)) + 2 * ALIGN)
		+ ALIGN_UP(((uint64_t) np + 1) * sizeof(uint32_t));

	/* device: [descs | staged lists | A (initial sets uploaded) || A' | flags | pos | counts | bad | temp | round] */
	at_descs = dev.take(terms.size() * sizeof(list_desc));
	at_stage = dev.take(stage_bytes);
	at_a = dev.take(total * sizeof(uint32_t) + 4);
	upload_end = any_initial ? dev.used : at_a;
	at_a2 = dev.take(total * sizeof(uint32_t) + 4);
	at_flags = dev.take((total + 1) * sizeof(uint32_t));
	at_pos = dev.take((total + 1) * sizeof(uint32_t));
	at_counts = dev.take(((uint64_t) np + 1) * sizeof(uint32_t));
	at_bad = dev.take(sizeof(int));
	at_temp = dev.take(temp_bytes);
	at_round = dev.take(round_bytes);
	{
		int			st = ensure_buffers(e, dev.used, std::max(dev.used, (uint64_t) at_a2), error);

		if (st != GPUIDX_ENGINE_OK)
			return st;
	}
	a = (uint32_t *) (e->scratch + at_a);
	a2 = (uint32_t *) (e->scratch + at_a2);

	/* host staging mirrors the device layout up to upload_end */
	{
		std::vector<copy_piece> pieces;

		for (auto &t : terms)
			if (t.stage_src != NULL)
			{
				pieces.push_back({e->pinned + at_stage + t.stage_offset, t.stage_src, t.stage_len});
				t.desc = absolute_desc(t.desc, e->scratch + at_stage + t.stage_offset);
			}
		for (auto &p : plans)
			if (p.has_initial)
				pieces.push_back({e->pinned + at_a + (uint64_t) p.offset * sizeof(uint32_t),
								  (const uint8_t *) queries[p.qi].initial, (uint64_t) p.cap * sizeof(uint32_t)});
		copy_pieces(e, pieces);
	}
	for (size_t i = 0; i < terms.size(); i++)
		memcpy(e->pinned + at_descs + i * sizeof(list_desc), &terms[i].desc, sizeof(list_desc));
	device_start = now_seconds();
	if (stats)
		stats->host_seconds += device_start - *clock;
	CUDA_TRY(e, error, OPS->copy_async(e->scratch, e->pinned, upload_end, e->stream));
	CUDA_TRY(e, error, OPS->fill_async(e->scratch + at_bad, 0, sizeof(int), e->stream));
	if (stats)
		stats->bytes_uploaded += upload_end;

	/* round 0: each query's shortest list decoded into A */
	decode.clear();
	for (auto &p : plans)
	{
		p.count = p.cap;
		if (!p.has_initial && p.cap > 0)
		{
			const list_desc &d = terms[p.first_term].desc;
			round_job	j = {p.offset, 0, (int32_t) p.first_term, p.offset};

			decode.add(j, d.nblocks);
		}
	}
	{
		uint64_t	at = 0;
		round_launch l = stage_jobs(e, decode, at_round, &at);

		CUDA_TRY(e, error, OPS->copy_async(e->scratch + at_round, e->pinned + at_round, at, e->stream));
		if (l.items > 0)
			LAUNCH_TRY(e, error, stats, OPS->decode(&l, (const list_desc *) (e->scratch + at_descs), a,
													  (int *) (e->scratch + at_bad), e->stream));
		/* the round area of pinned memory is rewritten next: let this copy finish */
		CUDA_TRY(e, error, OPS->sync(e->stream));
	}

	for (uint32_t r = 1; r <= max_rounds; r++)
	{
		bool		any = false;
		uint64_t	at = 0;
		uint64_t	cur_total = 0;
		round_launch lm,
					ls;
		uint32_t   *q_offsets;
		uint64_t	offsets_at;

		merge.clear();
		search.clear();
		for (auto &p : plans)
		{
			uint32_t	t = p.has_initial ? r - 1 : r;

			cur_total += p.count;
			if (p.count == 0)
				continue;
			if (t < p.nterms)
			{
				uint32_t	ti = p.first_term + t;
				const list_desc &d = terms[ti].desc;
				round_job	j = {p.offset, p.count, (int32_t) ti, 0};

				any = true;
				if ((uint64_t) d.count >= (uint64_t) p.count * e->skip_ratio)
				{
					search.add(j, p.count);
					if (stats)
						stats->search_rounds++;
				}
				else
				{
					merge.add(j, d.nblocks);
					if (stats)
						stats->merge_rounds++;
				}
			}
			else
			{
				round_job	j = {p.offset, p.count, -1, 0};

				search.add(j, p.count);
			}
		}
		if (!any)
			break;
		if (stats)
			stats->rounds++;
		lm = stage_jobs(e, merge, at_round, &at);
		ls = stage_jobs(e, search, at_round, &at);
		offsets_at = at;
		q_offsets = (uint32_t *) (e->pinned + at_round + offsets_at);
		for (uint32_t i = 0; i < np; i++)
			q_offsets[i] = plans[i].offset;
		q_offsets[np] = (uint32_t) cur_total;
		at = ALIGN_UP(at + ((uint64_t) np + 1) * sizeof(uint32_t));
		CUDA_TRY(e, error, OPS->copy_async(e->scratch + at_round, e->pinned + at_round, at, e->stream));
		CUDA_TRY(e, error, OPS->fill_async(e->scratch + at_flags, 0, (cur_total + 1) * sizeof(uint32_t), e->stream));
		if (ls.items > 0)
			LAUNCH_TRY(e, error, stats, OPS->search(&ls, (const list_desc *) (e->scratch + at_descs), a,
													  (uint32_t *) (e->scratch + at_flags), e->stream));
		if (lm.items > 0)
			LAUNCH_TRY(e, error, stats, OPS->merge(&lm, (const list_desc *) (e->scratch + at_descs), a,
													 (uint32_t *) (e->scratch + at_flags),
													 (int *) (e->scratch + at_bad), e->stream));
		LAUNCH_TRY(e, error, stats, OPS->scan(e->scratch + at_temp, &temp_bytes,
											   (const uint32_t *) (e->scratch + at_flags),
											   (uint32_t *) (e->scratch + at_pos), cur_total, e->stream));
		LAUNCH_TRY(e, error, stats, OPS->compact(a, (const uint32_t *) (e->scratch + at_flags),
												   (const uint32_t *) (e->scratch + at_pos), cur_total, a2,
												   (const uint32_t *) (e->scratch + at_round + offsets_at),
												   np, (uint32_t *) (e->scratch + at_counts), e->stream));
		CUDA_TRY(e, error, OPS->copy_async(e->pinned + at_counts, e->scratch + at_counts,
										   (uint64_t) np * sizeof(uint32_t), e->stream));
		CUDA_TRY(e, error, OPS->sync(e->stream));
		{
			const uint32_t *counts = (const uint32_t *) (e->pinned + at_counts);
			uint32_t	off = 0;

			for (uint32_t i = 0; i < np; i++)
			{
				plans[i].count = counts[i];
				plans[i].offset = off;
				off += counts[i];
			}
		}
		std::swap(a, a2);
	}

	/* results: what each query asks for */
	return_start = now_seconds();
	if (stats)
		stats->device_seconds += return_start - device_start;
	{
		int			st = return_results(e, queries, plans, a, a2, at_round, at_bad, stats, error);

		if (st != GPUIDX_ENGINE_OK)
			return st;
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
struct query_lookup
{
	int32_t		status;			/* OK, INVALID or NOT_CACHED */
	uint32_t	resolved;		/* terms looked up before a failure (all on OK) */
	uint64_t	list_bytes;
};

static void
resolve_query(gpuidx_engine *e, const gpuidx_query *q, term_plan *slots, lru_entry **entries,
			  query_lookup *r)
{
	uint64_t	bound = q->initial != NULL ? q->ninitial : UINT64_MAX;

	r->status = GPUIDX_ENGINE_OK;
	r->resolved = 0;
	r->list_bytes = 0;
	if ((q->nterms == 0 && q->initial == NULL) || q->nterms > GPUIDX_ENGINE_MAX_TERMS ||
		(q->out == NULL && q->out_capacity > 0))
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
			tp->desc = absolute_desc(l->rel, e->arena + l->offset);
			r->list_bytes += entry->bytes;
		}
		r->resolved = t + 1;
		bound = std::min(bound, (uint64_t) tp->desc.count);
	}
	/* bound fits: a term's count or ninitial */
	if (gpuidx_result_wanted(q->result, (uint32_t) bound) > q->out_capacity)
	{
		r->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}
	std::sort(slots, slots + q->nterms,
			  [](const term_plan &x, const term_plan &y) { return x.desc.count < y.desc.count; });
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

/* device bytes a query needs in a chunk: its elements and its staged lists */
static uint64_t
query_footprint(const query_plan &p, const std::vector<term_plan> &terms)
{
	uint64_t	bytes = (uint64_t) p.cap * BYTES_PER_ELEMENT;

	for (uint32_t t = 0; t < p.nterms; t++)
		if (terms[p.first_term + t].stage_src != NULL)
			bytes += ALIGN_UP(terms[p.first_term + t].stage_len);
	return bytes;
}

/* run plans[from, to) as one chunk, with their terms renumbered and restaged */
static int
run_plans(gpuidx_engine *e, gpuidx_query *queries, const std::vector<query_plan> &plans,
		  size_t from, size_t to, const std::vector<term_plan> &terms,
		  double *clock, gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	std::vector<query_plan> chunk(plans.begin() + from, plans.begin() + to);
	std::vector<term_plan> chunk_terms;
	uint64_t	stage = 0;

	for (auto &p : chunk)
	{
		uint32_t	first = (uint32_t) chunk_terms.size();

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
		std::vector<query_plan> plans;
		std::vector<term_plan> terms;
		std::vector<lru_entry *> entries;
		std::vector<query_lookup> lookups(nqueries);
		std::vector<uint32_t> first(nqueries + 1, 0);
		size_t		from = 0;
		uint64_t	used = 0;
		uint32_t	nparts;

		/* each query's slots: its terms, in order, then sorted by count */
		for (uint32_t qi = 0; qi < nqueries; qi++)
			first[qi + 1] = first[qi] +
				(queries[qi].nterms <= GPUIDX_ENGINE_MAX_TERMS ? queries[qi].nterms : 0);
		terms.resize(first[nqueries]);
		entries.resize(first[nqueries]);
		/* parts of at least 64 queries, a few per thread */
		nparts = std::max(1u, std::min(e->team->size() * 4, nqueries / 64));
		e->team->run(nparts, [&](uint32_t part) {
			for (uint32_t qi = (uint64_t) nqueries * part / nparts;
				 qi < (uint64_t) nqueries * (part + 1) / nparts; qi++)
				resolve_query(e, &queries[qi], terms.data() + first[qi], entries.data() + first[qi],
							  &lookups[qi]);
		});
		for (uint32_t qi = 0; qi < nqueries; qi++)
		{
			gpuidx_query *q = &queries[qi];
			const query_lookup &r = lookups[qi];
			query_plan	p = {};

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
			p.has_initial = q->initial != NULL;
			p.cap = p.has_initial ? q->ninitial : terms[first[qi]].desc.count;
			if (query_footprint(p, terms) > e->batch_budget)
			{
				/* alone too large for the GPU's batch memory: the caller's CPU answers it */
				q->status = GPUIDX_ENGINE_ERR_TOO_LARGE;
				continue;
			}
			plans.push_back(p);
		}
		/* chunks of consecutive queries that fit the batch memory */
		for (size_t i = 0; i <= plans.size() && st == GPUIDX_ENGINE_OK; i++)
		{
			uint64_t	need = i < plans.size() ? query_footprint(plans[i], terms) : 0;

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
	cuda_run_batch,
};

extern "C" __attribute__((visibility("default"))) const gpuidx_engine_api *
gpuidx_engine_entry(uint32_t abi_version)
{
	return abi_version == GPUIDX_ENGINE_ABI_VERSION ? &cuda_api : NULL;
}

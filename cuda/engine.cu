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
#include "engine_int.h"

/* map a CUDA error to the ABI's status; sticky errors lose the device */
int
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

double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
device_lost(gpuidx_engine_error *error)
{
	ERR(error, GPUIDX_ENGINE_ERR_DEVICE_LOST, "the device failed earlier");
	return GPUIDX_ENGINE_ERR_DEVICE_LOST;
}

int
batch_begin(gpuidx_engine *e, gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (e->lost)
		return device_lost(error);
	CUDA_TRY(e, error, OPS->set_device(e->device));
	return GPUIDX_ENGINE_OK;
}

void
batch_stats_end(gpuidx_batch_stats *stats, uint32_t nqueries, double start, double clock)
{
	double		end;

	if (stats == NULL)
		return;
	end = now_seconds();
	stats->queries = nqueries;
	stats->host_seconds += end - clock;
	stats->seconds = end - start;
}

/* ------------------------------------------------------------ API */

int
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

void
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

int
cuda_get_info(gpuidx_engine *e, gpuidx_engine_info *info)
{
	*info = e->info;
	return GPUIDX_ENGINE_OK;
}

/* ------------------------------------------------------------ host copies */

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
 * engine's host team when it is large (PARALLEL_COPY_BYTES).
 */
void
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

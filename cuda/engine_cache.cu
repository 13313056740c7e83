/*
 * engine_cache.cu
 *	  The CUDA engine's device list cache: lists and ranking data in an
 *	  arena of device memory, evicted least recently used first.
 */
#include "engine_int.h"

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

void
cache_drop(gpuidx_engine *e, lru_entry *entry, int evicted)
{
	dev_list   *l = (dev_list *) entry->data;

	lru_remove(&e->cache, entry, evicted);
	arena_free(e, l->offset, l->alloc);
	delete l;
}

/* ----------------------------------------------------------- lists */

/* the payload's 64-bit data area needs 8-byte alignment on the device */
bool
list_layout_ok(const pl_view *v, const uint8_t *bytes)
{
	return v->codec == GPUIDX_CODEC_RAW || ((v->data - bytes) % 8) == 0;
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

int
cuda_cache_put(gpuidx_engine *e, uint64_t key, const void *bytes, uint64_t len,
			   gpuidx_engine_error *error)
{
	pl_view		view;
	pl_status	st;
	dev_list   *l;

	if (e->lost)
		return device_lost(error);
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

int
cuda_cache_put_data(gpuidx_engine *e, uint64_t key, uint32_t kind, const void *bytes, uint64_t len,
					gpuidx_engine_error *error)
{
	const char *why;
	dev_list   *l;

	if (e->lost)
		return device_lost(error);
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

int
cuda_cache_contains(gpuidx_engine *e, uint64_t key)
{
	return lru_find(&e->cache, key) != NULL;
}

int
cuda_cache_remove(gpuidx_engine *e, uint64_t key)
{
	lru_entry  *entry = lru_find(&e->cache, key);

	if (entry == NULL)
		return 0;
	cache_drop(e, entry, 0);
	return 1;
}

void
cuda_cache_get_stats(gpuidx_engine *e, gpuidx_cache_stats *stats)
{
	*stats = e->cache.stats;
}


/*
 * harness.c
 *	  Engines by name, corpus packs, and small utilities (see harness.h).
 */
#include "harness.h"
#include "codec/codec.h"
#include "engine/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double
harness_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void
harness_fail(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	fprintf(stderr, "error: ");
	vfprintf(stderr, fmt, args);
	fputc('\n', stderr);
	va_end(args);
	exit(2);
}

void *
harness_alloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		harness_fail("out of memory allocating %zu bytes", size);
	return p;
}

int
engine_open(engine_handle *h, const char *spec, const gpuidx_engine_config *config,
			char *err, size_t errlen)
{
	gpuidx_engine_error error;
	int			st;

	memset(h, 0, sizeof(*h));
	h->api = strcmp(spec, "cpu") == 0 ? cpu_engine_api() : engine_load(spec, err, errlen);
	if (h->api == NULL)
		return GPUIDX_ENGINE_ERR_NO_DEVICE;
	memset(&error, 0, sizeof(error));
	st = h->api->create(config, &h->engine, &error);
	if (st != GPUIDX_ENGINE_OK)
	{
		snprintf(err, errlen, "%s (%s:%d): %s", engine_status_name(st), error.file, error.line,
				 error.message);
		return st;
	}
	h->api->get_info(h->engine, &h->info);
	return GPUIDX_ENGINE_OK;
}

void
engine_close(engine_handle *h)
{
	if (h->api != NULL && h->engine != NULL)
		h->api->destroy(h->engine);
	memset(h, 0, sizeof(*h));
}

void
pack_load(pack *p, const char *path)
{
	FILE	   *f = fopen(path, "rb");
	long		size;
	uint8_t    *bytes;
	uint64_t	pos = 16;
	const char *base = strrchr(path, '/');

	memset(p, 0, sizeof(*p));
	if (f == NULL)
		harness_fail("could not open pack %s", path);
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 16 || fseek(f, 0, SEEK_SET) != 0)
		harness_fail("%s: not a pack", path);
	bytes = harness_alloc((size_t) size + 8);
	if (fread(bytes, 1, (size_t) size, f) != (size_t) size)
		harness_fail("%s: short read", path);
	fclose(f);
	if (memcmp(bytes, "GPXPACK1", 8) != 0)
		harness_fail("%s: not a pack", path);
	memcpy(&p->nlists, bytes + 8, 4);
	memcpy(&p->nqueries, bytes + 12, 4);
	snprintf(p->name, sizeof(p->name), "%s", base ? base + 1 : path);
	p->arena = bytes;
	p->lists = harness_alloc((size_t) p->nlists * sizeof(uint8_t *));
	p->lens = harness_alloc((size_t) p->nlists * sizeof(uint32_t));
	p->counts = harness_alloc((size_t) p->nlists * sizeof(uint32_t));
	for (uint32_t i = 0; i < p->nlists; i++)
	{
		uint32_t	len;
		pl_view		v;

		if (pos + 4 > (uint64_t) size)
			harness_fail("%s: truncated at list %u", path, i);
		memcpy(&len, bytes + pos, 4);
		pos += 8;				/* u32 len, then padding so the list is 8-byte aligned */
		if (pos + len > (uint64_t) size)
			harness_fail("%s: truncated at list %u", path, i);
		if (pl_open(&v, bytes + pos, len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK)
			harness_fail("%s: list %u does not open", path, i);
		p->lists[i] = bytes + pos;
		p->lens[i] = len;
		p->counts[i] = v.count;
		pos = (pos + len + 7) & ~(uint64_t) 7;
	}
	p->query_first = harness_alloc(((size_t) p->nqueries + 1) * sizeof(uint32_t));
	p->query_nterms = harness_alloc(((size_t) p->nqueries + 1) * sizeof(uint32_t));
	p->terms = (uint32_t *) (bytes + pos);
	for (uint32_t q = 0; q < p->nqueries; q++)
	{
		uint32_t	n;

		if (pos + 4 > (uint64_t) size)
			harness_fail("%s: truncated at query %u", path, q);
		memcpy(&n, bytes + pos, 4);
		pos += 4;
		if (n == 0 || n > GPUIDX_ENGINE_MAX_TERMS || pos + 4 * (uint64_t) n > (uint64_t) size)
			harness_fail("%s: bad query %u", path, q);
		p->query_first[q] = (uint32_t) ((pos - ((uint8_t *) p->terms - bytes)) / 4);
		p->query_nterms[q] = n;
		for (uint32_t t = 0; t < n; t++)
		{
			uint32_t	li;

			memcpy(&li, bytes + pos + 4 * t, 4);
			if (li >= p->nlists)
				harness_fail("%s: query %u names list %u of %u", path, q, li, p->nlists);
		}
		pos += 4 * (uint64_t) n;
	}
	if (pos != (uint64_t) size)
		harness_fail("%s: %llu trailing bytes", path, (unsigned long long) (size - pos));
}

void
pack_free(pack *p)
{
	free(p->lists);
	free(p->lens);
	free(p->counts);
	free(p->query_first);
	free(p->query_nterms);
	free(p->arena);
	memset(p, 0, sizeof(*p));
}

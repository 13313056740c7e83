/*
 * show.c
 *	  Prints what a fuzz input holds, to read a reproducer: each list's
 *	  header, open and validate status, skip entries or segments, and ids
 *	  (list_open, list_ops), or the id sets (differential).
 *
 * Usage: show list_open|list_ops|differential FILE.  Built without
 * sanitizers; it opens and decodes only what passed pl_open and pl_validate.
 */
#include "fuzz_common.h"

#include <inttypes.h>

static void
show_ids(const char *what, const uint32_t *v, uint32_t n)
{
	printf("  %s (%u):", what, n);
	for (uint32_t i = 0; i < n && i < 48; i++)
		printf(" %u", v[i]);
	if (n > 48)
		printf(" ... %u", v[n - 1]);
	printf("\n");
}

static void
show_list(const uint8_t *data, size_t len, bool repair)
{
	uint8_t    *bytes = fuzz_copy(data, len);
	pl_view		view;
	pl_status	st;
	gpuidx_list_header hdr;

	if (repair)
		fuzz_fix_checksum(bytes, len);
	printf("  %zu bytes", len);
	if (len >= GPUIDX_HEADER_SIZE)
	{
		memcpy(&hdr, bytes, sizeof(hdr));
		printf(": version %u codec %u flags %u count %u last %u checksum %08x",
			   hdr.version, hdr.codec, hdr.flags, hdr.count, hdr.last, hdr.checksum);
	}
	printf("\n");
	st = pl_open(&view, bytes, len, PL_OPEN_VERIFY_CHECKSUM);
	printf("  open%s: %s\n", repair ? " (checksum repaired)" : "", pl_status_message(st));
	if (st != PL_OK)
	{
		free(bytes);
		return;
	}
	for (uint32_t b = 0; b < view.nblocks && b < 16; b++)
	{
		if (view.codec == GPUIDX_CODEC_EF)
		{
			uint64_t	u = b + 1 < view.nblocks ? (uint64_t) view.block_first[b + 1] - view.block_first[b]
				: (uint64_t) view.last - view.block_first[b] + 1;
			uint32_t	n = gpuidx_ef_block_len(view.count, b);

			printf("  block %u: first %u bitoff %u n %u universe %" PRIu64 " kind %d\n", b,
				   view.block_first[b], view.block_bitoff[b], n, u, gpuidx_ef_block_kind(u, n));
		}
		else if (view.codec == GPUIDX_CODEC_LRC)
		{
			const gpuidx_lrc_segment *s = &view.segs[b];

			printf("  segment %u: first %u bitoff %u intercept %" PRId64 " slope %" PRIu64 " max_dev %u width %u\n",
				   b, s->first, s->bitoff, gpuidx_lrc_intercept(s), gpuidx_lrc_slope(s), s->max_dev, s->width);
		}
	}
	st = pl_validate(&view);
	printf("  validate: %s\n", pl_status_message(st));
	if (view.codec == GPUIDX_CODEC_RAW || st == PL_OK)
	{
		uint32_t   *ids = fuzz_alloc_u32(view.count);

		(void) pl_decode(&view, ids);
		show_ids("ids", ids, view.count);
		free(ids);
	}
	free(bytes);
}

int
main(int argc, char **argv)
{
	FILE	   *f;
	uint8_t    *data;
	long		size;
	fuzz_in		in;

	if (argc != 3 || (f = fopen(argv[2], "rb")) == NULL)
	{
		fprintf(stderr, "usage: show list_open|list_ops|differential FILE\n");
		return 2;
	}
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	data = fuzz_alloc((size_t) size);
	if (size > 0 && fread(data, 1, (size_t) size, f) != (size_t) size)
		return 1;
	fclose(f);
	in.p = data;
	in.n = (size_t) size;

	if (strcmp(argv[1], "list_open") == 0)
	{
		printf("list:\n");
		show_list(data, (size_t) size, false);
		show_list(data, (size_t) size, true);
	}
	else if (strcmp(argv[1], "list_ops") == 0)
	{
		uint32_t	ctl = fuzz_u8(&in);
		uint32_t	limit = fuzz_u16(&in);
		int			nlists = (ctl & 1) ? 3 : 2;

		printf("control %u limit %u, %d lists\n", ctl, limit, nlists);
		for (int i = 0; i < nlists; i++)
		{
			size_t		len = i + 1 < nlists ? fuzz_u16(&in) : in.n;
			const uint8_t *p = fuzz_take(&in, len, &len);

			printf("list %d:\n", i);
			show_list(p, len, true);
		}
	}
	else if (strcmp(argv[1], "differential") == 0)
	{
		uint32_t	ctl = fuzz_u8(&in);
		uint32_t	m = fuzz_u8(&in) + 1;
		uint32_t	limit = fuzz_u16(&in);
		int			nsets = (ctl & 1) ? 3 : 2;
		uint32_t   *v = fuzz_alloc_u32(FUZZ_IDS_MAX);

		printf("control %u m %u limit %u, %d sets (before mixing)\n", ctl, m, limit, nsets);
		for (int i = 0; i < nsets; i++)
		{
			uint32_t	n = fuzz_ids_read(&in, v);

			printf("set %d:\n", i);
			show_ids("ids", v, n);
		}
		free(v);
	}
	else
	{
		fprintf(stderr, "unknown target %s\n", argv[1]);
		return 2;
	}
	free(data);
	return 0;
}

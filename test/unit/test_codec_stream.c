/*
 * test_codec_stream.c
 *	  The codec entry points the index builds on: EF lists written block by
 *	  block (ef_encode_block) give the bytes of ef_encode, raw views over
 *	  plain arrays (pl_view_from_array) behave like encoded raw lists, and the
 *	  interleaved CRC-32C equals a bitwise one on every length and split.
 */
#include "unit.h"
#include "../../src/codec/codec.h"
#include "../../src/cpu/cpu.h"

/* a whole EF list assembled from ef_encode_block, as the index writer does */
static size_t
encode_by_blocks(const uint32_t *v, uint32_t n, uint8_t *out)
{
	uint32_t	nb = gpuidx_ef_block_count(n);
	uint32_t   *first = (uint32_t *) (out + GPUIDX_HEADER_SIZE);
	uint32_t   *bitoff = first + nb;
	uint8_t    *data = (uint8_t *) (bitoff + nb);
	uint64_t	bits = 0;
	gpuidx_list_header hdr;
	size_t		len;

	for (uint32_t b = 0; b < nb; b++)
	{
		uint32_t	start = b * GPUIDX_EF_BLOCK;
		uint32_t	bn = gpuidx_ef_block_len(n, b);
		uint64_t	universe = start + bn < n ? (uint64_t) v[start + bn] - v[start]
			: (uint64_t) v[n - 1] - v[start] + 1;

		bits += gpuidx_ef_block_bits(universe, bn);
	}
	memset(data, 0, gpuidx_data_area_bytes(bits));
	bits = 0;
	for (uint32_t b = 0; b < nb; b++)
	{
		uint32_t	start = b * GPUIDX_EF_BLOCK;
		uint32_t	bn = gpuidx_ef_block_len(n, b);
		uint64_t	universe = start + bn < n ? (uint64_t) v[start + bn] - v[start]
			: (uint64_t) v[n - 1] - v[start] + 1;

		first[b] = v[start];
		bitoff[b] = (uint32_t) bits;
		bits += ef_encode_block(v + start, bn, universe, data, bits);
	}
	len = GPUIDX_HEADER_SIZE + (size_t) nb * 8 + gpuidx_data_area_bytes(bits);
	memset(&hdr, 0, sizeof(hdr));
	hdr.version = GPUIDX_FORMAT_VERSION;
	hdr.codec = GPUIDX_CODEC_EF;
	hdr.count = n;
	hdr.last = n ? v[n - 1] : 0;
	memcpy(out, &hdr, sizeof(hdr));
	hdr.checksum = pl_list_checksum(out, len);
	memcpy(out, &hdr, sizeof(hdr));
	return len;
}

static void
check_blocks_equal_whole(const uint32_t *v, uint32_t n, const char *what)
{
	size_t		size = pl_encoded_size(GPUIDX_CODEC_EF, v, n);
	uint8_t    *whole = unit_alloc(size);
	uint8_t    *pieces = unit_alloc(size + 64);
	size_t		len;
	pl_view		view;

	pl_encode(GPUIDX_CODEC_EF, v, n, whole);
	len = encode_by_blocks(v, n, pieces);
	CHECK(len == size, "%s n=%u: %zu bytes by blocks, %zu whole", what, n, len, size);
	CHECK(len == size && memcmp(whole, pieces, size) == 0, "%s n=%u: bytes differ", what, n);
	CHECK(pl_open(&view, pieces, len, PL_OPEN_VERIFY_CHECKSUM) == PL_OK && pl_validate(&view) == PL_OK,
		  "%s n=%u: block-written list does not open", what, n);
	free(whole);
	free(pieces);
}

static void
check_array_view(const uint32_t *v, uint32_t n, const uint32_t *other, uint32_t no)
{
	pl_view		a;
	pl_view		b;
	uint32_t   *out = unit_alloc((n + 1) * sizeof(uint32_t));
	uint32_t   *ref = unit_alloc((n + 1) * sizeof(uint32_t));
	uint32_t	k;
	uint32_t	kref;

	pl_view_from_array(&a, v, n);
	pl_view_from_array(&b, other, no);
	CHECK(a.count == n && a.codec == GPUIDX_CODEC_RAW, "array view n=%u", n);
	CHECK(n == 0 || a.last == v[n - 1], "array view last");
	CHECK(pl_validate(&a) == PL_OK, "array view n=%u validates", n);
	for (uint32_t i = 0; i < n; i += 1 + n / 50)
	{
		bool		found = false;

		CHECK(pl_contains(&a, v[i], &found) == PL_OK && found, "array view contains v[%u]", i);
	}
	k = cpu_intersect_lists(&a, &b, out, CPU_METHOD_AUTO, 0, NULL);
	kref = cpu_merge_intersect(v, n, other, no, ref, n + 1);
	CHECK(k == kref && memcmp(out, ref, k * sizeof(uint32_t)) == 0,
		  "array views intersect n=%u no=%u: %u vs %u", n, no, k, kref);
	free(out);
	free(ref);
}

/* CRC-32C one bit at a time: the reference */
static uint32_t
crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--)
	{
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void
check_crc32c(void)
{
	size_t		max = 3 * 2048 * 3 + 777;
	uint8_t    *buf = unit_alloc(max + 8);

	for (size_t i = 0; i < max + 8; i++)
		buf[i] = (uint8_t) unit_rand64();
	for (size_t len = 0; len <= max; len += 1 + len / 7)
		for (size_t off = 0; off < 8; off += 3)
		{
			uint32_t	want = crc32c_bitwise(0, buf + off, len);
			size_t		cut = len / 3;

			CHECK(pl_crc32c(0, buf + off, len) == want, "crc32c len=%zu off=%zu", len, off);
			CHECK(pl_crc32c(pl_crc32c(0, buf + off, cut), buf + off + cut, len - cut) == want,
				  "crc32c in two pieces len=%zu", len);
		}
	free(buf);
}

int
main(void)
{
	static const uint32_t lengths[] = {1, 2, 3, 127, 128, 129, 256, 1000, 4097, 100000};
	uint32_t   *v = unit_alloc(200000 * sizeof(uint32_t));
	uint32_t   *w = unit_alloc(200000 * sizeof(uint32_t));

	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
	{
		uint32_t	len = lengths[i];
		uint32_t	n;
		uint32_t	m;

		n = unit_gen_gaps(v, len, unit_rand_below(100), 1);
		check_blocks_equal_whole(v, n, "run");
		n = unit_gen_gaps(v, len, 0, 3);
		check_blocks_equal_whole(v, n, "dense");
		n = unit_gen_gaps(v, len, 5, 100000);
		check_blocks_equal_whole(v, n, "sparse");
		n = unit_gen_uniform(v, len, UINT64_C(1) << 32);
		check_blocks_equal_whole(v, n, "uniform");

		n = unit_gen_gaps(v, len, 0, 7);
		m = unit_gen_gaps(w, len / 2 + 1, 3, 11);
		check_array_view(v, n, w, m);
	}
	check_array_view(v, 0, w, 10);
	check_crc32c();
	free(v);
	free(w);
	return unit_report("test_codec_stream");
}

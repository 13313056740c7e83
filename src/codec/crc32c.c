/*
 * crc32c.c
 *	  CRC-32C for list checksums: the SSE 4.2 instruction when the CPU has it
 *	  (chosen at run time, so the binary stays portable), else slicing-by-8.
 *
 * The instruction has a latency of three cycles but a throughput of one, so
 * long inputs are split in three lanes checksummed side by side; the lanes'
 * CRCs are joined by shifting them (a CRC register times x^(8n) mod P, the
 * register after n zero bytes), which tables built at load time do a byte at
 * a time.
 */
#include "codec.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define HAVE_X86_CRC32C 1
#endif

static uint32_t crc_table[8][256];
static int	crc_use_sse42;

/* lane lengths of the interleaved loop, and tables shifting by them */
#define CRC_LANE_LONG	2048
#define CRC_LANE_SHORT	256
static uint32_t crc_shift_long[4][256];
static uint32_t crc_shift_short[4][256];

/* the register c after n zero bytes: c times x^(8n) mod P */
static uint32_t
crc_zeros(uint32_t c, size_t n)
{
	while (n--)
		c = (c >> 8) ^ crc_table[0][c & 0xff];
	return c;
}

/* shifting is linear in the register: tables of each byte's share */
static void
crc_build_shift(uint32_t table[4][256], size_t n)
{
	uint32_t	basis[32];

	for (int j = 0; j < 32; j++)
		basis[j] = crc_zeros(UINT32_C(1) << j, n);
	for (int k = 0; k < 4; k++)
		for (uint32_t v = 0; v < 256; v++)
		{
			uint32_t	x = 0;

			for (int b = 0; b < 8; b++)
				if (v & (1u << b))
					x ^= basis[8 * k + b];
			table[k][v] = x;
		}
}

static inline uint32_t
crc_shift(const uint32_t table[4][256], uint32_t c)
{
	return table[0][c & 0xff] ^ table[1][(c >> 8) & 0xff] ^
		table[2][(c >> 16) & 0xff] ^ table[3][c >> 24];
}

/* filled when the object is loaded, before any thread can checksum */
__attribute__((constructor))
static void
crc_build_tables(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
	crc_build_shift(crc_shift_long, CRC_LANE_LONG);
	crc_build_shift(crc_shift_short, CRC_LANE_SHORT);
#ifdef HAVE_X86_CRC32C
	__builtin_cpu_init();
	crc_use_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t
crc32c_portable(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		w ^= crc;
		crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
			crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
			crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
			crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#ifdef HAVE_X86_CRC32C
/* three lanes of lane bytes each, joined into c */
__attribute__((target("sse4.2")))
static inline uint32_t
crc32c_sse42_lanes(uint32_t crc, const uint8_t *p, size_t lane, const uint32_t shift[4][256])
{
	uint64_t	c0 = crc;
	uint64_t	c1 = 0;
	uint64_t	c2 = 0;

	for (size_t i = 0; i < lane; i += 8)
	{
		uint64_t	w0;
		uint64_t	w1;
		uint64_t	w2;

		memcpy(&w0, p + i, 8);
		memcpy(&w1, p + lane + i, 8);
		memcpy(&w2, p + 2 * lane + i, 8);
		c0 = _mm_crc32_u64(c0, w0);
		c1 = _mm_crc32_u64(c1, w1);
		c2 = _mm_crc32_u64(c2, w2);
	}
	return crc_shift(shift, crc_shift(shift, (uint32_t) c0) ^ (uint32_t) c1) ^ (uint32_t) c2;
}

__attribute__((target("sse4.2")))
static uint32_t
crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t	c;

	while (len >= 3 * CRC_LANE_LONG)
	{
		crc = crc32c_sse42_lanes(crc, p, CRC_LANE_LONG, crc_shift_long);
		p += 3 * CRC_LANE_LONG;
		len -= 3 * CRC_LANE_LONG;
	}
	while (len >= 3 * CRC_LANE_SHORT)
	{
		crc = crc32c_sse42_lanes(crc, p, CRC_LANE_SHORT, crc_shift_short);
		p += 3 * CRC_LANE_SHORT;
		len -= 3 * CRC_LANE_SHORT;
	}
	c = crc;
	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t) c, *p++);
	return (uint32_t) c;
}
#endif

uint32_t
pl_crc32c(uint32_t crc, const void *data, size_t len)
{
	crc = ~crc;
#ifdef HAVE_X86_CRC32C
	if (crc_use_sse42)
		return ~crc32c_sse42(crc, (const uint8_t *) data, len);
#endif
	return ~crc32c_portable(crc, (const uint8_t *) data, len);
}

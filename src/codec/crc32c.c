/*
 * crc32c.c
 *	  CRC-32C for list checksums: the SSE 4.2 instruction when the CPU has it
 *	  (chosen at run time, so the binary stays portable), else slicing-by-8.
 */
#include "codec.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define HAVE_X86_CRC32C 1
#endif

static uint32_t crc_table[8][256];
static int	crc_use_sse42;

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
__attribute__((target("sse4.2")))
static uint32_t
crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t	c = crc;

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

/*
 * varint.h
 *	  LEB128 varints for the index's compact structures (dictionary entries,
 *	  inline lists, doc map, pending entries).  Decoding is bounds-checked:
 *	  a reader never passes the end it is given, so damaged bytes end in an
 *	  error instead of a wild read.  No PostgreSQL header: the fuzz targets
 *	  use it too.
 */
#ifndef GPUIDX_STORE_VARINT_H
#define GPUIDX_STORE_VARINT_H

#include <stdbool.h>
#include <stdint.h>

#define GPX_VARINT_MAX 10

static inline int
gpx_varint_size(uint64_t v)
{
	int			n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

static inline int
gpx_varint_put(uint8_t *p, uint64_t v)
{
	int			n = 0;

	while (v >= 0x80)
	{
		p[n++] = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t) v;
	return n;
}

/* read one varint at *p, not past end; false if it is cut off or too long */
static inline bool
gpx_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t	r = 0;
	int			shift = 0;

	while (q < end)
	{
		uint8_t		b = *q++;

		if (shift == 63 && b > 1)
			return false;
		r |= (uint64_t) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
		{
			*p = q;
			*v = r;
			return true;
		}
		shift += 7;
		if (shift > 63)
			return false;
	}
	return false;
}

/* a varint that must fit in uint32 */
static inline bool
gpx_varint_get32(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint64_t	r;

	if (!gpx_varint_get(p, end, &r) || r > UINT32_MAX)
		return false;
	*v = (uint32_t) r;
	return true;
}

static inline uint64_t
gpx_zigzag(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static inline int64_t
gpx_unzigzag(uint64_t v)
{
	return (int64_t) (v >> 1) ^ -(int64_t) (v & 1);
}

#endif							/* GPUIDX_STORE_VARINT_H */

/*
 * varint.h
 *	  LEB128 varints for the index's compact structures (dictionary entries,
 *	  inline lists, doc map, pending entries).  Decoding is bounds-checked:
 *	  a reader never passes the end it is given, so damaged bytes end in an
 *	  error instead of a wild read.
 */
#ifndef GPUIDX_STORE_VARINT_H
#define GPUIDX_STORE_VARINT_H

#include "c.h"

#define GPX_VARINT_MAX 10

static inline int
gpx_varint_size(uint64 v)
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
gpx_varint_put(uint8 *p, uint64 v)
{
	int			n = 0;

	while (v >= 0x80)
	{
		p[n++] = (uint8) (v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8) v;
	return n;
}

/* read one varint at *p, not past end; false if it is cut off or too long */
static inline bool
gpx_varint_get(const uint8 **p, const uint8 *end, uint64 *v)
{
	const uint8 *q = *p;
	uint64		r = 0;
	int			shift = 0;

	while (q < end)
	{
		uint8		b = *q++;

		if (shift == 63 && b > 1)
			return false;
		r |= (uint64) (b & 0x7F) << shift;
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
gpx_varint_get32(const uint8 **p, const uint8 *end, uint32 *v)
{
	uint64		r;

	if (!gpx_varint_get(p, end, &r) || r > PG_UINT32_MAX)
		return false;
	*v = (uint32) r;
	return true;
}

static inline uint64
gpx_zigzag(int64 v)
{
	return ((uint64) v << 1) ^ (uint64) (v >> 63);
}

static inline int64
gpx_unzigzag(uint64 v)
{
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

#endif							/* GPUIDX_STORE_VARINT_H */

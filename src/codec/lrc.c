/*
 * lrc.c
 *	  Linear Regression Compression (Ao et al., VLDB 2011): 256-posting
 *	  segments, each a regression line in integer fixed point plus bit-packed
 *	  non-negative deviations, so that any posting decodes alone and a search
 *	  can narrow its range with the segment's largest deviation.
 *
 * Only the encoder uses floating point (to pick a slope); the stored line is
 * evaluated in 64-bit integers, so every decoder (CPU or GPU) agrees exactly.
 */
#include "codec.h"
#include "bits.h"

#include <math.h>
#include <string.h>

typedef struct lrc_fit
{
	int64_t		intercept;
	uint64_t	slope;
	uint32_t	max_dev;
	uint32_t	width;
} lrc_fit;

/* deviations of v under slope; false when they need more than 32 bits */
static bool
lrc_try_slope(const uint32_t *v, uint32_t n, uint64_t slope, lrc_fit *fit)
{
	int64_t		min_d = INT64_MAX;
	int64_t		max_d = INT64_MIN;

	for (uint32_t i = 0; i < n; i++)
	{
		int64_t		d = (int64_t) v[i] - gpuidx_lrc_line(0, slope, i);

		if (d < min_d)
			min_d = d;
		if (d > max_d)
			max_d = d;
	}
	if ((uint64_t) (max_d - min_d) > UINT32_MAX)
		return false;
	fit->intercept = min_d;
	fit->slope = slope;
	fit->max_dev = (uint32_t) (max_d - min_d);
	fit->width = bits_width(fit->max_dev);
	return true;
}

static uint64_t
lrc_slope_from_double(double slope)
{
	double		q = slope * (double) (1 << GPUIDX_LRC_SLOPE_SHIFT);

	if (!(q > 0))
		return 0;
	if (q >= (double) GPUIDX_LRC_SLOPE_MAX)
		return GPUIDX_LRC_SLOPE_MAX;
	return (uint64_t) llround(q);
}

/*
 * The line with the narrowest deviation range among the least-squares fit,
 * the line through the end points and the flat line (always <= 32 bits).
 */
static lrc_fit
lrc_fit_segment(const uint32_t *v, uint32_t n)
{
	lrc_fit		best;
	lrc_fit		cand;
	uint64_t	slopes[2] = {0, 0};

	lrc_try_slope(v, n, 0, &best);
	if (n >= 2)
	{
		double		mean_i = (n - 1) / 2.0;
		double		mean_v = 0;
		double		sxy = 0;
		double		sxx = 0;

		for (uint32_t i = 0; i < n; i++)
			mean_v += v[i];
		mean_v /= n;
		for (uint32_t i = 0; i < n; i++)
		{
			sxy += (i - mean_i) * (v[i] - mean_v);
			sxx += (i - mean_i) * (i - mean_i);
		}
		slopes[0] = lrc_slope_from_double(sxy / sxx);
		slopes[1] = lrc_slope_from_double((double) (v[n - 1] - v[0]) / (n - 1));
	}
	for (int c = 0; c < 2; c++)
		if (slopes[c] != 0 && lrc_try_slope(v, n, slopes[c], &cand) &&
			cand.width < best.width)
			best = cand;
	return best;
}

size_t
lrc_encoded_size(const uint32_t *values, uint32_t n)
{
	uint32_t	ns = gpuidx_lrc_segment_count(n);
	uint64_t	bits = 0;

	for (uint32_t s = 0; s < ns; s++)
	{
		uint32_t	len = gpuidx_lrc_segment_len(n, s);
		lrc_fit		fit = lrc_fit_segment(values + (size_t) s * GPUIDX_LRC_SEGMENT, len);

		bits += (uint64_t) len * fit.width;
	}
	return (size_t) ns * GPUIDX_LRC_SEGMENT_SIZE + gpuidx_data_area_bytes(bits);
}

/* the segment record of v[0..n) but its bit offset */
static void
lrc_fill_segment(const uint32_t *v, uint32_t n, gpuidx_lrc_segment *seg)
{
	lrc_fit		fit = lrc_fit_segment(v, n);

	seg->first = v[0];
	seg->intercept_lo = (uint32_t) (uint64_t) fit.intercept;
	seg->intercept_hi = (uint32_t) ((uint64_t) fit.intercept >> 32);
	seg->slope_lo = (uint32_t) fit.slope;
	seg->slope_hi = (uint32_t) (fit.slope >> 32);
	seg->max_dev = fit.max_dev;
	seg->width = fit.width;
}

/* the deviations of v[0..n) under seg's line, at bit pos of a zeroed area */
static void
lrc_pack_segment(const uint32_t *v, uint32_t n, const gpuidx_lrc_segment *seg, uint8_t *data, uint64_t pos)
{
	int64_t		intercept = gpuidx_lrc_intercept(seg);
	uint64_t	slope = gpuidx_lrc_slope(seg);

	for (uint32_t i = 0; i < n; i++)
		bits_put_at(data, pos + (uint64_t) i * seg->width,
					(uint64_t) ((int64_t) v[i] - gpuidx_lrc_line(intercept, slope, i)), seg->width);
}

uint64_t
lrc_encode_segment(const uint32_t *v, uint32_t n, gpuidx_lrc_segment *seg, uint8_t *data, uint64_t pos)
{
	lrc_fill_segment(v, n, seg);
	seg->bitoff = (uint32_t) pos;
	lrc_pack_segment(v, n, seg, data, pos);
	return (uint64_t) n * seg->width;
}

size_t
lrc_encode(const uint32_t *values, uint32_t n, uint8_t *payload)
{
	uint32_t	ns = gpuidx_lrc_segment_count(n);
	gpuidx_lrc_segment *segs = (gpuidx_lrc_segment *) payload;
	uint8_t    *data = payload + (size_t) ns * GPUIDX_LRC_SEGMENT_SIZE;
	uint64_t	pos = 0;

	/* fit and fill the segment table, then pack the deviations */
	for (uint32_t s = 0; s < ns; s++)
	{
		uint32_t	len = gpuidx_lrc_segment_len(n, s);

		lrc_fill_segment(values + (size_t) s * GPUIDX_LRC_SEGMENT, len, &segs[s]);
		segs[s].bitoff = (uint32_t) pos;
		pos += (uint64_t) len * segs[s].width;
	}
	memset(data, 0, gpuidx_data_area_bytes(pos));
	for (uint32_t s = 0; s < ns; s++)
		lrc_pack_segment(values + (size_t) s * GPUIDX_LRC_SEGMENT, gpuidx_lrc_segment_len(n, s),
						 &segs[s], data, segs[s].bitoff);
	return (size_t) ns * GPUIDX_LRC_SEGMENT_SIZE + gpuidx_data_area_bytes(pos);
}

/*
 * Posting i as the 64-bit value the line and deviation give.  lrc_check
 * bounds the intercept and slope so this cannot overflow; whether it fits
 * 0 .. 2^32 - 1 is for the caller to check.
 */
static inline int64_t
lrc_value(const uint8_t *data, const gpuidx_lrc_segment *seg, uint32_t i)
{
	uint32_t	dev = bits_get(data, seg->bitoff + (uint64_t) i * seg->width, seg->width);

	return gpuidx_lrc_line(gpuidx_lrc_intercept(seg), gpuidx_lrc_slope(seg), i) + dev;
}

pl_status
lrc_check(pl_view *view, const uint8_t *payload, size_t len)
{
	uint32_t	ns = gpuidx_lrc_segment_count(view->count);
	uint64_t	bits = 0;
	size_t		area_bytes;

	if (len < (size_t) ns * GPUIDX_LRC_SEGMENT_SIZE)
		return PL_ERR_LENGTH;
	view->nblocks = ns;
	view->segs = (const gpuidx_lrc_segment *) payload;
	view->data = payload + (size_t) ns * GPUIDX_LRC_SEGMENT_SIZE;
	for (uint32_t s = 0; s < ns; s++)
	{
		const gpuidx_lrc_segment *seg = &view->segs[s];
		uint32_t	n = gpuidx_lrc_segment_len(view->count, s);
		uint64_t	room = (s + 1 < ns ? (uint64_t) view->segs[s + 1].first
							: (uint64_t) view->last + 1) - seg->first;

		if ((s + 1 < ns && view->segs[s + 1].first <= seg->first) ||
			(s + 1 == ns && view->last < seg->first) || room < n)
			return PL_ERR_STRUCTURE;
		if (seg->width > 32 || seg->bitoff != bits ||
			gpuidx_lrc_slope(seg) > GPUIDX_LRC_SLOPE_MAX ||
			bits_width(seg->max_dev) > seg->width)
			return PL_ERR_STRUCTURE;

		/*
		 * v_0 = intercept + dev_0 is the skip entry and 0 <= dev_0 <= max_dev,
		 * so an encoder's intercept lies in [first - max_dev, first]; with
		 * the slope below 2^48, no line value can then overflow int64.
		 */
		if (gpuidx_lrc_intercept(seg) > (int64_t) seg->first ||
			gpuidx_lrc_intercept(seg) < (int64_t) seg->first - (int64_t) seg->max_dev)
			return PL_ERR_STRUCTURE;
		bits += (uint64_t) n * seg->width;
		if (bits > UINT32_MAX)
			return PL_ERR_STRUCTURE;
	}
	area_bytes = len - (size_t) ns * GPUIDX_LRC_SEGMENT_SIZE;
	if (area_bytes != gpuidx_data_area_bytes(bits))
		return PL_ERR_LENGTH;
	if (bits % 64 != 0 && (bits_window(view->data, bits) & ((UINT64_C(1) << (64 - bits % 64)) - 1)) != 0)
		return PL_ERR_STRUCTURE;
	if (bits_load64(view->data + area_bytes - 8) != 0)
		return PL_ERR_STRUCTURE;
	/* each segment's line must give its skip entry back, the last the header's */
	for (uint32_t s = 0; s < ns; s++)
		if (lrc_value(view->data, &view->segs[s], 0) != (int64_t) view->segs[s].first)
			return PL_ERR_STRUCTURE;
	if (ns > 0 &&
		lrc_value(view->data, &view->segs[ns - 1],
				  gpuidx_lrc_segment_len(view->count, ns - 1) - 1) != (int64_t) view->last)
		return PL_ERR_STRUCTURE;
	view->data_bits = bits;
	return PL_OK;
}

/* the largest posting segment s may hold: below the next skip entry, or the last */
static inline uint32_t
lrc_segment_limit(const pl_view *view, uint32_t s)
{
	return s + 1 < view->nblocks ? view->segs[s + 1].first - 1 : view->last;
}

/*
 * Every posting must exceed the one before, from the skip entry (v_0, as
 * lrc_check made sure) up to the segment's limit.  When the line and the
 * widest deviation keep every value inside 0 .. 2^32 - 1 (every list an
 * encoder makes, but for a first segment whose line starts below 0) the
 * values are computed and compared as uint32; otherwise as 64-bit values,
 * so that nothing wraps into range.
 */
int
lrc_decode_block(const pl_view *view, uint32_t s, uint32_t *out)
{
	const gpuidx_lrc_segment *seg = &view->segs[s];
	uint32_t	n = gpuidx_lrc_segment_len(view->count, s);
	int64_t		intercept = gpuidx_lrc_intercept(seg);
	uint64_t	slope = gpuidx_lrc_slope(seg);
	uint64_t	mask = (UINT64_C(1) << seg->width) - 1;
	uint64_t	pos = seg->bitoff;
	int64_t		limit = lrc_segment_limit(view, s);

	if (intercept >= 0 && gpuidx_lrc_line(intercept, slope, n - 1) + (int64_t) mask <= (int64_t) UINT32_MAX)
	{
		for (uint32_t i = 0; i < n; i++, pos += seg->width)
			out[i] = (uint32_t) (gpuidx_lrc_line(intercept, slope, i) +
								 (int64_t) (bits_window(view->data, pos) & mask));
		return out[0] >= seg->first && bits_ascending_u32(out, n) && out[n - 1] <= limit ? (int) n : -1;
	}
	else
	{
		int64_t		prev = (int64_t) seg->first - 1;
		uint32_t	unordered = 0;

		for (uint32_t i = 0; i < n; i++, pos += seg->width)
		{
			int64_t		v = gpuidx_lrc_line(intercept, slope, i) +
				(int64_t) (bits_window(view->data, pos) & mask);

			unordered |= v <= prev;
			out[i] = (uint32_t) v;
			prev = v;
		}
		return unordered || prev > limit ? -1 : (int) n;
	}
}

uint32_t
lrc_get(const pl_view *view, uint32_t i)
{
	return (uint32_t) lrc_value(view->data, &view->segs[i / GPUIDX_LRC_SEGMENT], i % GPUIDX_LRC_SEGMENT);
}

/* first k in [from, n) with line(k) + extra >= x, by bisection on the line */
static uint32_t
lrc_line_reaches(int64_t intercept, uint64_t slope, int64_t extra,
				 uint32_t from, uint32_t n, uint32_t x)
{
	uint32_t	lo = from;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (gpuidx_lrc_line(intercept, slope, mid) + extra >= (int64_t) x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * First index k in [from, n) of segment s with v_k >= x, or n; v_k in
 * *value.  The line and the largest deviation bound every v_k, so only
 * [a, b) is probed: before a even line + max_dev is below x, and at b the
 * line alone reaches x.  The answer is checked as far as it can be without
 * decoding the segment: at least x, inside the segment's range, above the
 * posting before it, and (past from) that posting below x: a deviation past
 * max_dev elsewhere may have moved the window, and then the bracket shows
 * it, so that on a list in order the answer is the decode's.
 */
uint32_t
lrc_lower_bound(const pl_view *view, uint32_t s, uint32_t from, uint32_t x, uint32_t *value)
{
	const gpuidx_lrc_segment *seg = &view->segs[s];
	uint32_t	n = gpuidx_lrc_segment_len(view->count, s);
	int64_t		intercept = gpuidx_lrc_intercept(seg);
	uint64_t	slope = gpuidx_lrc_slope(seg);
	uint32_t	a = lrc_line_reaches(intercept, slope, seg->max_dev, from, n, x);
	uint32_t	b = lrc_line_reaches(intercept, slope, 0, a, n, x);
	int64_t		v;

	while (a < b)
	{
		uint32_t	mid = a + (b - a) / 2;
		int64_t		line = gpuidx_lrc_line(intercept, slope, mid);

		v = lrc_value(view->data, seg, mid);
		/* range contraction trusts max_dev: a probe that breaks it is damage */
		if (v - line > (int64_t) seg->max_dev)
			return PL_SEARCH_CORRUPT;
		if (v >= (int64_t) x)
			b = mid;
		else
			a = mid + 1;
	}
	if (a > 0)
	{
		int64_t		before = lrc_value(view->data, seg, a - 1);

		if ((a > from && before >= (int64_t) x) ||
			before - gpuidx_lrc_line(intercept, slope, a - 1) > (int64_t) seg->max_dev)
			return PL_SEARCH_CORRUPT;
		if (a == n)
			return n;
		v = lrc_value(view->data, seg, a);
		if (before >= v)
			return PL_SEARCH_CORRUPT;
	}
	else if (a == n)
		return n;
	else
		v = lrc_value(view->data, seg, a);
	if (v < (int64_t) x || v < (int64_t) seg->first || v > (int64_t) lrc_segment_limit(view, s) ||
		v - gpuidx_lrc_line(intercept, slope, a) > (int64_t) seg->max_dev)
		return PL_SEARCH_CORRUPT;
	*value = (uint32_t) v;
	return a;
}

/*
 * Every deviation must be at most max_dev, or range contraction would skip
 * postings.  Order and range are checked by decoding (pl_validate).
 */
pl_status
lrc_validate(const pl_view *view)
{
	for (uint32_t s = 0; s < view->nblocks; s++)
	{
		const gpuidx_lrc_segment *seg = &view->segs[s];
		uint32_t	n = gpuidx_lrc_segment_len(view->count, s);

		for (uint32_t i = 0; i < n; i++)
			if (bits_get(view->data, seg->bitoff + (uint64_t) i * seg->width, seg->width) > seg->max_dev)
				return PL_ERR_ORDER;
	}
	return PL_OK;
}

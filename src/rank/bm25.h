/*
 * bm25.h
 *	  Okapi BM25 with Lucene's IDF, computed in one fixed order of IEEE
 *	  double operations so that every place that scores (the row-by-row
 *	  function, the index's CPU top-k, the GPU) gets the same bits.  No
 *	  fused multiply-add may be formed from these expressions: files that
 *	  include this header are compiled with -ffp-contract=off (nvcc:
 *	  -fmad=false), and log() is only ever taken on the host.
 *
 *	 score(d, q) = sum over the distinct lexemes t of q, in bytewise order,
 *	               of idf(t) * (tf * (k1 + 1)) / (tf + norm(d))
 *	 idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
 *	 norm(d)     = k1 * ((1 - b) + b * (dl / avgdl))
 *
 * tf is the lexeme's number of positions in the document's tsvector (1 for
 * a lexeme stored without positions), dl the sum of its lexemes' tf.  No
 * PostgreSQL header: unit tests and the CUDA engine include it too.
 */
#ifndef GPUIDX_RANK_BM25_H
#define GPUIDX_RANK_BM25_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GPX_BM25_FN __host__ __device__ __forceinline__
#else
#define GPX_BM25_FN static inline
#endif

#define GPX_BM25_K1_DEFAULT		1.2
#define GPX_BM25_B_DEFAULT		0.75

/* the most positions a tsvector keeps per lexeme (MAXNUMPOS - 1): tf fits a byte */
#define GPX_MAX_TF				255

/* postings per block of the frequency stream (block maxima, tf packing) */
#define GPX_RANK_BLOCK			128

/* host only: log() may differ in its last bit between libm and CUDA */
static inline double
gpx_bm25_idf(double ndocs, double df)
{
	if (df > ndocs)
		df = ndocs;
	return log(1.0 + (ndocs - df + 0.5) / (df + 0.5));
}

GPX_BM25_FN double
gpx_bm25_norm(double k1, double b, double avgdl, uint32_t dl)
{
	double		ratio = avgdl > 0.0 ? (double) dl / avgdl : 1.0;

	return k1 * ((1.0 - b) + b * ratio);
}

GPX_BM25_FN double
gpx_bm25_term(double idf, double k1, uint32_t tf, double norm)
{
	return idf * (((double) tf * (k1 + 1.0)) / ((double) tf + norm));
}

/*
 * Block maxima keep a lower bound of the shortest document's length in one
 * byte: lengths below 16 exactly, above as 3 mantissa bits and an
 * exponent.  gpx_dl_floor(gpx_dl_code(dl)) <= dl, and both are monotone,
 * so a bound scored with it is never below a true score.
 */
GPX_BM25_FN uint32_t
gpx_dl_code(uint32_t dl)
{
	uint32_t	e;

	if (dl < 16)
		return dl;
#ifdef __CUDA_ARCH__
	e = 31 - (uint32_t) __clz((int) dl);
#else
	e = 31 - (uint32_t) __builtin_clz(dl);
#endif
	return 16 + (e - 4) * 8 + ((dl >> (e - 3)) & 7);
}

GPX_BM25_FN uint32_t
gpx_dl_floor(uint32_t code)
{
	uint32_t	e;

	if (code < 16)
		return code;
	e = (code - 16) / 8 + 4;
	return (8 + ((code - 16) & 7)) << (e - 3);
}

#endif							/* GPUIDX_RANK_BM25_H */

/*
 * accum.c
 *	  The postings accumulator: a hash table of terms, each with its
 *	  postings as delta varints, in an arena; sorted runs on a logical tape
 *	  set when the budget is reached; a k-way merge of the runs (in several
 *	  passes when there are more runs than the budget can buffer at once)
 *	  into a segment writer.
 *
 * A run is a sequence of records, one per term in increasing order:
 *
 *	 varint len (0 ends the run), term, varint df, varint first, varint last,
 *	 varint nbytes, nbytes of varints: each later posting's gap minus one
 *
 * With freqs, the nbytes are the first posting's tf (a byte), then for
 * each later posting its gap minus one and its tf: the same bytes whether
 * a list is whole or the concatenation of the runs' pieces.  With
 * positions, each posting's tf is followed by its positions record
 * (store/parse.h).
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/binaryheap.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/sharedfileset.h"
#include "utils/logtape.h"
#include "utils/memutils.h"

#include "store/accum.h"
#include "store/parse.h"
#include "store/varint.h"

#define ARENA_BLOCK		(64 * 1024)	/* at most; a sixteenth of small budgets */
#define INLINE_GAPS		8		/* gap bytes kept in the entry itself */
#define RUN_BUFFER		8192	/* read/write buffer of one run */
#define TAPE_BUFFER		BLCKSZ	/* the tape set's own buffer per tape */
#define MAX_FANIN		512
#define EMIT_BATCH		2048
#define TABLE_MIN		1024	/* slots of a new table */
#define TABLE_MAX		(((Size) 1) << 31)	/* slots; hashes are 32 bits */

typedef struct AccEntry
{
	uint32		hash;
	uint16		len;
	uint16		pad;
	uint32		df;
	uint32		first;
	uint32		last;
	uint32		nbytes;			/* gap bytes */
	uint32		cap;			/* room for them */
	uint8	   *gaps;			/* inl, or a palloc'd buffer */
	uint8		inl[INLINE_GAPS];
	char		term[FLEXIBLE_ARRAY_MEMBER];
} AccEntry;

struct GpxAccum
{
	MemoryContext ctx;			/* entries, arena, table: reset at each spill */
	MemoryContext parent;
	Size		budget;
	bool		freqs;			/* keep each posting's tf */
	bool		positions;		/* and its positions record */
	Size		used;
	Size		peak;
	char	   *arena;
	Size		arena_left;
	Size		arena_block;
	AccEntry  **table;
	Size		table_size;		/* a power of two */
	Size		table_base;		/* its size after a reset: the last run's */
	uint32		nentries;
	bool		full;			/* the table is as large as the budget allows */
	LogicalTapeSet *tapes;
	SharedFileSet *fileset;		/* parallel build: where the tapes are */
	int			fileno;			/* a participant's file in it; -1: the leader's merge */
	LogicalTape **runs;
	uint32	   *bases;			/* per run: added to its doc ids (imported runs) */
	uint32		nruns;
	uint32		runs_cap;
	uint32		spilled;		/* runs written in all (intermediate merges too) */
};

static void spill(GpxAccum *a);

static inline int
term_cmp(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

static void
note_used(GpxAccum *a, Size n)
{
	a->used += n;
}

/* the peak is of the caller's whole context: accumulator, writer, tapes */
static void
note_peak(GpxAccum *a)
{
	Size		now = MemoryContextMemAllocated(a->parent, true);

	if (now > a->peak)
		a->peak = now;
}

static void
reset_table(GpxAccum *a)
{
	MemoryContextReset(a->ctx);
	a->used = 0;
	a->arena = NULL;
	a->arena_left = 0;
	a->nentries = 0;
	a->full = false;
	a->table_size = a->table_base;
	a->table = MemoryContextAllocHuge(a->ctx, a->table_size * sizeof(AccEntry *));
	memset(a->table, 0, a->table_size * sizeof(AccEntry *));
	note_used(a, a->table_size * sizeof(AccEntry *));
}

GpxAccum *
gpx_accum_create(Size budget, bool freqs, bool positions)
{
	GpxAccum   *a = palloc0(sizeof(GpxAccum));

	if (positions && !freqs)
		elog(ERROR, "gpuidx: positions are kept only with freqs");
	a->freqs = freqs;
	a->positions = positions;
	a->parent = CurrentMemoryContext;
	a->budget = Max(budget, 64 * 1024);
	/* small blocks: the context grows in steps far below the budget */
	a->ctx = AllocSetContextCreate(CurrentMemoryContext, "gpuidx postings", 0, 8 * 1024,
								   Max(8 * 1024, Min(ALLOCSET_DEFAULT_MAXSIZE, a->budget / 32)));
	a->arena_block = Min(ARENA_BLOCK, a->budget / 16);

	/*
	 * The table starts small and doubles with the terms (memory follows the
	 * data, not the budget: a huge maintenance_work_mem costs nothing on a
	 * small table); once doubling would pass the budget, the run ends.
	 */
	a->table_base = TABLE_MIN;
	reset_table(a);
	note_peak(a);
	return a;
}

static void *
arena_alloc(GpxAccum *a, Size n)
{
	void	   *p;

	n = MAXALIGN(n);
	if (n > a->arena_left)
	{
		Size		block = Max(a->arena_block, n);

		a->arena = MemoryContextAlloc(a->ctx, block);
		a->arena_left = block;
		note_used(a, block);
	}
	p = a->arena;
	a->arena += n;
	a->arena_left -= n;
	return p;
}

static void
grow_table(GpxAccum *a)
{
	Size		size = a->table_size * 2;
	AccEntry  **t = MemoryContextAllocHuge(a->ctx, size * sizeof(AccEntry *));

	memset(t, 0, size * sizeof(AccEntry *));
	for (Size i = 0; i < a->table_size; i++)
	{
		AccEntry   *e = a->table[i];
		Size		slot;

		if (e == NULL)
			continue;
		slot = e->hash & (size - 1);
		while (t[slot])
			slot = (slot + 1) & (size - 1);
		t[slot] = e;
	}
	pfree(a->table);
	a->used -= a->table_size * sizeof(AccEntry *);
	note_used(a, size * sizeof(AccEntry *));
	a->table = t;
	a->table_size = size;
	a->table_base = size;
}

/* a gap (gap >= 0), a tf (tf > 0), or both; then the posting's positions record */
static void
append_gap(GpxAccum *a, AccEntry *e, int64 gap, uint32 tf, const uint8 *pos, uint32 poslen)
{
	int			n = (gap >= 0 ? gpx_varint_size((uint64) gap) : 0) + (tf > 0 ? 1 : 0) + poslen;

	if (e->nbytes + n > e->cap)
	{
		/* doubling, but by a quarter for long lists: no big jumps past the budget */
		uint32		cap = e->cap < 16384 ? Max(e->cap * 2, 64) : e->cap + e->cap / 4;
		uint8	   *g;

		while (cap < e->nbytes + n)
			cap *= 2;
		g = MemoryContextAllocHuge(a->ctx, cap);
		memcpy(g, e->gaps, e->nbytes);
		if (e->gaps != e->inl)
		{
			pfree(e->gaps);
			a->used -= e->cap;
		}
		note_used(a, cap);
		e->gaps = g;
		e->cap = cap;
	}
	if (gap >= 0)
		e->nbytes += gpx_varint_put(e->gaps + e->nbytes, (uint64) gap);
	if (tf > 0)
		e->gaps[e->nbytes++] = (uint8) tf;
	memcpy(e->gaps + e->nbytes, pos, poslen);
	e->nbytes += poslen;
}

void
gpx_accum_add(GpxAccum *a, const char *term, int len, uint32 doc, uint32 tf, const uint8 *pos,
			  uint32 poslen)
{
	uint32		hash = hash_bytes((const unsigned char *) term, len);
	Size		slot = hash & (a->table_size - 1);
	AccEntry   *e;

	if (a->positions != (poslen > 0) || poslen > GPX_POS_MAX_RECORD)
		elog(ERROR, "gpuidx: a posting's positions do not fit the accumulator");

	while ((e = a->table[slot]) != NULL)
	{
		if (e->hash == hash && e->len == len && memcmp(e->term, term, len) == 0)
			break;
		slot = (slot + 1) & (a->table_size - 1);
	}
	if (e == NULL)
	{
		e = arena_alloc(a, offsetof(AccEntry, term) + len);
		e->hash = hash;
		e->len = len;
		e->df = 1;
		e->first = e->last = doc;
		e->nbytes = 0;
		e->cap = INLINE_GAPS;
		e->gaps = e->inl;
		memcpy(e->term, term, len);
		a->table[slot] = e;
		if (a->freqs)
			append_gap(a, e, -1, tf, pos, poslen);
		if (++a->nentries * (Size) 2 > a->table_size)
		{
			/*
			 * Past half load the table doubles while the budget allows;
			 * after that the run ends with this document.
			 */
			if (a->table_size < TABLE_MAX &&
				a->used + a->table_size * sizeof(AccEntry *) <= a->budget - a->budget / 8)
				grow_table(a);
			else
				a->full = true;
		}
	}
	else
	{
		if (doc == e->last)
		{
			/* with freqs a document's lexemes come once each, with their tf */
			if (a->freqs)
				elog(ERROR, "gpuidx: a lexeme was added twice for one document");
			return;
		}
		Assert(doc > e->last);
		append_gap(a, e, doc - e->last - 1, a->freqs ? tf : 0, pos, poslen);
		e->df++;
		e->last = doc;
	}

	/*
	 * A document bigger than what is left of the budget (one 100 MB value
	 * can hold a million distinct words) is split: the run ends in its
	 * middle, and the merge keeps a posting that both runs hold once.
	 */
	if (a->used > a->budget || (Size) a->nentries * 10 > a->table_size * 9)
		spill(a);
}

static int
entry_cmp(const void *x, const void *y)
{
	const AccEntry *a = *(AccEntry *const *) x;
	const AccEntry *b = *(AccEntry *const *) y;

	return term_cmp(a->term, a->len, b->term, b->len);
}

/* the entries, sorted by term (in ctx) */
static AccEntry **
sorted_entries(GpxAccum *a)
{
	AccEntry  **v = MemoryContextAllocHuge(a->ctx, Max(a->nentries, 1) * sizeof(AccEntry *));
	uint32		n = 0;

	for (Size i = 0; i < a->table_size; i++)
		if (a->table[i])
			v[n++] = a->table[i];
	qsort(v, n, sizeof(AccEntry *), entry_cmp);
	return v;
}

/* ---------------------------------------------------------------------------
 * Runs on tape
 */
typedef struct RunWriter
{
	LogicalTape *tape;
	uint32		len;
	uint8		buf[RUN_BUFFER];
} RunWriter;

static void
rw_put(RunWriter *w, const void *data, Size n)
{
	const uint8 *p = data;

	while (n > 0)
	{
		Size		take = Min(n, RUN_BUFFER - w->len);

		memcpy(w->buf + w->len, p, take);
		w->len += take;
		p += take;
		n -= take;
		if (w->len == RUN_BUFFER)
		{
			LogicalTapeWrite(w->tape, w->buf, w->len);
			w->len = 0;
		}
	}
}

static void
rw_varint(RunWriter *w, uint64 v)
{
	uint8		b[GPX_VARINT_MAX];

	rw_put(w, b, gpx_varint_put(b, v));
}

static void
rw_header(RunWriter *w, const char *term, int len, uint32 df, uint32 first, uint32 last, uint64 nbytes)
{
	rw_varint(w, len);
	rw_put(w, term, len);
	rw_varint(w, df);
	rw_varint(w, first);
	rw_varint(w, last);
	rw_varint(w, nbytes);
}

/*
 * End a run.  Rewinding it for reading now gives back the tape's write
 * buffer (the read buffer comes only when the merge reads it), so runs
 * waiting for the merge cost no memory.
 */
static void
rw_finish(RunWriter *w, TapeShare *share)
{
	rw_varint(w, 0);
	if (w->len > 0)
		LogicalTapeWrite(w->tape, w->buf, w->len);
	w->len = 0;
	if (share)
		LogicalTapeFreeze(w->tape, share);	/* for the leader of a parallel build */
	else
		LogicalTapeRewindForRead(w->tape, TAPE_BUFFER);
}

static void
add_run(GpxAccum *a, LogicalTape *tape, uint32 base)
{
	MemoryContext old = MemoryContextSwitchTo(a->parent);

	if (a->nruns == a->runs_cap)
	{
		a->runs_cap = a->runs_cap ? a->runs_cap * 2 : 16;
		a->runs = a->runs ? repalloc(a->runs, a->runs_cap * sizeof(LogicalTape *))
			: palloc(a->runs_cap * sizeof(LogicalTape *));
		a->bases = a->bases ? repalloc(a->bases, a->runs_cap * sizeof(uint32))
			: palloc(a->runs_cap * sizeof(uint32));
	}
	a->bases[a->nruns] = base;
	a->runs[a->nruns++] = tape;
	if (a->tapes == NULL)
		elog(ERROR, "gpuidx: run without a tape set");
	MemoryContextSwitchTo(old);
}

static LogicalTape *
new_tape(GpxAccum *a)
{
	MemoryContext old = MemoryContextSwitchTo(a->parent);
	LogicalTape *tape;

	if (a->tapes == NULL)
		a->tapes = LogicalTapeSetCreate(false, a->fileset, a->fileset ? a->fileno : -1);
	tape = LogicalTapeCreate(a->tapes);
	MemoryContextSwitchTo(old);
	return tape;
}

/* the entries in memory (perhaps none) as a new run; share: frozen for the leader */
static LogicalTape *
write_entries(GpxAccum *a, TapeShare *share)
{
	/* tapes allocate their buffers as they go: in the accumulator's parent */
	MemoryContext old = MemoryContextSwitchTo(a->parent);
	AccEntry  **v = sorted_entries(a);
	RunWriter  *w = palloc(sizeof(RunWriter));
	LogicalTape *tape;

	w->tape = new_tape(a);
	w->len = 0;
	for (uint32 i = 0; i < a->nentries; i++)
	{
		AccEntry   *e = v[i];

		rw_header(w, e->term, e->len, e->df, e->first, e->last, e->nbytes);
		rw_put(w, e->gaps, e->nbytes);
	}
	rw_finish(w, share);
	tape = w->tape;
	pfree(w);
	a->spilled++;
	MemoryContextSwitchTo(old);
	return tape;
}

static void
spill(GpxAccum *a)
{
	add_run(a, write_entries(a, NULL), 0);
	reset_table(a);
}

void
gpx_accum_end_doc(GpxAccum *a)
{
	a->used = MemoryContextMemAllocated(a->ctx, true);
	note_peak(a);
	/* a margin for the growth of the next document's lists */
	if ((a->used > a->budget - a->budget / 8 || a->full) && a->nentries > 0)
		spill(a);
}

/* ---------------------------------------------------------------------------
 * Sources of a merge: a run on tape, or the sorted in-memory entries
 */
typedef struct Source
{
	int			order;			/* earlier docs first */
	uint32		base;			/* added to the run's doc ids */
	LogicalTape *tape;			/* NULL: memory */
	AccEntry  **mem;
	uint32		nmem;
	uint32		memnext;
	/* buffered tape input */
	uint8	   *buf;
	uint32		buflen;
	uint32		bufpos;
	/* current term */
	char		term[GPX_MAX_TERM_LEN];
	int			len;
	uint32		df;
	uint32		first;
	uint32		last;
	uint64		left;			/* gap bytes not yet consumed */
	const uint8 *memgaps;
} Source;

static bool
src_fill(Source *s)
{
	if (s->bufpos < s->buflen)
		return true;
	s->buflen = LogicalTapeRead(s->tape, s->buf, RUN_BUFFER);
	s->bufpos = 0;
	return s->buflen > 0;
}

static void
src_read(Source *s, void *dst, Size n)
{
	uint8	   *d = dst;

	while (n > 0)
	{
		Size		take;

		if (!src_fill(s))
			elog(ERROR, "gpuidx: a sorted run ended early");
		take = Min(n, s->buflen - s->bufpos);
		memcpy(d, s->buf + s->bufpos, take);
		s->bufpos += take;
		d += take;
		n -= take;
	}
}

static uint64
src_varint(Source *s)
{
	uint64		v = 0;
	int			shift = 0;
	uint8		b;

	do
	{
		src_read(s, &b, 1);
		v |= (uint64) (b & 0x7F) << shift;
		shift += 7;
	} while (b & 0x80);
	return v;
}

/* skip what is left of this term's gaps, then read the next header */
static bool
src_next(Source *s)
{
	if (s->tape == NULL)
	{
		AccEntry   *e;

		if (s->memnext >= s->nmem)
			return false;
		e = s->mem[s->memnext++];
		memcpy(s->term, e->term, e->len);
		s->len = e->len;
		s->df = e->df;
		s->first = e->first;
		s->last = e->last;
		s->left = e->nbytes;
		s->memgaps = e->gaps;
		return true;
	}
	while (s->left > 0)
	{
		uint32		take;

		if (!src_fill(s))
			elog(ERROR, "gpuidx: a sorted run ended early");
		take = (uint32) Min(s->left, (uint64) (s->buflen - s->bufpos));
		s->bufpos += take;
		s->left -= take;
	}
	s->len = (int) src_varint(s);
	if (s->len == 0)
		return false;
	if (s->len > GPX_MAX_TERM_LEN)
		elog(ERROR, "gpuidx: a sorted run is damaged");
	src_read(s, s->term, s->len);
	s->df = (uint32) src_varint(s);
	s->first = (uint32) src_varint(s) + s->base;
	s->last = (uint32) src_varint(s) + s->base;
	s->left = src_varint(s);
	return true;
}

/* up to n of the current term's gap bytes; returns how many */
static uint32
src_gap_bytes(Source *s, uint8 *dst, uint32 n)
{
	uint32		take = (uint32) Min((uint64) n, s->left);

	if (s->tape == NULL)
	{
		memcpy(dst, s->memgaps, take);
		s->memgaps += take;
	}
	else
		src_read(s, dst, take);
	s->left -= take;
	return take;
}

/*
 * Where one term's sources meet: source i continues source i - 1's postings.
 * A document split between two runs (gpx_accum_add) can give both the same
 * posting: source i's first is then dropped (returns true).  Anything else
 * out of order is damage.
 */
static bool
join_repeats(Source **same, int i, bool freqs)
{
	if (i == 0 || same[i]->first > same[i - 1]->last)
		return false;
	if (same[i]->first == same[i - 1]->last && !freqs)
		return true;
	elog(ERROR, "gpuidx: sorted runs of postings overlap");
	return false;
}

/*
 * decode the current term's postings (and tfs, with freqs) into the
 * writer, without the first if it repeats
 */
static void
src_emit(Source *s, GpxSegWriter *w, bool freqs, bool positions, uint32 *ids, uint8 *tfs,
		 StringInfo posbuf, uint8 *bytes, bool skip_first)
{
	uint32		n = 0;
	uint32		v = s->first;
	uint32		have = 0;
	uint32		pos = 0;
	bool		first = true;
	/* the most one posting takes: gap, tf, positions */
	const uint32 most = GPX_VARINT_MAX + 1 + (positions ? GPX_POS_MAX_RECORD : 0);

	resetStringInfo(posbuf);
	for (;;)
	{
		uint64		gap = 0;
		const uint8 *p;

		if (have - pos < most && s->left > 0)
		{
			memmove(bytes, bytes + pos, have - pos);
			have -= pos;
			pos = 0;
			have += src_gap_bytes(s, bytes + have, RUN_BUFFER - have);
		}
		if (!first)
		{
			if (pos == have)
				break;
			p = bytes + pos;
			if (!gpx_varint_get(&p, bytes + have, &gap))
				elog(ERROR, "gpuidx: a sorted run is damaged");
			pos = p - bytes;
			v = v + (uint32) gap + 1;
		}
		if (freqs)
		{
			if (pos == have || bytes[pos] == 0)
				elog(ERROR, "gpuidx: a sorted run is damaged");
			tfs[n] = bytes[pos++];
		}
		if (positions)
		{
			uint32		npos;

			p = bytes + pos;
			if (!gpx_pos_decode(&p, bytes + have, NULL, &npos))
				elog(ERROR, "gpuidx: a sorted run is damaged");
			if (!first || !skip_first)
				appendBinaryStringInfo(posbuf, (const char *) bytes + pos, (int) (p - (bytes + pos)));
			pos = p - bytes;
		}
		if (!first || !skip_first)
			ids[n++] = v;
		first = false;
		if (n == EMIT_BATCH)
		{
			gpx_segw_term_add(w, ids, tfs, (const uint8 *) posbuf->data, posbuf->len, n);
			resetStringInfo(posbuf);
			n = 0;
		}
	}
	gpx_segw_term_add(w, ids, tfs, (const uint8 *) posbuf->data, posbuf->len, n);
}

/*
 * copy the current term's gaps, the first posting rewritten relative to
 * prev (or left out when it repeats prev's last: its gaps follow it anyway)
 */
static void
src_copy(Source *s, RunWriter *out, bool continues, bool repeats, uint32 prev_last, uint8 *bytes)
{
	if (continues && !repeats)
		rw_varint(out, s->first - prev_last - 1);
	while (s->left > 0)
	{
		uint32		n = src_gap_bytes(s, bytes, RUN_BUFFER);

		rw_put(out, bytes, n);
	}
}

static int
heap_cmp(Datum x, Datum y, void *arg)
{
	const Source *a = (const Source *) DatumGetPointer(x);
	const Source *b = (const Source *) DatumGetPointer(y);
	int			c = term_cmp(a->term, a->len, b->term, b->len);

	/* binaryheap keeps the largest first: invert for the smallest */
	if (c == 0)
		c = a->order - b->order;
	return -c;
}

/*
 * Merge sources (in doc order) either into a new run (out != NULL) or into
 * the writer.
 */
static void
merge_sources(GpxAccum *a, Source *src, int nsrc, RunWriter *out, GpxSegWriter *w)
{
	binaryheap *heap = binaryheap_allocate(nsrc, heap_cmp, NULL);
	Source	  **same = palloc(nsrc * sizeof(Source *));
	bool	   *repeats = palloc(nsrc * sizeof(bool));
	uint32	   *ids = palloc(EMIT_BATCH * sizeof(uint32));
	uint8	   *tfs = palloc(EMIT_BATCH);
	uint8	   *bytes = palloc(RUN_BUFFER);
	StringInfoData posbuf;

	initStringInfo(&posbuf);
	for (int i = 0; i < nsrc; i++)
		if (src_next(&src[i]))
			binaryheap_add_unordered(heap, PointerGetDatum(&src[i]));
	binaryheap_build(heap);
	while (!binaryheap_empty(heap))
	{
		Source	   *top = (Source *) DatumGetPointer(binaryheap_remove_first(heap));
		int			nsame = 0;
		uint64		df = 0;

		CHECK_FOR_INTERRUPTS();
		same[nsame++] = top;
		while (!binaryheap_empty(heap))
		{
			Source	   *s = (Source *) DatumGetPointer(binaryheap_first(heap));

			if (term_cmp(s->term, s->len, top->term, top->len) != 0)
				break;
			same[nsame++] = (Source *) DatumGetPointer(binaryheap_remove_first(heap));
		}
		for (int i = 0; i < nsame; i++)
		{
			repeats[i] = join_repeats(same, i, a->freqs);
			df += same[i]->df - repeats[i];
		}
		if (out)
		{
			uint64		nbytes = 0;

			for (int i = 0; i < nsame; i++)
				nbytes += same[i]->left +
					(i > 0 && !repeats[i] ? gpx_varint_size(same[i]->first - same[i - 1]->last - 1) : 0);
			rw_header(out, top->term, top->len, (uint32) df, same[0]->first,
					  same[nsame - 1]->last, nbytes);
			for (int i = 0; i < nsame; i++)
				src_copy(same[i], out, i > 0, repeats[i], i > 0 ? same[i - 1]->last : 0, bytes);
		}
		else
		{
			gpx_segw_term_begin(w, top->term, top->len, df);
			for (int i = 0; i < nsame; i++)
				src_emit(same[i], w, a->freqs, a->positions, ids, tfs, &posbuf, bytes, repeats[i]);
			gpx_segw_term_end(w);
		}
		for (int i = 0; i < nsame; i++)
			if (src_next(same[i]))
				binaryheap_add(heap, PointerGetDatum(same[i]));
		note_peak(a);
	}
	binaryheap_free(heap);
	pfree(same);
	pfree(repeats);
	pfree(ids);
	pfree(tfs);
	pfree(bytes);
	pfree(posbuf.data);
}

static void
open_tape_source(Source *s, LogicalTape *tape, int order, uint32 base)
{
	memset(s, 0, offsetof(Source, term));
	s->order = order;
	s->base = base;
	s->tape = tape;
	s->buf = palloc(RUN_BUFFER);
	s->left = 0;
}

static void
close_source(Source *s)
{
	if (s->tape)
	{
		LogicalTapeClose(s->tape);
		pfree(s->buf);
	}
}

/*
 * Runs first .. first + n - 1 merged into a new run (share: frozen for the
 * leader of a parallel build); the inputs are closed.
 */
static LogicalTape *
merge_to_run(GpxAccum *a, uint32 first, int n, TapeShare *share)
{
	Source	   *src = palloc(n * sizeof(Source));
	RunWriter  *w = palloc(sizeof(RunWriter));
	LogicalTape *tape;

	for (int k = 0; k < n; k++)
		open_tape_source(&src[k], a->runs[first + k], k, a->bases[first + k]);
	w->tape = new_tape(a);
	w->len = 0;
	merge_sources(a, src, n, w, NULL);
	rw_finish(w, share);
	for (int k = 0; k < n; k++)
		close_source(&src[k]);
	tape = w->tape;
	a->spilled++;
	pfree(w);
	pfree(src);
	return tape;
}

/* merge consecutive runs until the rest fit one merge */
static void
reduce_runs(GpxAccum *a, int fanin)
{
	while (a->nruns > (uint32) fanin)
	{
		uint32		nout = 0;

		for (uint32 i = 0; i < a->nruns; i += fanin)
		{
			int			n = (int) Min((uint32) fanin, a->nruns - i);

			if (n == 1)
			{
				a->bases[nout] = a->bases[i];
				a->runs[nout++] = a->runs[i];
				continue;
			}
			a->runs[nout] = merge_to_run(a, i, n, NULL);
			a->bases[nout++] = 0;
		}
		a->nruns = nout;
	}
}

/* runs merged at once: their buffers take half the budget */
static int
merge_fanin(GpxAccum *a)
{
	int			fanin = (int) Min((Size) MAX_FANIN,
								  a->budget / 2 / (RUN_BUFFER + TAPE_BUFFER + sizeof(Source) + 1024));

	return Max(fanin, 2);
}

/* once runs exist, the merge's buffers get the budget: no table */
static void
drop_table(GpxAccum *a)
{
	MemoryContextReset(a->ctx);
	a->table = NULL;
	a->table_size = 0;
}

void
gpx_accum_emit(GpxAccum *a, GpxSegWriter *w)
{
	int			fanin = merge_fanin(a);
	Source	   *src;
	int			nsrc;
	AccEntry  **mem;
	MemoryContext old = MemoryContextSwitchTo(a->parent);

	if (a->nruns > 0 && a->nentries > 0)
		spill(a);
	if (a->nruns > 0)
		drop_table(a);
	mem = sorted_entries(a);

	/*
	 * A leader's tape set holds the participants' runs read-only: they are
	 * merged in one pass (a participant has 32 MB of the budget at least,
	 * so they are few).
	 */
	if (a->fileset && a->fileno < 0)
		fanin = Max(fanin, (int) a->nruns);
	/* the entries still in memory are the last source: keep room for them */
	reduce_runs(a, a->nentries > 0 ? fanin - 1 : fanin);
	nsrc = a->nruns + (a->nentries > 0 ? 1 : 0);
	src = palloc0(Max(nsrc, 1) * sizeof(Source));
	for (uint32 i = 0; i < a->nruns; i++)
		open_tape_source(&src[i], a->runs[i], i, a->bases[i]);
	if (a->nentries > 0)
	{
		Source	   *s = &src[a->nruns];

		s->order = a->nruns;
		s->mem = mem;
		s->nmem = a->nentries;
	}
	merge_sources(a, src, nsrc, NULL, w);
	for (int i = 0; i < nsrc; i++)
		close_source(&src[i]);
	pfree(src);
	a->nruns = 0;
	MemoryContextSwitchTo(old);
}

/* ---------------------------------------------------------------------------
 * Parallel build: each participant exports its documents' postings as one
 * run; the leader imports the runs in doc order and merges them.
 */
GpxAccum *
gpx_accum_create_shared(Size budget, bool freqs, bool positions, SharedFileSet *fileset, int fileno)
{
	GpxAccum   *a = gpx_accum_create(budget, freqs, positions);

	a->fileset = fileset;
	a->fileno = fileno;
	return a;
}

void
gpx_accum_export(GpxAccum *a, TapeShare *share)
{
	MemoryContext old = MemoryContextSwitchTo(a->parent);

	Assert(a->fileset != NULL && a->fileno >= 0);
	if (a->nruns == 0)
		(void) write_entries(a, share);
	else
	{
		if (a->nentries > 0)
			spill(a);
		drop_table(a);
		reduce_runs(a, merge_fanin(a));
		(void) merge_to_run(a, 0, (int) a->nruns, share);
		a->nruns = 0;
	}
	MemoryContextSwitchTo(old);
}

void
gpx_accum_import(GpxAccum *a, SharedFileSet *fileset, int fileno, TapeShare *share, uint32 base)
{
	MemoryContext old = MemoryContextSwitchTo(a->parent);
	LogicalTape *tape;

	Assert(a->nentries == 0 && (a->fileset == NULL || a->fileno < 0));
	if (a->tapes == NULL)
		a->tapes = LogicalTapeSetCreate(false, fileset, -1);
	a->fileset = fileset;
	a->fileno = -1;
	tape = LogicalTapeImport(a->tapes, fileno, share);
	LogicalTapeRewindForRead(tape, TAPE_BUFFER);
	add_run(a, tape, base);
	MemoryContextSwitchTo(old);
}

uint32
gpx_accum_runs(GpxAccum *a)
{
	return a->spilled;
}

Size
gpx_accum_peak(GpxAccum *a)
{
	return a->peak;
}

void
gpx_accum_free(GpxAccum *a)
{
	if (a->tapes)
		LogicalTapeSetClose(a->tapes);
	MemoryContextDelete(a->ctx);
	if (a->runs)
	{
		pfree(a->runs);
		pfree(a->bases);
	}
	pfree(a);
}

/*
 * page.h
 *	  Page helpers of the gpuidx index: initialising, sealing (CRC) and
 *	  checking pages, reading them with their expected tag, allocating new
 *	  ones (from the free space map or by extending) and freeing them.
 */
#ifndef GPUIDX_STORE_PAGE_H
#define GPUIDX_STORE_PAGE_H

#include "postgres.h"

#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "pg_compat.h"

#include "store/layout.h"

#define GPX_ANY_STREAM	0xFFFF
#define GPX_ANY_OWNER	PG_UINT32_MAX

/* what a reader expects of a page */
typedef struct GpxPageTag
{
	uint16		type;
	uint16		stream;			/* or GPX_ANY_STREAM */
	uint32		owner;			/* or GPX_ANY_OWNER */
	uint32		pageno;			/* or GPX_ANY_OWNER */
} GpxPageTag;

extern void gpx_page_init(Page page, uint16 type);
extern uint32 gpx_page_used(Page page);
extern void gpx_page_set_used(Page page, uint32 used);
extern void gpx_page_seal(Page page);

/* NULL if the page is a sound gpuidx page, else what is wrong with it */
extern const char *gpx_page_problem(Page page);
extern bool gpx_page_is_free(Page page);

/*
 * gpx_page_problem of a page read by gpx_read_page, its CRC recomputed
 * only if this backend has not checked that page in that buffer since it
 * last came from disk (page.c says when)
 */
extern const char *gpx_buffer_problem(Relation index, Buffer buf);

/* shared memory counting each buffer's reads from disk (shared_preload_libraries) */
extern Size gpx_page_shmem_size(void);
extern void gpx_page_shmem_init(void);

/*
 * Read and lock a page and check it against what the caller expects: a
 * damaged page is reported as index corruption; a sound page that is not
 * the expected one too, except during recovery, where it means a page was
 * recycled under a scan and the scan is cancelled instead.
 */
extern Buffer gpx_read_page(Relation index, BlockNumber blkno, int lockmode,
							const GpxPageTag *expect);
extern void gpx_check_page(Relation index, BlockNumber blkno, Page page,
						   const GpxPageTag *expect);

/*
 * Does the index have at least nblocks blocks?  The bound every block
 * number and page count read from the index is held to before it is used.
 */
extern bool gpx_index_has_blocks(Relation index, uint64 nblocks);
/* the index's file was cut shorter: the size this backend saw is asked again */
extern void gpx_forget_index_size(Relation index);

/* a new page, exclusively locked: a free one or one past the end */
extern Buffer gpx_new_buffer(Relation index, bool use_fsm);

/* write a whole page image to a locked buffer (WAL: a full image), release it */
extern void gpx_put_page(Relation index, Buffer buf, Page image, bool use_wal);

/* mark an exclusively locked page free (WAL-logged) */
extern void gpx_free_locked_page(Relation index, Buffer buf);

/* mark pages free (WAL-logged) and give them to the free space map */
extern void gpx_free_pages(Relation index, const BlockNumber *blocks, int n);
extern int	gpx_block_cmp(const void *x, const void *y);

pg_noreturn extern void gpx_report_corrupt(Relation index, BlockNumber blkno, const char *fmt,...)
			pg_attribute_printf(3, 4);

#endif							/* GPUIDX_STORE_PAGE_H */

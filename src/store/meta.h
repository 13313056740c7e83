/*
 * meta.h
 *	  The metapage: what the index holds (segments, pending area, pages
 *	  waiting to be recycled) and the configuration it was built with.
 */
#ifndef GPUIDX_STORE_META_H
#define GPUIDX_STORE_META_H

#include "store/page.h"

/* fresh metapage contents */
extern void gpx_meta_init(GpxMetaPageData *meta, uint32 kind, Oid config);

/* the metapage's contents from a page (checked) and into a page (sealed) */
extern void gpx_meta_unpack(Relation index, Page page, GpxMetaPageData *meta);
extern void gpx_meta_pack(Page page, const GpxMetaPageData *meta);

/* a checked copy of the metapage, read under a share lock */
extern void gpx_meta_read(Relation index, GpxMetaPageData *meta);

/* the metapage buffer, exclusively locked, and its contents */
extern Buffer gpx_meta_lock(Relation index, GpxMetaPageData *meta);
/* the same, share-locked */
extern Buffer gpx_meta_share(Relation index, GpxMetaPageData *meta);

/* structural checks of metapage contents (ERROR if damaged) */
extern void gpx_meta_check(Relation index, const GpxMetaPageData *meta);

extern int	gpx_meta_find_segment(const GpxMetaPageData *meta, uint32 id);
extern void gpx_meta_remove_segment(GpxMetaPageData *meta, uint32 id);

/*
 * List pages as retired, recyclable once no running scan can read them;
 * the caller made room (am/recycle.c: gpx_retired_make_room).
 */
extern void gpx_meta_retire(GpxMetaPageData *meta, uint32 kind, uint32 owner,
							BlockNumber first, BlockNumber stop);

/* "schema.name" of the configuration the index was built with */
extern char *gpx_meta_config_name(const GpxMetaPageData *meta);

#endif							/* GPUIDX_STORE_META_H */

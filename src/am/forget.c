/*
 * forget.c
 *	  What is kept across backends under an index's relfilenode (the GPU
 *	  worker's list cache, the long lists' dead-doc counts) is forgotten
 *	  when the index's storage is new (built, rebuilt, truncated: the build
 *	  writes it) or dropped, so that a relfilenode a later index takes over
 *	  can never serve the old index's lists or counts.
 */
#include "gpuidx.h"

#include "access/relation.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "store/segment.h"
#include "worker/worker.h"

static object_access_hook_type prev_object_access_hook = NULL;

void
gpx_forget_index(RelFileLocator node)
{
	gpx_cache_forget_index(node);
	gpx_dead_counts_forget_index(node);
}

static void
forget_dropped_index(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != RelationRelationId || subId != 0 ||
		get_rel_relkind(objectId) != RELKIND_INDEX)
		return;
	{
		/* the dropping command holds it locked; an index of another kind is left alone */
		Relation	index = relation_open(objectId, NoLock);

		if (index->rd_indam != NULL && index->rd_indam->ambuild == gpx_build)
			gpx_forget_index(gpx_rel_locator(index));
		relation_close(index, NoLock);
	}
}

void
gpx_forget_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = forget_dropped_index;
}

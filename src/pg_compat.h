/*
 * pg_compat.h
 *	  What differs between the PostgreSQL versions gpuidx builds against
 *	  (15, 17, 18), in one place.  Renamed types and macros keep the newest
 *	  server's names, defined here for the older ones; a call whose arguments
 *	  changed has a gpx_ wrapper.  A difference no wrapper hides stays in its
 *	  file under #if PG_VERSION_NUM.
 */
#ifndef GPUIDX_PG_COMPAT_H
#define GPUIDX_PG_COMPAT_H

#include "postgres.h"

#include "common/relpath.h"
#include "utils/rel.h"

/* 16 moved the varlena macros (VARSIZE, VARDATA...) out of postgres.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/* 18 moved ExplainState and ExplainProperty*() out of commands/explain.h */
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#else
#include "commands/explain.h"
#endif

/*
 * 16 renamed RelFileNode (spcNode, dbNode, relNode) to RelFileLocator
 * (spcOid, dbOid, relNumber) and Relation's rd_node to rd_locator
 */
#if PG_VERSION_NUM >= 160000
#define gpx_rel_locator(rel)	((rel)->rd_locator)
#define gpx_locator_number(loc) ((loc).relNumber)
#else
typedef RelFileNode RelFileLocator;
#define RelFileLocatorEquals(a, b) RelFileNodeEquals(a, b)
#define gpx_rel_locator(rel)	((rel)->rd_node)
#define gpx_locator_number(loc) ((loc).relNode)
#endif

/*
 * 17 numbers backends by their PGPROC's place (ProcNumber) both in a
 * relation's rd_backend (a BackendId before) and in MyProcNumber (MyProc's
 * pgprocno before); it moved a PGPROC's lxid into its vxid
 */
#if PG_VERSION_NUM >= 170000
#define gpx_my_lxid()			(MyProc->vxid.lxid)
#else
typedef BackendId ProcNumber;
#define MyProcNumber			(MyProc->pgprocno)
#define gpx_my_lxid()			(MyProc->lxid)
#define AmAutoVacuumWorkerProcess() IsAutoVacuumWorkerProcess()
#endif

/*
 * 18 marks functions that do not return with pg_noreturn, before the
 * declaration, in place of pg_attribute_noreturn() after it
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/* 16: the escontext that turns a syntax error into a soft one (none here) */
#if PG_VERSION_NUM >= 160000
#define gpx_qualified_name_list(string) stringToQualifiedNameList(string, NULL)
#else
#define gpx_qualified_name_list(string) stringToQualifiedNameList(string)
#endif

/* 16: ownership checks by catalog and object */
#if PG_VERSION_NUM >= 160000
#define gpx_class_ownercheck(relid, roleid) object_ownercheck(RelationRelationId, relid, roleid)
#else
#define gpx_class_ownercheck(relid, roleid) pg_class_ownercheck(relid, roleid)
#endif

/*
 * 17 ties a wait set to a resource owner (NULL: none, it lives until freed)
 * where 15 allocated it in a memory context
 */
#if PG_VERSION_NUM >= 170000
#define gpx_create_wait_set(nevents) CreateWaitEventSet(NULL, nevents)
#else
#define gpx_create_wait_set(nevents) CreateWaitEventSet(TopMemoryContext, nevents)
#endif

/*
 * 18: vacuum_delay_point() says whether it is ANALYZE's; index scans carry
 * the instrumentation behind EXPLAIN ANALYZE's "Index Searches", which the
 * access method counts as it counts the scan in the statistics
 */
#if PG_VERSION_NUM >= 180000
#define gpx_vacuum_delay_point() vacuum_delay_point(false)
#define gpx_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys)
#define gpx_count_index_scan(scan) \
	do { \
		pgstat_count_index_scan((scan)->indexRelation); \
		if ((scan)->instrument) \
			(scan)->instrument->nsearches++; \
	} while (0)
#else
#define gpx_vacuum_delay_point() vacuum_delay_point()
#define gpx_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan(heap, index, snapshot, nkeys, norderbys)
#define gpx_count_index_scan(scan) pgstat_count_index_scan((scan)->indexRelation)
#endif

/*
 * 18 counts the nodes of a path that an enable_* setting turned off
 * (disabled_nodes) apart from its cost, which it leaves alone; older
 * servers added disable_cost to the cost
 */
#if PG_VERSION_NUM >= 180000
#define gpx_cost_if_disabled(enabled) 0.0
#define gpx_path_copy_disabled(to, from) ((to)->disabled_nodes = (from)->disabled_nodes)
#else
#define gpx_cost_if_disabled(enabled) ((enabled) ? 0.0 : disable_cost)
#define gpx_path_copy_disabled(to, from) ((void) 0)
#endif

/* a relation's path, into path (MAXPGPATH): 18 returns it by value, not palloc'd */
static inline void
gpx_relpathperm(RelFileLocator locator, ForkNumber fork, char *path)
{
#if PG_VERSION_NUM >= 180000
	strlcpy(path, relpathperm(locator, fork).str, MAXPGPATH);
#else
	char	   *p = relpathperm(locator, fork);

	strlcpy(path, p, MAXPGPATH);
	pfree(p);
#endif
}

#endif							/* GPUIDX_PG_COMPAT_H */

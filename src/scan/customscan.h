/*
 * customscan.h
 *	  The gpuidx custom scan for "column @@& query" (customscan.c).
 */
#ifndef GPX_CUSTOMSCAN_H
#define GPX_CUSTOMSCAN_H

extern bool gpx_enable_customscan;

struct PlannerInfo;
struct RelOptInfo;

/*
 * estimates.c: the rows of "doc @@ tsquery" from the index, and sequential
 * scans under LIMIT or EXISTS priced by where the index says the first
 * matches lie (from the planner hook, before and after the custom paths)
 */
extern void gpx_estimate_rel_rows(struct PlannerInfo *root, struct RelOptInfo *rel);
extern void gpx_price_seqscans(struct PlannerInfo *root, struct RelOptInfo *rel);
/* and the planner reads no statistics of a gpuidx index's expression */
extern void gpx_estimates_init(void);

/* from _PG_init: the setting, the plan methods, the planner hook */
extern void gpx_customscan_init(void);
/* rankplan.c: ranked index scans stop computing junk sort keys */
extern void gpx_rankplan_init(void);

/* rankscan.c: the custom scan for ranked queries (ORDER BY doc <=> query) */
struct Plan;
extern void gpx_rankscan_init(void);
extern bool gpx_is_rank_scan(const struct Plan *plan);

#endif							/* GPX_CUSTOMSCAN_H */

/*
 * customscan.h
 *	  The gpuidx custom scan for "column @@& query" (customscan.c).
 */
#ifndef GPX_CUSTOMSCAN_H
#define GPX_CUSTOMSCAN_H

extern bool gpx_enable_customscan;

/* from _PG_init: the setting, the plan methods, the planner hook */
extern void gpx_customscan_init(void);
/* rankplan.c: ranked index scans stop computing junk sort keys */
extern void gpx_rankplan_init(void);

/* rankscan.c: the custom scan for ranked queries (ORDER BY doc <=> query) */
struct Plan;
extern void gpx_rankscan_init(void);
extern bool gpx_is_rank_scan(const struct Plan *plan);

#endif							/* GPX_CUSTOMSCAN_H */

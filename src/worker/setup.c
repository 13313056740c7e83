/*
 * setup.c
 *	  The GPU worker's set-up: its settings, the memory it lives in (the
 *	  queue segment the engine process shares, and the control block in
 *	  PostgreSQL's own shared memory, queue.h), and the supervisor's
 *	  registration.
 *
 * The postmaster creates the queue segment, a memfd, when it creates its
 * own shared memory (at start and after a crash), so every server process
 * inherits it at the same address; the supervisor gives its descriptor to
 * each engine process it execs.  After a crash the postmaster makes a new
 * one: an engine process of the old server can write only into the old.
 */
#include "gpuidx.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "store/page.h"
#include "store/segment.h"
#include "worker/gpucache.h"
#include "worker/shmem.h"

int			gpx_device = GPX_DEVICE_AUTO;
int			gpx_gpu_timeout_ms = 1000;
GpxPlacementConfig gpx_placement = {128, 16384};
int			gpx_queue_slots_setting = 256;
int			gpx_arena_kb = 64 * 1024;
int			gpx_gpu_cache_mb = 1024;
int			gpx_batch_window_us = 100;
int			gpx_batch_max_work = 8 * 1024 * 1024;
int			gpx_batch_max_requests = 1024;
int			gpx_engine_stall_ms = 10000;
int			gpx_gpu_rank_backlog = -1;
char	   *gpuidx_engine_library = NULL;

static int	cpu_ratio_threshold_setting = 128;
static int	gpu_min_postings_setting = 16384;

GpxQueueHeader *gpx_queue = NULL;
GpxQueueHeader gpx_layout;
GpxWorkerControl *gpx_control = NULL;
int			gpx_queue_fd = -1;

/* keys evicted and not yet dropped by the engine process */
#define DROP_RING 8192

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static const struct config_enum_entry device_options[] = {
	{"auto", GPX_DEVICE_AUTO, false},
	{"worker", GPX_DEVICE_WORKER, false},
	{"cpu", GPX_DEVICE_CPU, false},
	{NULL, 0, false}
};

static void
assign_ratio(int newval, void *extra)
{
	gpx_placement.cpu_ratio_threshold = (uint32) newval;
}

static void
assign_min_postings(int newval, void *extra)
{
	gpx_placement.gpu_min_postings = (uint32) newval;
}

/* only an engine installed with the server: "$libdir/NAME", or none at all */
static bool
check_engine_library(char **newval, void **extra, GucSource source)
{
	const char *name;

	if (**newval == '\0')
		return true;
	if (strncmp(*newval, "$libdir/", 8) != 0)
	{
		GUC_check_errdetail("The engine must be a library under $libdir, named \"$libdir/NAME\".");
		return false;
	}
	name = *newval + 8;
	if (*name == '\0' || strchr(name, '/') != NULL || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
	{
		GUC_check_errdetail("\"%s\" is no file name under $libdir.", name);
		return false;
	}
	return true;
}

void
gpx_engine_library_path(char *path, size_t len)
{
	if (gpuidx_engine_library == NULL || gpuidx_engine_library[0] == '\0')
		strlcpy(path, "", len);
	else
		snprintf(path, len, "%s/%s.so", pkglib_path, gpuidx_engine_library + 8);
}

void
gpx_worker_define_settings(void)
{
	DefineCustomEnumVariable("gpuidx.device",
							 "Where intersections run: the GPU worker or this backend's CPU.",
							 "auto: through the worker when its engine has a GPU; worker: through "
							 "the worker whatever its engine; cpu: always in the backend.",
							 &gpx_device, GPX_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.gpu_timeout",
							"How long a query waits for the GPU worker before answering on the CPU.",
							NULL, &gpx_gpu_timeout_ms, 1000, 1, 60000,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);

	/*
	 * What a query may ask of the worker that all share: only a superuser
	 * may take such protection away.
	 */
	DefineCustomIntVariable("gpuidx.cpu_ratio_threshold",
							"Length ratio from which an intersection round runs on the CPU.",
							"A round intersecting a list this many times longer than the shortest "
							"list, and every round after it, runs in the backend.",
							&cpu_ratio_threshold_setting, 128, 1, 1 << 30,
							PGC_SUSET, 0, NULL, assign_ratio, NULL);
	DefineCustomIntVariable("gpuidx.gpu_min_postings",
							"Shortest list length from which a query's rounds may go to the GPU.",
							NULL, &gpu_min_postings_setting, 16384, 0, INT_MAX,
							PGC_SUSET, 0, NULL, assign_min_postings, NULL);
	DefineCustomIntVariable("gpuidx.gpu_rank_backlog",
							"Postings of ranked work the GPU worker may hold at once; past it, segments are ranked in the backend "
							"(-1: wherever the measured costs say is sooner; 0: no limit).",
							"A ranked request costs the device work in proportion to its terms' postings: a busy worker "
							"would make every backend wait while their cores idle.",
							&gpx_gpu_rank_backlog, -1, -1, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("gpuidx.batch_window",
							"Longest time, in microseconds, the GPU worker holds a request to batch it with others.",
							NULL, &gpx_batch_window_us, 100, 0, 1000000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.batch_max_work",
							"Postings from which the GPU worker launches a batch without waiting.",
							NULL, &gpx_batch_max_work, 8 * 1024 * 1024, 1, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.batch_max_requests",
							"Most requests the GPU worker runs in one batch.",
							"1 runs every request alone (one launch per query).",
							&gpx_batch_max_requests, 1024, 1, 65536,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.engine_stall_timeout",
							"How long the GPU worker's engine process may make no progress before it is killed and started again.",
							"Progress: its main loop turns at least every 100 ms, and a batch finishes.",
							&gpx_engine_stall_ms, 10000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomStringVariable("gpuidx.engine_library",
							   "Shared object of the GPU engine that the GPU worker's engine process loads.",
							   "\"$libdir/NAME\", or empty for none.  When it cannot be loaded or finds no usable device, "
							   "the engine process uses the CPU engine and tries again later.",
							   &gpuidx_engine_library,
							   "$libdir/gpuidx_cuda",
							   PGC_SIGHUP,
							   0,
							   check_engine_library, NULL, NULL);

	/* the worker's memory is sized at server start: only when preloaded */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("gpuidx.worker_queue_slots",
							"Requests the GPU worker's queue holds at once.",
							NULL, &gpx_queue_slots_setting, 256, 8, 65536,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.worker_arena_size",
							"Shared memory for the lists and results of queued requests.",
							"A request that does not fit runs on the CPU.",
							&gpx_arena_kb, 64 * 1024, 1024, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.gpu_cache_size",
							"Device memory for posting lists cached by the GPU worker.",
							NULL, &gpx_gpu_cache_mb, 1024, 1, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
}

/* ---------------------------------------------------------------------------
 * Memory
 */

static Size
control_size(void)
{
	Size		size = add_size(offsetof(GpxWorkerControl, owners),
								mul_size(gpx_queue_slots_setting, sizeof(GpxSlotOwner)));

	return add_size(MAXALIGN(size), gpx_arena_struct_size((uint32) gpx_queue_slots_setting));
}

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(add_size(add_size(control_size(), gpx_cache_shmem_size((uint64) gpx_gpu_cache_mb << 20)),
											 gpx_page_shmem_size()),
									gpx_dead_counts_shmem_size()));
	gpx_cache_shmem_request();
	gpx_dead_counts_shmem_request();
}

/* the postmaster, at shared memory's reset: the old segment goes with it */
static void
queue_segment_release(int code, Datum arg)
{
	if (gpx_queue != NULL)
		(void) munmap(gpx_queue, (size_t) gpx_layout.size);
	if (gpx_queue_fd >= 0)
		close(gpx_queue_fd);
	gpx_queue = NULL;
	gpx_queue_fd = -1;
}

static void
queue_segment_create(void)
{
	GpxQueueHeader layout;
	GpxQueueHeader *h;
	int			fd;

	memset(&layout, 0, sizeof(layout));
	gpx_queue_layout(&layout, (uint32) gpx_queue_slots_setting, DROP_RING, (uint64) gpx_arena_kb * 1024);
	fd = memfd_create("gpuidx queue", MFD_CLOEXEC);
	if (fd < 0)
		ereport(FATAL, (errmsg("gpuidx: could not create the GPU worker's queue segment: %m")));
	if (ftruncate(fd, (off_t) layout.size) != 0)
		ereport(FATAL, (errmsg("gpuidx: could not size the GPU worker's queue segment to %llu bytes: %m",
							   (unsigned long long) layout.size)));
	h = mmap(NULL, (size_t) layout.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		ereport(FATAL, (errmsg("gpuidx: could not map the GPU worker's queue segment: %m")));
	/* a new memfd reads as zeros: every slot FREE, nothing serving */
	memcpy(h, &layout, sizeof(layout));
	gpx_layout = layout;
	gpx_queue = h;
	gpx_queue_fd = fd;
	gpx_worker_publish_settings();
	on_shmem_exit(queue_segment_release, (Datum) 0);
}

static void
shmem_startup(void)
{
	bool		found;
	GpxWorkerControl *ctl;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ctl = ShmemInitStruct("gpuidx worker", control_size(), &found);
	if (!found)
	{
		memset(ctl, 0, offsetof(GpxWorkerControl, owners));
		pg_atomic_init_u32(&ctl->generation, 0);
		pg_atomic_init_u32(&ctl->engine_pid, 0);
		ctl->arena_tranche = LWLockNewTrancheId();
		LWLockInitialize(&ctl->arena_lock, ctl->arena_tranche);
		for (int i = 0; i < GPX_NUM_COUNTERS; i++)
			pg_atomic_init_u64(&ctl->counters[i], 0);
		for (int i = 0; i < GPX_WAIT_BUCKETS; i++)
			pg_atomic_init_u64(&ctl->waits[i], 0);
		for (int b = 0; b < GPX_RANK_COST_BUCKETS; b++)
		{
			pg_atomic_init_u64(&ctl->rank_local_ps[0][b], 0);
			pg_atomic_init_u64(&ctl->rank_local_ps[1][b], 0);
			pg_atomic_init_u64(&ctl->rank_worker_ps[b], 0);
			pg_atomic_init_u64(&ctl->rank_explored[0][b], 0);
			pg_atomic_init_u64(&ctl->rank_explored[1][b], 0);
		}
		pg_atomic_init_u64(&ctl->rank_queue_ps, 0);
		ctl->stats_reset = GetCurrentTimestamp();
		for (int i = 0; i < gpx_queue_slots_setting; i++)
		{
			memset(&ctl->owners[i], 0, sizeof(GpxSlotOwner));
			ctl->owners[i].procno = -1;
		}
		ctl->arena_offset = MAXALIGN(offsetof(GpxWorkerControl, owners) +
									 gpx_queue_slots_setting * sizeof(GpxSlotOwner));
		gpx_control = ctl;
		gpx_arena_init(gpx_control_arena(), (uint64) gpx_arena_kb * 1024, (uint32) gpx_queue_slots_setting);
		queue_segment_create();
	}
	LWLockRegisterTranche(ctl->arena_tranche, "gpuidx_arena");
	gpx_cache_shmem_init((uint64) gpx_gpu_cache_mb << 20);
	gpx_page_shmem_init();
	gpx_dead_counts_shmem_init();
	LWLockRelease(AddinShmemInitLock);
	gpx_control = ctl;
}

/* from _PG_init, when loaded by shared_preload_libraries */
void
gpx_worker_register(void)
{
	BackgroundWorker bgw;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;

	memset(&bgw, 0, sizeof(bgw));
	/* a connection to no database: enough to show in pg_stat_activity */
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* hot standbys serve queries too */
	bgw.bgw_start_time = BgWorkerStart_ConsistentState;
	bgw.bgw_restart_time = 1;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "gpuidx");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "gpx_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "gpuidx worker");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "gpuidx worker");
	RegisterBackgroundWorker(&bgw);
}

uint32
gpx_serving_generation(void)
{
	uint32		gen;

	if (gpx_queue == NULL)
		return 0;
	gen = gpx_load_acquire32(&gpx_queue->serving);
	/* only the engine process the supervisor started last */
	return gen != 0 && gen == pg_atomic_read_u32(&gpx_control->generation) ? gen : 0;
}

int64
gpx_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
gpx_worker_publish_settings(void)
{
	__atomic_store_n(&gpx_queue->batch_window_us, (uint32) gpx_batch_window_us, __ATOMIC_RELAXED);
	__atomic_store_n(&gpx_queue->batch_max_work, (uint64) gpx_batch_max_work, __ATOMIC_RELAXED);
	__atomic_store_n(&gpx_queue->batch_max_requests, (uint32) gpx_batch_max_requests, __ATOMIC_RELAXED);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints on the slow paths of pcpu_alloc: chunk creation and release,
 * depot refill (a full magazine to a CPU) and flush (a CPU's full magazine
 * to the depot).  No addresses are recorded.  Private to the module (the
 * tracepoints are not exported to other modules): pcpu_alloc.c defines
 * them, the KUnit suite attaches probes; tracefs users see the events
 * under events/pcpu_next_alloc/ whatever the header's place.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM pcpu_next_alloc

#if !defined(_PCPU_NEXT_INTERNAL_TRACE_PCPU_ALLOC_H) || defined(TRACE_HEADER_MULTI_READ)
#define _PCPU_NEXT_INTERNAL_TRACE_PCPU_ALLOC_H

#include <linux/tracepoint.h>

TRACE_EVENT(pn_chunk_create,
	TP_PROTO(const char *cache, unsigned int bytes, unsigned int objs, int ret),
	TP_ARGS(cache, bytes, objs, ret),
	TP_STRUCT__entry(
		__string(cache, cache)
		__field(unsigned int, bytes)
		__field(unsigned int, objs)
		__field(int, ret)
	),
	TP_fast_assign(
		__assign_str(cache);
		__entry->bytes = bytes;
		__entry->objs = objs;
		__entry->ret = ret;
	),
	TP_printk("cache=%s bytes_per_cpu=%u objs=%u ret=%d", __get_str(cache),
		  __entry->bytes, __entry->objs, __entry->ret)
);

TRACE_EVENT(pn_chunk_release,
	TP_PROTO(const char *cache, unsigned int bytes, unsigned int objs),
	TP_ARGS(cache, bytes, objs),
	TP_STRUCT__entry(
		__string(cache, cache)
		__field(unsigned int, bytes)
		__field(unsigned int, objs)
	),
	TP_fast_assign(
		__assign_str(cache);
		__entry->bytes = bytes;
		__entry->objs = objs;
	),
	TP_printk("cache=%s bytes_per_cpu=%u objs=%u", __get_str(cache),
		  __entry->bytes, __entry->objs)
);

DECLARE_EVENT_CLASS(pn_depot,
	TP_PROTO(const char *cache, unsigned int full_mags),
	TP_ARGS(cache, full_mags),
	TP_STRUCT__entry(
		__string(cache, cache)
		__field(unsigned int, full_mags)
	),
	TP_fast_assign(
		__assign_str(cache);
		__entry->full_mags = full_mags;
	),
	TP_printk("cache=%s depot_full_mags=%u", __get_str(cache),
		  __entry->full_mags)
);

DEFINE_EVENT(pn_depot, pn_depot_refill,
	TP_PROTO(const char *cache, unsigned int full_mags),
	TP_ARGS(cache, full_mags)
);

DEFINE_EVENT(pn_depot, pn_depot_flush,
	TP_PROTO(const char *cache, unsigned int full_mags),
	TP_ARGS(cache, full_mags)
);

#endif /* _PCPU_NEXT_INTERNAL_TRACE_PCPU_ALLOC_H */

/*
 * define_trace.h includes TRACE_INCLUDE_PATH/TRACE_INCLUDE_FILE.h, found
 * through the module's -I$(src) (Kbuild), in tree and out of tree alike.
 */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH internal
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace_pcpu_alloc
#include <trace/define_trace.h>

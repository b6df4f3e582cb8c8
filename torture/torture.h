/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcpu_next test harness: the debugfs control plane (control.c) that
 * every component's stress and bench (torture/<component>_torture.c)
 * plugs into.  Harness only: no library file includes this.
 */
#ifndef _PCPU_NEXT_TORTURE_H
#define _PCPU_NEXT_TORTURE_H

#include <linux/bits.h>
#include <linux/types.h>
#include <linux/seq_buf.h>
#include <linux/wait.h>
#include <linux/atomic.h>
#include <pcpu_next/compat.h>

#include "../internal/core.h"

#define PN_LINE_MAX		256	/* longest accepted control line */
#define PN_NAME_MAX		24	/* longest test name, with NUL */
#define PN_MAX_DURATION_MS	(300U * 1000U)
#define PN_MAX_SIZE		(32U * 1024U)	/* __alloc_percpu_gfp limit */
#define PN_MAX_BATCH		BIT(20)
#define PN_MAX_OBJECTS		BIT(20)
#define PN_MAX_FAULTS		1000U	/* faults= is per mille */

/* How worker kthreads are placed on CPUs. */
enum pn_pin {
	PN_PIN_EACH,	/* thread i on the i-th online CPU, round robin */
	PN_PIN_NONE,	/* scheduler decides */
	PN_PIN_EVEN,	/* round robin over even-numbered online CPUs */
	PN_PIN_ONE,	/* all on the first online CPU */
	PN_PIN_RANDOM,	/* each on a random online CPU */
};

/**
 * struct pn_params - one parsed control line
 * @test: test name, NUL terminated
 * @threads: worker threads, 0 for the test's default
 * @duration_ms: run length in milliseconds, 0 for the test's default
 * @size: object size in bytes, 0 for the test's default
 * @batch: batch size, 0 for the test's default
 * @objects: objects per thread, 0 for the test's default
 * @seed: pseudo-random seed (printed with the result)
 * @pin: worker placement
 * @faults: fault-injection probability per mille (stress only), 0: none
 * @set: bitmask of PN_KEY_* that the line gave explicitly
 */
struct pn_params {
	char test[PN_NAME_MAX];
	unsigned int threads;
	unsigned int duration_ms;
	unsigned int size;
	unsigned int batch;
	unsigned int objects;
	u64 seed;
	enum pn_pin pin;
	unsigned int faults;
	unsigned int set;
};

enum pn_mode { PN_STRESS, PN_BENCH };

/**
 * struct pn_span - the measured time of one side of a bench row
 * @ns: wall time of its phases, summed (guest instructions under -icount)
 * @win: the cost model's window its phases were marked with, 0 until the
 *	 first one (scripts/cost/pn_cost.c prices what ran in it)
 */
struct pn_span {
	u64 ns;
	u32 win;
};

/**
 * struct pn_run - one stress or bench run in progress
 * @p: the parameters it was started with (defaults filled in)
 * @mode: stress or bench
 * @out: result text; the test appends key=value words (stress) or table
 *	 rows (bench) through pn_printf() and pn_bench_row()
 * @stop: set when the current phase's time is up or the run is aborted;
 *	  workers poll it through pn_should_stop()
 * @aborted: set by module unload; the run ends as soon as it can
 * @failed: set by pn_fail(); the run's verdict is FAIL
 * @wq: woken when @stop or @aborted is set
 * @rnd: per-run pseudo-random state, seeded from @p->seed
 * @go: set by pn_run_threads() once every worker exists; workers spin
 *	until then so that all of them start measuring together
 * @phase_ns: wall time between go and stop of the last pn_run_threads()
 * @span: where the next pn_run_threads() adds its phase's time, or NULL;
 *	  set by pn_span_next(), cleared by pn_run_threads()
 * @mm: the mm of the task that wrote the control line (a reference taken
 *	with get_task_mm(), dropped when the run ends), or NULL; tests that
 *	need a user address space (mmcid) use it instead of borrowing one
 */
struct pn_run {
	struct pn_params p;
	enum pn_mode mode;
	struct seq_buf out;
	bool stop;
	bool aborted;
	bool failed;
	wait_queue_head_t wq;
	u64 rnd;
	bool go;
	u64 phase_ns;
	struct pn_span *span;
	struct mm_struct *mm;
};

/**
 * struct pn_test - a test that the control plane can run
 * @name: what `test=` names
 * @desc: one line for the list file
 * @def_threads: default for threads= (0: one per online CPU)
 * @def_duration_ms: default for seconds=/ms=
 * @stress: runs a stress pass; returns 0 or -errno, calls pn_fail() on a
 *	    detected error.  NULL if the test has no stress mode.
 * @bench: runs the benchmark and prints rows; NULL if none.
 * @faults: the stress accepts faults=: it brackets its worker phase with
 *	    pn_fault_arm()/pn_fault_disarm() and checks that every injected
 *	    failure surfaced as an error and cost nothing (no leak, exact
 *	    counts).
 */
struct pn_test {
	const char *name;
	const char *desc;
	unsigned int def_threads;
	unsigned int def_duration_ms;
	int (*stress)(struct pn_run *run);
	int (*bench)(struct pn_run *run);
	bool faults;
};

/* Components register here (control.c holds the table). */
extern const struct pn_test pn_percpu_test;
extern const struct pn_test pn_tree_test;
extern const struct pn_test pn_lazy_test;
extern const struct pn_test pn_alloc_test;
extern const struct pn_test pn_mmcid_test;

/* Parser, exposed for the KUnit suite. */
int pn_parse_line(const char *line, size_t len, struct pn_params *p);
const struct pn_test *pn_find_test(const char *name);

/**
 * typedef pn_thread_fn - body of one worker kthread
 * @run: the run
 * @idx: worker index, 0..nr-1
 * @arg: the argument given to pn_run_threads()
 *
 * Loops until pn_should_stop(@run), calling cond_resched() regularly.
 * Returns 0, or -errno which pn_run_threads() reports.
 */
typedef int (*pn_thread_fn)(struct pn_run *run, unsigned int idx, void *arg);

int pn_run_threads(struct pn_run *run, unsigned int nr, enum pn_pin pin,
		   unsigned int duration_ms, pn_thread_fn fn, void *arg);

/**
 * pn_should_stop() - has the current phase ended?
 * @run: the run
 *
 * Return: true once the phase's duration elapsed or the run was aborted.
 */
static inline bool pn_should_stop(struct pn_run *run)
{
	return READ_ONCE(run->stop) || READ_ONCE(run->aborted);
}

static inline bool pn_aborted(struct pn_run *run)
{
	return READ_ONCE(run->aborted);
}

__printf(2, 3) void pn_printf(struct pn_run *run, const char *fmt, ...);
__printf(2, 3) void pn_fail(struct pn_run *run, const char *fmt, ...);
u32 pn_rand(struct pn_run *run);
u32 pn_rand_state(u64 *state);
int pn_sleep_ms(struct pn_run *run, unsigned int ms);
unsigned int pn_pick_cpu(struct pn_run *run, enum pn_pin pin, unsigned int idx);

void pn_bench_header(struct pn_run *run);
void pn_bench_row(struct pn_run *run, const char *name, u64 ops,
		  const struct pn_span *s, const char *base_name, u64 base_ops,
		  const struct pn_span *bs);

/**
 * pn_span_next() - time the next phase into @s
 * @run: the run
 * @s: the span; phases timed into one span add up, in time and in window
 *
 * Context: The run's own context, just before pn_run_threads(), which
 * takes the span whatever it returns.
 */
static inline void pn_span_next(struct pn_run *run, struct pn_span *s)
{
	run->span = s;
}

/* A run's fault window over the module's fault sites (internal/core.h). */
#ifdef CONFIG_FAULT_INJECTION
void pn_fault_arm(struct pn_run *run);
void pn_fault_disarm(struct pn_run *run);
#else
static inline void pn_fault_arm(struct pn_run *run)
{
}

static inline void pn_fault_disarm(struct pn_run *run)
{
}
#endif

/* The mmcid debugfs file (mmcid_pcpu_torture.c): parser, creation, removal. */
int pn_mmcid_parse(const char *buf, size_t len, s64 *delta);
void pn_mmcid_torture_start(void);
void pn_mmcid_torture_stop(void);

int pn_control_init(void);
void pn_control_start(void);
void pn_control_stop(void);
void pn_control_exit(void);

#endif /* _PCPU_NEXT_TORTURE_H */

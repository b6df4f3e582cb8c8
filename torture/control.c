// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next control plane: one debugfs mechanism for every stress and
 * benchmark run of the module.
 *
 *   /sys/kernel/debug/pcpu_next/
 *     list     r   one line per test: name, modes, description
 *     stress   rw  write a control line to start a stress run; read the
 *                  summary lines of the last runs (newest last)
 *     bench    rw  write a control line to start a benchmark; read the
 *                  table of the last one
 *
 *   write "test=tree threads=4 seconds=5\n"
 *        |
 *        v  pn_parse_line(): strict, bounded       -EINVAL / -ERANGE / -E2BIG
 *        v  test known, mode and faults= supported  -EINVAL / -EOPNOTSUPP
 *           (faults=: also needs CONFIG_FAULT_INJECTION)
 *   pn_ctl_lock: idle? --no--> -EBUSY
 *        | yes: state = running, queue pn_run_work on pn_wq, return count
 *        v
 *   pn_run_work (workqueue): test->stress() or test->bench()
 *        |  pn_run_threads(): N kthreads, pinned, released together,
 *        |  stopped after duration_ms or on abort (rmmod)
 *        v
 *   pn_ctl_lock: publish result text, state = idle
 *
 * Invariants:
 *  - At most one run exists at a time (pn_ctl.running under pn_ctl_lock);
 *    a second writer gets -EBUSY, never a queued run.
 *  - The writer never waits for the run and the run holds no reference on
 *    the module, so rmmod during a run is possible.  pn_control_stop()
 *    first removes the control files (debugfs waits for callers already
 *    inside a file operation), then sets run->aborted and destroys the
 *    workqueue: every wait in a run is bounded by pn_should_stop(), so the
 *    run ends promptly and publishes "ABORTED".  Only then do the
 *    components tear down, so a run never sees a component half gone.
 *  - Worker kthreads never outlive pn_run_threads(): it holds a task
 *    reference on each and kthread_stop()s all of them before returning.
 *
 * Memory ordering: run->stop, run->go and run->aborted are plain flags set
 * with WRITE_ONCE() and polled with READ_ONCE(); they carry no data.  The
 * data a worker produces is handed back through kthread_stop(), which
 * waits for the worker to exit and so orders its stores before the
 * controller's loads.
 *
 * Fault injection.  The sites and their fault_attrs belong to the module
 * core (core.c, internal/core.h).  A stress line with faults=N (per mille)
 * arms every site for the worker phase of a test that supports it:
 * pn_fault_arm() resets the per-site counts and sets probability
 * DIV_ROUND_UP(N, 10) percent (the framework draws in percent: multiples
 * of ten are exact, any N > 0 stays above 0), times -1 (unlimited), no
 * task filter, no space; pn_fault_disarm() restores the load-time
 * defaults, both from the run's controller, so at most one window is open
 * at a time.  should_fail() draws from get_random_u32_below(), so an
 * injected fault is not reproducible from the seed (thread interleaving
 * is not either).  The test reads the counts after its workers stopped
 * (kthread_stop() orders their increments) and checks them against the
 * errors it saw; the summary line ends with
 * injected=chunk:a,ctor:b,upgrade:c,mmcid:d.  A kernel without
 * CONFIG_FAULT_INJECTION refuses faults= with -EOPNOTSUPP, like a test
 * without fault support.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/ctype.h>
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "torture.h"

#define PN_OUT_SIZE		8192	/* result text of one run */
#define PN_STRESS_HISTORY	16	/* summary lines kept for the stress file */

static const struct pn_test *const pn_tests[] = {
	&pn_percpu_test,
	&pn_alloc_test,
	&pn_tree_test,
	&pn_lazy_test,
	&pn_mmcid_test,
};

enum pn_key {
	PN_KEY_TEST,
	PN_KEY_THREADS,
	PN_KEY_SECONDS,
	PN_KEY_MS,
	PN_KEY_SIZE,
	PN_KEY_BATCH,
	PN_KEY_OBJECTS,
	PN_KEY_SEED,
	PN_KEY_PIN,
	PN_KEY_FAULTS,
	PN_NR_KEYS,
};

static const char *const pn_key_names[PN_NR_KEYS] = {
	[PN_KEY_TEST] = "test",
	[PN_KEY_THREADS] = "threads",
	[PN_KEY_SECONDS] = "seconds",
	[PN_KEY_MS] = "ms",
	[PN_KEY_SIZE] = "size",
	[PN_KEY_BATCH] = "batch",
	[PN_KEY_OBJECTS] = "objects",
	[PN_KEY_SEED] = "seed",
	[PN_KEY_PIN] = "pin",
	[PN_KEY_FAULTS] = "faults",
};

static const char *const pn_pin_names[] = {
	[PN_PIN_EACH] = "each",
	[PN_PIN_NONE] = "none",
	[PN_PIN_EVEN] = "even",
	[PN_PIN_ONE] = "one",
	[PN_PIN_RANDOM] = "random",
};

/*
 * pn_ctl_lock protects everything in pn_ctl: whether a run is active, the
 * run itself while it is being published, and the result texts that the
 * read side formats.
 */
static DEFINE_MUTEX(pn_ctl_lock);

static struct {
	bool running;
	bool dying;
	struct pn_run *run;
	char *stress_hist[PN_STRESS_HISTORY];
	unsigned int stress_next;
	char *bench_last;
} pn_ctl;

static struct workqueue_struct *pn_wq;
static struct dentry *pn_files[3];	/* list, stress, bench */

const struct pn_test *pn_find_test(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pn_tests); i++)
		if (!strcmp(pn_tests[i]->name, name))
			return pn_tests[i];
	return NULL;
}

/* Parse a decimal number in [min, max]; -EINVAL for syntax, -ERANGE else. */
static int pn_parse_uint(const char *s, unsigned int min, unsigned int max,
			 unsigned int *out)
{
	unsigned int v;
	int ret;

	ret = kstrtouint(s, 10, &v);
	if (ret)
		return ret;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int pn_parse_word(char *key, char *val, struct pn_params *p)
{
	unsigned int k, secs, i;
	int ret;

	for (k = 0; k < PN_NR_KEYS; k++)
		if (!strcmp(key, pn_key_names[k]))
			break;
	if (k == PN_NR_KEYS || !*val)
		return -EINVAL;
	if (p->set & BIT(k))
		return -EINVAL;		/* duplicate key */
	p->set |= BIT(k);

	switch (k) {
	case PN_KEY_TEST:
		if (strlen(val) >= PN_NAME_MAX)
			return -EINVAL;
		for (i = 0; val[i]; i++)
			if (!islower(val[i]) && !isdigit(val[i]) && val[i] != '_')
				return -EINVAL;
		strscpy(p->test, val, sizeof(p->test));
		return 0;
	case PN_KEY_THREADS:
		return pn_parse_uint(val, 1, 4 * nr_cpu_ids, &p->threads);
	case PN_KEY_SECONDS:
		ret = pn_parse_uint(val, 1, PN_MAX_DURATION_MS / 1000, &secs);
		if (!ret)
			p->duration_ms = secs * 1000;
		return ret;
	case PN_KEY_MS:
		return pn_parse_uint(val, 1, PN_MAX_DURATION_MS, &p->duration_ms);
	case PN_KEY_SIZE:
		return pn_parse_uint(val, 1, PN_MAX_SIZE, &p->size);
	case PN_KEY_BATCH:
		return pn_parse_uint(val, 1, PN_MAX_BATCH, &p->batch);
	case PN_KEY_OBJECTS:
		return pn_parse_uint(val, 1, PN_MAX_OBJECTS, &p->objects);
	case PN_KEY_SEED:
		return kstrtou64(val, 10, &p->seed);
	case PN_KEY_PIN:
		for (i = 0; i < ARRAY_SIZE(pn_pin_names); i++) {
			if (!strcmp(val, pn_pin_names[i])) {
				p->pin = i;
				return 0;
			}
		}
		return -EINVAL;
	case PN_KEY_FAULTS:
		return pn_parse_uint(val, 0, PN_MAX_FAULTS, &p->faults);
	}
	return -EINVAL;
}

/**
 * pn_parse_line() - parse one control line strictly
 * @line: the bytes written, not necessarily NUL terminated
 * @len: their number
 * @p: filled in on success (and clobbered on failure)
 *
 * The line is one or more "key=value" words separated by single blanks,
 * optionally ended by one newline.  Keys may not repeat; test= is
 * required; seconds= and ms= exclude each other.  Only printable ASCII is
 * accepted.
 *
 * Context: Any context that may allocate nothing; does not sleep.
 * Return: 0; -E2BIG if @len is PN_LINE_MAX or more; -ERANGE if a number
 * overflows or lies outside its bounds; -EINVAL for anything else.
 */
int pn_parse_line(const char *line, size_t len, struct pn_params *p)
{
	char buf[PN_LINE_MAX];
	char *cur, *word;
	size_t i;
	int ret;

	memset(p, 0, sizeof(*p));
	if (len >= PN_LINE_MAX)
		return -E2BIG;
	if (len && line[len - 1] == '\n')
		len--;
	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (line[i] < 0x20 || line[i] > 0x7e)
			return -EINVAL;
	if (line[0] == ' ' || line[len - 1] == ' ')
		return -EINVAL;
	memcpy(buf, line, len);
	buf[len] = '\0';

	cur = buf;
	while ((word = strsep(&cur, " ")) != NULL) {
		char *eq = strchr(word, '=');

		if (!eq || eq == word)
			return -EINVAL;	/* empty word, or no key */
		*eq = '\0';
		ret = pn_parse_word(word, eq + 1, p);
		if (ret)
			return ret;
	}
	if (!(p->set & BIT(PN_KEY_TEST)))
		return -EINVAL;
	if ((p->set & BIT(PN_KEY_SECONDS)) && (p->set & BIT(PN_KEY_MS)))
		return -EINVAL;
	return 0;
}

/* ---- a run's fault window ------------------------------------------------ */

#ifdef CONFIG_FAULT_INJECTION
/**
 * pn_fault_arm() - open the fault-injection window of a run
 * @run: the run; nothing happens unless it was started with faults=N
 *
 * Resets the per-site counts, then makes every site fail with
 * probability DIV_ROUND_UP(N, 10) percent until pn_fault_disarm():
 * should_fail() draws in percent, so N per mille is rounded up to the
 * next multiple of ten (exact for multiples of ten, and N > 0 never
 * becomes 0).  Unlimited times, no task filter, no space, no interval:
 * the run owns the attrs, whatever debugfs said before.
 *
 * Context: The run's controller thread.
 */
void pn_fault_arm(struct pn_run *run)
{
	unsigned long pct = DIV_ROUND_UP(run->p.faults, PN_MAX_FAULTS / 100);
	unsigned int i;

	if (!run->p.faults)
		return;
	for (i = 0; i < PN_FAULT_NR_SITES; i++) {
		struct fault_attr *attr = pn_fault_attr(i);

		pn_fault_attr_reset(attr);
		pn_fault_reset_count(i);
		atomic_set(&attr->times, -1);
		WRITE_ONCE(attr->probability, pct);
	}
}

/**
 * pn_fault_disarm() - close the fault-injection window
 * @run: the run
 *
 * Restores every site's attr to the module's defaults (probability 0).
 * Sites that already decided to fail still do; the caller waits for
 * those (stops its workers, flushes its work items) before it reads
 * pn_fault_injected().
 *
 * Context: The run's controller thread.
 */
void pn_fault_disarm(struct pn_run *run)
{
	unsigned int i;

	for (i = 0; i < PN_FAULT_NR_SITES; i++)
		pn_fault_attr_reset(pn_fault_attr(i));
}
#endif

/* ---- helpers for tests -------------------------------------------------- */

/* seq_buf_vprintf() is not exported; format into the buffer directly. */
static __printf(2, 0) void pn_vprintf(struct pn_run *run, const char *fmt,
					 va_list args)
{
	size_t room;
	char *buf;
	int len;

	room = seq_buf_get_buf(&run->out, &buf);
	len = vsnprintf(buf, room, fmt, args);
	seq_buf_commit(&run->out, len < room ? len : -1);
}

/**
 * pn_printf() - append to the run's result text
 * @run: the run
 * @fmt: printf format
 *
 * Context: The run's controller thread.
 */
void pn_printf(struct pn_run *run, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	pn_vprintf(run, fmt, args);
	va_end(args);
}

/**
 * pn_fail() - mark the run failed and say why in its result
 * @run: the run
 * @fmt: printf format of an "error=" value, without blanks
 *
 * Context: The run's controller thread.
 */
void pn_fail(struct pn_run *run, const char *fmt, ...)
{
	va_list args;

	WRITE_ONCE(run->failed, true);
	pn_printf(run, "error=");
	va_start(args, fmt);
	pn_vprintf(run, fmt, args);
	va_end(args);
	pn_printf(run, " ");
}

/* xorshift64*: reproducible from the seed printed with every result. */
u32 pn_rand_state(u64 *state)
{
	u64 x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (x * 0x2545f4914f6cdd1dULL) >> 32;
}

u32 pn_rand(struct pn_run *run)
{
	return pn_rand_state(&run->rnd);
}

/**
 * pn_sleep_ms() - sleep, but wake early when the run is aborted
 * @run: the run
 * @ms: how long
 *
 * Context: Process context, may sleep.
 * Return: 0, or -EINTR if the run was aborted.
 */
int pn_sleep_ms(struct pn_run *run, unsigned int ms)
{
	wait_event_timeout(run->wq, pn_aborted(run), msecs_to_jiffies(ms));
	return pn_aborted(run) ? -EINTR : 0;
}

static unsigned int pn_nth_online(unsigned int n, bool even)
{
	unsigned int cpu, seen = 0, nr = 0;

	for_each_online_cpu(cpu)
		if (!even || !(cpu & 1))
			nr++;
	if (!nr)
		return cpumask_first(cpu_online_mask);
	n %= nr;
	for_each_online_cpu(cpu) {
		if (even && (cpu & 1))
			continue;
		if (seen++ == n)
			return cpu;
	}
	return cpumask_first(cpu_online_mask);
}

/**
 * pn_pick_cpu() - the CPU a worker is placed on
 * @run: the run (for the random placement)
 * @pin: placement policy
 * @idx: worker index
 *
 * Context: Process context.  The CPU may go offline at any time after;
 * the scheduler then moves the worker.
 * Return: a CPU number, or nr_cpu_ids for "no placement".
 */
unsigned int pn_pick_cpu(struct pn_run *run, enum pn_pin pin, unsigned int idx)
{
	unsigned int cpu;

	cpus_read_lock();
	switch (pin) {
	case PN_PIN_EACH:
		cpu = pn_nth_online(idx, false);
		break;
	case PN_PIN_EVEN:
		cpu = pn_nth_online(idx, true);
		break;
	case PN_PIN_ONE:
		cpu = cpumask_first(cpu_online_mask);
		break;
	case PN_PIN_RANDOM:
		cpu = pn_nth_online(pn_rand(run), false);
		break;
	default:
		cpu = nr_cpu_ids;
		break;
	}
	cpus_read_unlock();
	return cpu;
}

struct pn_worker {
	struct pn_run *run;
	pn_thread_fn fn;
	void *arg;
	unsigned int idx;
	unsigned int cpu;
	atomic_t *ready;
	atomic_t *done;
	struct task_struct *task;
};

static int pn_worker_main(void *data)
{
	struct pn_worker *w = data;
	struct pn_run *run = w->run;
	int ret;

	/*
	 * The worker pins itself: since 6.14 a kthread's first run resets
	 * an affinity set before it (kthread_affine_node()).
	 */
	if (w->cpu < nr_cpu_ids)
		set_cpus_allowed_ptr(current, cpumask_of(w->cpu));
	atomic_inc(w->ready);
	wake_up(&run->wq);
	while (!READ_ONCE(run->go) && !pn_should_stop(run))
		schedule_timeout_uninterruptible(1);
	ret = w->fn(run, w->idx, w->arg);
	atomic_inc(w->done);
	wake_up(&run->wq);
	/* kthread_stop() collects the result; wait for it. */
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/*
 * The cost model's window marker (scripts/cost/pn_cost.c): a NOP that
 * QEMU's plugin recognises, RAX = (window << 1) | end.  The plugin adds
 * up windows of one id, so ids start from the load time in
 * microseconds (pn_control_init()): a reload does not reuse them.
 * Elsewhere than x86-64 nothing is marked.
 */
static atomic_t pn_win_seq = ATOMIC_INIT(0);

static void pn_span_mark(struct pn_span *s, bool end)
{
	if (!s)
		return;
	if (!s->win)
		s->win = atomic_inc_return(&pn_win_seq);
#ifdef CONFIG_X86_64
	asm volatile("nopl 0x4b4d4e50(%%rax)" : : "a" (((u64)s->win << 1) | end) : "memory");
#endif
}

/**
 * pn_run_threads() - run a phase of @nr workers for @duration_ms
 * @run: the run
 * @nr: number of workers, at least 1
 * @pin: their placement
 * @duration_ms: how long the phase lasts; 0 means until every worker
 *	returned by itself (bounded work).  Either way the phase ends early
 *	when all workers returned or the run is aborted.
 * @fn: worker body
 * @arg: passed to @fn
 *
 * All workers are created first, and released together once every one of
 * them is running, so that measured phases start at the same moment;
 * run->phase_ns holds the wall time between release and the stop signal
 * (or the last return).  If pn_span_next() named a span, that time is
 * added to it and the phase is marked as its window for the cost model.
 *
 * Context: Process context, may sleep.
 * Return: 0, -EINTR if the run was aborted, -ENOMEM, or the first
 * non-zero value a worker returned.
 */
int pn_run_threads(struct pn_run *run, unsigned int nr, enum pn_pin pin,
		   unsigned int duration_ms, pn_thread_fn fn, void *arg)
{
	struct pn_span *span = run->span;	/* this phase's, on every path */
	struct pn_worker *w;
	unsigned int i, started = 0;
	atomic_t ready = ATOMIC_INIT(0), done = ATOMIC_INIT(0);
	unsigned long timeout;
	u64 t0;
	int ret = 0, r;

	run->span = NULL;

	w = kcalloc(nr, sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	WRITE_ONCE(run->go, false);
	WRITE_ONCE(run->stop, false);

	for (i = 0; i < nr; i++) {
		unsigned int cpu = pn_pick_cpu(run, pin, i);
		struct task_struct *t;

		w[i].run = run;
		w[i].fn = fn;
		w[i].arg = arg;
		w[i].idx = i;
		w[i].cpu = cpu;
		w[i].ready = &ready;
		w[i].done = &done;
		t = kthread_create(pn_worker_main, &w[i], "pcpu_next/%u", i);
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			goto stop;
		}
		get_task_struct(t);
		w[i].task = t;
		wake_up_process(t);
		started++;
	}

	/*
	 * Every worker must have entered its body before the clock starts:
	 * on a loaded machine a phase could otherwise end before a worker
	 * ever ran (and kthread_stop() would report -EINTR for it).
	 */
	wait_event(run->wq, pn_aborted(run) || atomic_read(&ready) == started);
	pn_span_mark(span, false);
	t0 = ktime_get_ns();
	WRITE_ONCE(run->go, true);
	timeout = duration_ms ? msecs_to_jiffies(duration_ms) : MAX_SCHEDULE_TIMEOUT;
	wait_event_timeout(run->wq, pn_aborted(run) ||
			   atomic_read(&done) == started, timeout);
	run->phase_ns = ktime_get_ns() - t0;
	pn_span_mark(span, true);
	if (span)
		span->ns += run->phase_ns;

stop:
	WRITE_ONCE(run->stop, true);
	for (i = 0; i < started; i++) {
		r = kthread_stop(w[i].task);
		put_task_struct(w[i].task);
		if (r && !ret)
			ret = r;
	}
	kfree(w);
	if (!ret && pn_aborted(run))
		ret = -EINTR;
	return ret;
}

/* ---- bench output --------------------------------------------------------- */

void pn_bench_header(struct pn_run *run)
{
	pn_printf(run, "# %-28s %14s  %-28s %14s %9s\n",
		  "case", "ops/s", "kernel baseline", "base ops/s", "ratio");
}

static u64 pn_rate(u64 ops, u64 ns)
{
	return ns ? mul_u64_u64_div_u64(ops, NSEC_PER_SEC, ns) : 0;
}

/**
 * pn_bench_row() - print one benchmark row and its ratio to the baseline
 * @run: the run
 * @name: what was measured
 * @ops: operations done
 * @s: in this time
 * @base_name: the kernel facility it is compared with
 * @base_ops: operations the baseline did
 * @bs: in this time
 *
 * The ratio is (ops/ns) / (base_ops/base_ns): above 1.00 means faster than
 * the kernel.  Under an emulator only the ratio is meaningful.  When both
 * sides were marked, a line "# window W ops N window W ops N" comes
 * first: scripts/bench_cost.py prices the row from the plugin's counts.
 *
 * Context: Process context.
 */
void pn_bench_row(struct pn_run *run, const char *name, u64 ops,
		  const struct pn_span *s, const char *base_name, u64 base_ops,
		  const struct pn_span *bs)
{
	u64 rate = pn_rate(ops, s->ns), base = pn_rate(base_ops, bs->ns);
	u64 ratio100 = base ? div64_u64(rate * 100 + base / 2, base) : 0;

	if (s->win && bs->win)
		pn_printf(run, "# window %u ops %llu window %u ops %llu\n",
			  s->win, ops, bs->win, base_ops);

	pn_printf(run, "%-30s %14llu  %-28s %14llu %6llu.%02llu\n", name, rate,
		  base_name, base, ratio100 / 100, ratio100 % 100);
}

/* ---- the run ---------------------------------------------------------------- */

static void pn_fill_defaults(struct pn_run *run, const struct pn_test *t)
{
	struct pn_params *p = &run->p;

	if (!p->threads)
		p->threads = t->def_threads ? min(t->def_threads, 4 * nr_cpu_ids) :
			     num_online_cpus();
	if (!p->duration_ms)
		p->duration_ms = t->def_duration_ms ? : 1000;
	if (!(p->set & BIT(PN_KEY_SEED)))
		p->seed = get_random_u64();
	run->rnd = p->seed;
}

static void pn_run_work_fn(struct work_struct *work);
static DECLARE_WORK(pn_run_work, pn_run_work_fn);

static void pn_run_work_fn(struct work_struct *work)
{
	struct pn_run *run = pn_ctl.run;
	const struct pn_test *t = pn_find_test(run->p.test);
	const char *verdict;
	char *text = NULL;
	int ret;

	pn_fill_defaults(run, t);
	if (run->mode == PN_STRESS) {
		pn_printf(run, "stress test=%s threads=%u ms=%u pin=%s seed=%llu ",
			  t->name, run->p.threads, run->p.duration_ms,
			  pn_pin_names[run->p.pin], run->p.seed);
		ret = t->stress(run);
		if (run->p.faults) {
			unsigned int i;

			pn_fault_disarm(run);	/* even if the test bailed out */
			pn_printf(run, "injected=");
			for (i = 0; i < PN_FAULT_NR_SITES; i++)
				pn_printf(run, "%s%s:%lu", i ? "," : "",
					  pn_fault_name(i), pn_fault_injected(i));
			pn_printf(run, " ");
		}
	} else {
		pn_printf(run, "# bench test=%s threads=%u ms=%u online=%u possible=%u ",
			  t->name, run->p.threads, run->p.duration_ms,
			  num_online_cpus(), num_possible_cpus());
		pn_printf(run, "(ratios only are meaningful under an emulator)\n");
		pn_bench_header(run);
		ret = t->bench(run);
	}

	if (pn_aborted(run))
		verdict = "ABORTED";
	else if (ret || run->failed)
		verdict = "FAIL";
	else
		verdict = "PASS";
	if (ret && !pn_aborted(run))
		pn_printf(run, "ret=%d ", ret);
	if (run->mode == PN_STRESS)
		pn_printf(run, "%s\n", verdict);
	else
		pn_printf(run, "# %s\n", verdict);
	if (seq_buf_has_overflowed(&run->out))
		pn_printf(run, "# output truncated\n");

	text = kstrdup(run->out.buffer, GFP_KERNEL);
	if (run->mm)
		mmput(run->mm);	/* may be the last user: exit_mmap() here */

	mutex_lock(&pn_ctl_lock);
	if (run->mode == PN_STRESS) {
		kfree(pn_ctl.stress_hist[pn_ctl.stress_next]);
		pn_ctl.stress_hist[pn_ctl.stress_next] = text;
		pn_ctl.stress_next = (pn_ctl.stress_next + 1) % PN_STRESS_HISTORY;
	} else {
		kfree(pn_ctl.bench_last);
		pn_ctl.bench_last = text;
	}
	kfree(run->out.buffer);
	kfree(run);
	pn_ctl.run = NULL;
	pn_ctl.running = false;
	mutex_unlock(&pn_ctl_lock);
}

static ssize_t pn_ctl_write(struct file *file, const char __user *ubuf,
			    size_t count, loff_t *ppos, enum pn_mode mode)
{
	char buf[PN_LINE_MAX];
	const struct pn_test *t;
	struct pn_run *run;
	char *out;
	int ret;

	if (*ppos)
		return -EINVAL;		/* one line, one write */
	if (count >= PN_LINE_MAX)
		return -E2BIG;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;

	run = kzalloc_obj(*run, GFP_KERNEL);
	out = kzalloc(PN_OUT_SIZE, GFP_KERNEL);
	if (!run || !out) {
		ret = -ENOMEM;
		goto err;
	}
	ret = pn_parse_line(buf, count, &run->p);
	if (ret)
		goto err;
	t = pn_find_test(run->p.test);
	if (!t || !(mode == PN_STRESS ? t->stress : t->bench)) {
		ret = -EINVAL;
		goto err;
	}
	if ((run->p.set & BIT(PN_KEY_FAULTS)) &&
	    (mode != PN_STRESS || !t->faults ||
	     !IS_ENABLED(CONFIG_FAULT_INJECTION))) {
		ret = -EOPNOTSUPP;
		goto err;
	}
	run->mode = mode;
	seq_buf_init(&run->out, out, PN_OUT_SIZE);
	init_waitqueue_head(&run->wq);

	mutex_lock(&pn_ctl_lock);
	if (pn_ctl.running || pn_ctl.dying) {
		mutex_unlock(&pn_ctl_lock);
		ret = -EBUSY;
		goto err;
	}
	run->mm = get_task_mm(current);
	pn_ctl.running = true;
	pn_ctl.run = run;
	queue_work(pn_wq, &pn_run_work);
	mutex_unlock(&pn_ctl_lock);
	return count;

err:
	kfree(out);
	kfree(run);
	return ret;
}

static void pn_show_running(struct seq_file *m)
{
	if (pn_ctl.running)
		seq_printf(m, "RUNNING test=%s\n", pn_ctl.run->p.test);
}

static int pn_stress_show(struct seq_file *m, void *v)
{
	unsigned int i;

	mutex_lock(&pn_ctl_lock);
	for (i = 0; i < PN_STRESS_HISTORY; i++) {
		const char *s = pn_ctl.stress_hist[(pn_ctl.stress_next + i) %
						   PN_STRESS_HISTORY];
		if (s)
			seq_puts(m, s);
	}
	pn_show_running(m);
	mutex_unlock(&pn_ctl_lock);
	return 0;
}

static int pn_bench_show(struct seq_file *m, void *v)
{
	mutex_lock(&pn_ctl_lock);
	if (pn_ctl.bench_last)
		seq_puts(m, pn_ctl.bench_last);
	pn_show_running(m);
	mutex_unlock(&pn_ctl_lock);
	return 0;
}

static int pn_list_show(struct seq_file *m, void *v)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pn_tests); i++) {
		const struct pn_test *t = pn_tests[i];
		char modes[24];

		snprintf(modes, sizeof(modes), "%s%s",
			 t->stress && t->bench ? "stress,bench" :
			 t->stress ? "stress" : "bench",
			 t->faults ? ",faults" : "");
		seq_printf(m, "%-10s %-19s %s\n", t->name, modes, t->desc);
	}
	return 0;
}

static int pn_stress_open(struct inode *inode, struct file *file)
{
	return single_open(file, pn_stress_show, NULL);
}

static int pn_bench_open(struct inode *inode, struct file *file)
{
	return single_open(file, pn_bench_show, NULL);
}

static ssize_t pn_stress_write(struct file *file, const char __user *buf,
			       size_t count, loff_t *ppos)
{
	return pn_ctl_write(file, buf, count, ppos, PN_STRESS);
}

static ssize_t pn_bench_write(struct file *file, const char __user *buf,
			      size_t count, loff_t *ppos)
{
	return pn_ctl_write(file, buf, count, ppos, PN_BENCH);
}

/*
 * .owner pins the module while a control file is open: debugfs calls the
 * release op through these (module) structures even after the file was
 * removed.  A run does not keep the file open, so rmmod during a run works;
 * debugfs_remove() in pn_control_stop() waits for operations in progress.
 */
static const struct file_operations pn_stress_fops = {
	.owner = THIS_MODULE,
	.open = pn_stress_open,
	.read = seq_read,
	.write = pn_stress_write,
	.llseek = seq_lseek,
	.release = single_release,
};

static const struct file_operations pn_bench_fops = {
	.owner = THIS_MODULE,
	.open = pn_bench_open,
	.read = seq_read,
	.write = pn_bench_write,
	.llseek = seq_lseek,
	.release = single_release,
};

DEFINE_SHOW_ATTRIBUTE(pn_list);

/**
 * pn_control_init() - create the workqueue and the debugfs directory
 *
 * Components may put their own files below pn_debugfs_dir() after this;
 * the control files themselves appear only with pn_control_start(), once
 * every component is ready to be run.
 *
 * Context: Module init.
 * Return: 0 or -ENOMEM.
 */
int pn_control_init(void)
{
	pn_wq = alloc_workqueue("pcpu_next", WQ_UNBOUND, 1);
	if (!pn_wq)
		return -ENOMEM;
	atomic_set(&pn_win_seq, (u32)div_u64(ktime_get_ns(), NSEC_PER_USEC) & 0x3fffffff);
	return 0;
}

/**
 * pn_control_start() - create the control files: runs may start from now
 *
 * Context: Module init, after every component's init.
 */
void pn_control_start(void)
{
	pn_files[0] = debugfs_create_file("list", 0400, pn_debugfs_dir(), NULL, &pn_list_fops);
	pn_files[1] = debugfs_create_file("stress", 0600, pn_debugfs_dir(), NULL, &pn_stress_fops);
	pn_files[2] = debugfs_create_file("bench", 0600, pn_debugfs_dir(), NULL, &pn_bench_fops);
	pn_mmcid_torture_start();	/* pcpu_next/mmcid, for the selftests */
}

/**
 * pn_control_stop() - remove the control files and stop any run
 *
 * Called first at module exit, while every component still works: a run
 * in progress is aborted and waited for.  Components then tear down
 * (removing their own debugfs files), and pn_control_exit() finishes.
 *
 * Context: Module exit, may sleep.
 */
void pn_control_stop(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pn_files); i++)
		debugfs_remove(pn_files[i]);

	mutex_lock(&pn_ctl_lock);
	pn_ctl.dying = true;
	if (pn_ctl.running) {
		WRITE_ONCE(pn_ctl.run->aborted, true);
		wake_up_all(&pn_ctl.run->wq);
	}
	mutex_unlock(&pn_ctl_lock);
	destroy_workqueue(pn_wq);	/* drains the run */
	pn_wq = NULL;
	pn_mmcid_torture_stop();	/* pcpu_next/mmcid and its counters */
}

/**
 * pn_control_exit() - free the results and remove the debugfs directory
 *
 * Context: Module exit, after pn_control_stop() and the components' exit.
 */
void pn_control_exit(void)
{
	unsigned int i;

	if (pn_wq)		/* init failed before pn_control_start() */
		destroy_workqueue(pn_wq);
	for (i = 0; i < PN_STRESS_HISTORY; i++)
		kfree(pn_ctl.stress_hist[i]);
	kfree(pn_ctl.bench_last);
}

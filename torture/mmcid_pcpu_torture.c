// SPDX-License-Identifier: GPL-2.0
/*
 * mmcid_pcpu stress and bench for the debugfs control plane (test=mmcid),
 * and the debugfs file pcpu_next/mmcid through which user threads add to
 * a counter of their own mm (the selftests' way in to the real cid path).
 *
 * A kernel thread never owns an mm_cid, not even with an mm attached by
 * kthread_use_mm().  Fork gives it none, and kthread_use_mm() does not
 * make one active; its cid reads -1 on 6.12, MM_CID_UNSET (INT_MIN) on
 * 7.x.  So the control plane's workers cannot take the real cid path:
 * the selftest (selftests/mmcid_test.c) drives that from user threads
 * through the debugfs file below.  What the stress exercises honestly
 * here:
 *  - remote adds from kthreads that borrowed the test mm with
 *    kthread_use_mm() (current->mm matches, but no cid) and from kthreads
 *    without an mm: every one must land in the remote slot;
 *  - the cid-slot machinery (block growth, first-use init, publication to
 *    a concurrent reader) with the CPU number as the cid
 *    (__mmcid_counter_add() with MMCID_SRC_CPU from internal/mmcid_pcpu.h),
 *    which is exclusive under preempt_disable() just as a real cid is and
 *    is handed from task to task as workers migrate, as a real cid is;
 *  - a reader summing concurrently: the sum never decreases and never
 *    exceeds what was issued; at the end it is exact;
 *  - a counter array of two, the second counter getting every add the
 *    first gets (mmcid_counter_add_at() and its chosen-index twin): both
 *    sums equal at the end (mmcid_counter_sum_many());
 *  - mm teardown with live data: both sums survive the fold, and no cid
 *    slot is left.
 *
 * The real cid path is benchmarked from user threads through the
 * debugfs file ("bench <n>", driven by selftests/mmcid_bench.c in the
 * bench lane).  The control-plane bench compares, per add and across the
 * same workers, the cid-slot
 * add (CPU number as the cid: the same fast path as a user thread's
 * mm_cid, one entry switch more) and the remote add with this_cpu_add()
 * on plain per-CPU memory and with percpu_counter_add(), and checks that
 * the counter's sum accounts for every add.  It then prints the memory of
 * a four-counter array, of four 8-byte objects and of one cache-line
 * object with cids 0..T-1 used, for T up to nr_cpu_ids, against per-CPU
 * memory for every possible CPU (scripts/headline.py judges the array
 * at 4 threads and 64 possible CPUs on 6.12, whose block 0 of 4 cids
 * makes the units 1/8 of it, every byte 1/4; 7.x's block 0 of 8 doubles
 * the units), and the size of the per-mm context all
 * objects of an mm share.
 *
 * The test mm is a fresh mm_alloc() when the kernel exports it (it does
 * so for KUnit builds); otherwise (stock kernel) the run uses the mm of
 * the task that wrote the control line (run->mm, referenced by the
 * control plane for the run's lifetime) without touching its address
 * space, and the teardown check is skipped because that mm is not ours
 * to tear down.
 *
 * Runs execute in the control plane's workqueue, where no signal is ever
 * pending, so mmcid_counter_create() cannot fail with -EINTR here; any
 * error it returns ends the run with that error.
 *
 * Besides the public API this uses, from internal/mmcid_pcpu.h, only the
 * chosen-index entry points __mmcid_pcpu_get(), __mmcid_counter_add() and
 * _add_at(), mmcid_pcpu_ctx_size() and mmcid_pcpu_model_bytes().  No
 * fast-path statistic is read, so the checks are the same with and
 * without CONFIG_PCPU_NEXT_STATS.
 *
 * The debugfs file and its registry (one counter per writing mm) are
 * created by pn_mmcid_torture_start() and removed by
 * pn_mmcid_torture_stop(), which the control plane calls when it creates
 * and removes its own files; see "debugfs" below for the format.
 * pn_mmcid_reg_lock (a mutex) protects the registry; it is taken before
 * mmap_lock (mmu_notifier_get()) and from the registry's ->release, which
 * runs without mmap_lock, and it is never held with a storage object's
 * lock.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/ctype.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/percpu_counter.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include <pcpu_next/compat.h>
#include <pcpu_next/mmcid_pcpu.h>
#include "internal/mmcid_pcpu.h"
#include "torture.h"

#if IS_ENABLED(CONFIG_KUNIT)
PN_IMPORT_NS_KUNIT();	/* mm_alloc() */
#endif

/* ---- debugfs: adds from user threads ---------------------------------------- */

/*
 * /sys/kernel/debug/pcpu_next/mmcid (root only).  Every process that
 * writes to it gets one counter for its mm, created on first use and
 * destroyed when the mm is torn down (or at module unload).
 *
 *   write  "add <n>" or "add <n>\n", one write(2) at offset 0; <n> is a
 *          decimal in [-2^31, 2^31 - 1] ('-' allowed, no '+', no blanks)
 *          EINVAL: malformed, offset not 0, writer without an mm
 *          ERANGE: <n> out of range; E2BIG: 64 bytes or more
 *   read   the result of the last add through this open file, one line:
 *          "cid=<c> cpu=<p> sum=<s> maxcid=<m> slots=<n> mem=<bytes>\n"
 *          c: the mm_cid whose slot took the add (-1: the remote slot);
 *          p: the CPU it ran on; s: the counter's sum right after the
 *          add; m: the largest cid with an initialised slot; n: cid slots
 *          allocated; bytes: mmcid_pcpu_memory().
 *          ENODATA before the first add.
 *   write  "bench <n>" (1 <= n <= 2^20): <n> adds of 1 through the real
 *          cid path and <n> percpu_counter_add() in the writer's thread,
 *          timed (see pn_mmcid_bench_run()); ERANGE out of range, ENOMEM
 *          without the baseline counter.  The read then has a second
 *          line "bench n=<n> mmcid_ns=<t> pcpu_ns=<t>" (the counter's sum
 *          includes the <n> adds).  Driven by selftests/mmcid_bench.c.
 * Use one open file per thread, pwrite()/pread() at offset 0.
 */
#define PN_MMCID_LINE	64

struct pn_mmcid_reg {
	struct mmu_notifier mn;
	struct list_head node;		/* on pn_mmcid_regs */
	struct mmcid_counter *ctr;
};

/* Protects pn_mmcid_regs, every entry's node and ctr, pn_mmcid_dying. */
static DEFINE_MUTEX(pn_mmcid_reg_lock);
static LIST_HEAD(pn_mmcid_regs);
static bool pn_mmcid_dying;
static struct dentry *pn_mmcid_file;

static struct mmu_notifier *pn_mmcid_reg_alloc(struct mm_struct *mm)
{
	struct pn_mmcid_reg *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&r->node);
	return &r->mn;
}

static void pn_mmcid_reg_free(struct mmu_notifier *mn)
{
	kfree(container_of(mn, struct pn_mmcid_reg, mn));
}

/* Unlink, destroy, drop the subscription; pn_mmcid_reg_lock held. */
static void pn_mmcid_reg_drop(struct pn_mmcid_reg *r)
{
	lockdep_assert_held(&pn_mmcid_reg_lock);
	list_del_init(&r->node);
	mmcid_counter_destroy(r->ctr);
	r->ctr = NULL;
	mmu_notifier_put(&r->mn);
}

static void pn_mmcid_reg_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct pn_mmcid_reg *r = container_of(mn, struct pn_mmcid_reg, mn);

	mutex_lock(&pn_mmcid_reg_lock);
	if (!list_empty(&r->node))	/* else module unload got it first */
		pn_mmcid_reg_drop(r);
	mutex_unlock(&pn_mmcid_reg_lock);
}

static const struct mmu_notifier_ops pn_mmcid_reg_ops = {
	.release = pn_mmcid_reg_release,
	.alloc_notifier = pn_mmcid_reg_alloc,
	.free_notifier = pn_mmcid_reg_free,
};

/*
 * The debugfs counter of @mm (a live mm: current's), created on demand.
 * -EINTR from either mmu_notifier_get() (a signal is pending) is passed on.
 */
static struct mmcid_counter *pn_mmcid_counter_of(struct mm_struct *mm)
{
	struct mmcid_counter *ctr;
	struct mmu_notifier *mn;
	struct pn_mmcid_reg *r;

	mutex_lock(&pn_mmcid_reg_lock);
	if (pn_mmcid_dying) {
		ctr = ERR_PTR(-ENODEV);
		goto out;
	}
	list_for_each_entry(r, &pn_mmcid_regs, node) {
		if (r->mn.mm == mm) {
			ctr = r->ctr;
			goto out;
		}
	}
	ctr = mmcid_counter_create(mm);
	if (IS_ERR(ctr))
		goto out;
	mn = mmu_notifier_get(&pn_mmcid_reg_ops, mm);
	if (IS_ERR(mn)) {
		mmcid_counter_destroy(ctr);
		ctr = ERR_CAST(mn);
		goto out;
	}
	r = container_of(mn, struct pn_mmcid_reg, mn);
	r->ctr = ctr;
	list_add(&r->node, &pn_mmcid_regs);
out:
	mutex_unlock(&pn_mmcid_reg_lock);
	return ctr;
}

/**
 * pn_mmcid_parse() - parse one "add <n>" line of the mmcid debugfs file
 * @buf: the bytes written (not NUL terminated)
 * @len: their number
 * @delta: set on success
 *
 * Context: Any context.
 * Return: 0; -E2BIG if @len >= 64; -ERANGE if <n> is outside the s32
 * range; -EINVAL for anything else.
 */
int pn_mmcid_parse(const char *buf, size_t len, s64 *delta)
{
	char num[PN_MMCID_LINE];
	size_t i, n;
	s64 v;
	int ret;

	if (len >= PN_MMCID_LINE)
		return -E2BIG;
	if (len && buf[len - 1] == '\n')
		len--;
	if (len < 5 || memcmp(buf, "add ", 4))
		return -EINVAL;
	n = len - 4;
	memcpy(num, buf + 4, n);
	num[n] = '\0';
	for (i = 0; i < n; i++)
		if (!isdigit(num[i]) && !(i == 0 && num[i] == '-'))
			return -EINVAL;
	if (num[0] == '-' && n == 1)
		return -EINVAL;
	ret = kstrtos64(num, 10, &v);
	if (ret)
		return ret;
	if (v < S32_MIN || v > S32_MAX)
		return -ERANGE;
	*delta = v;
	return 0;
}

struct pn_mmcid_fd {
	struct mutex lock;		/* protects the fields below */
	bool valid;
	bool bench;			/* the last write was "bench <n>" */
	unsigned int bench_n;
	u64 bench_mmcid_ns;
	u64 bench_pcpu_ns;
	int cid;
	unsigned int cpu;
	s64 sum;
	int maxcid;
	unsigned int slots;
	size_t mem;
};

static int pn_mmcid_open(struct inode *inode, struct file *file)
{
	struct pn_mmcid_fd *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	file->private_data = f;
	return 0;
}

static int pn_mmcid_release(struct inode *inode, struct file *file)
{
	struct pn_mmcid_fd *f = file->private_data;

	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

/*
 * "bench <n>": the real cid path, timed in the writing user thread.  The
 * kernel threads of the control plane have no mm_cid, so this is where
 * mmcid_counter_add() is measured on the path a multi-threaded process
 * takes: <n> adds of 1 to the writer's mm's counter (its own cid slot,
 * preemption disabled inside each add) against <n> percpu_counter_add()
 * of 1 to one shared percpu_counter (what mm->rss_stat does), in four
 * alternating slices so that both see the same interference.  A bench,
 * not a test: the program in selftests/ that drives it checks only the
 * counter's sum and prints ratios.
 */
#define PN_MMCID_BENCH_MAX	BIT(20)
#define PN_MMCID_BENCH_SLICES	4

static struct percpu_counter pn_mmcid_bench_pc;
static bool pn_mmcid_bench_pc_ok;

static int pn_mmcid_parse_bench(const char *buf, size_t len, unsigned int *n)
{
	char num[PN_MMCID_LINE];
	size_t i, k;
	int ret;

	if (len && buf[len - 1] == '\n')
		len--;
	if (len < 7 || memcmp(buf, "bench ", 6))
		return -EINVAL;
	k = len - 6;
	memcpy(num, buf + 6, k);
	num[k] = '\0';
	for (i = 0; i < k; i++)
		if (!isdigit(num[i]))
			return -EINVAL;
	ret = kstrtouint(num, 10, n);
	if (ret)
		return ret;
	return *n && *n <= PN_MMCID_BENCH_MAX ? 0 : -ERANGE;
}

static void pn_mmcid_bench_run(struct mmcid_counter *ctr, unsigned int n,
			       u64 *mmcid_ns, u64 *pcpu_ns)
{
	unsigned int slice, i, per;
	u64 t0;

	*mmcid_ns = 0;
	*pcpu_ns = 0;
	for (slice = 0; slice < PN_MMCID_BENCH_SLICES; slice++) {
		/* exactly n adds of each kind over the slices */
		per = n / PN_MMCID_BENCH_SLICES +
		      (slice < n % PN_MMCID_BENCH_SLICES);
		t0 = ktime_get_ns();
		for (i = 0; i < per; i++) {
			mmcid_counter_add(ctr, 1, GFP_KERNEL, NULL);
			if (!(i & 4095))
				cond_resched();
		}
		*mmcid_ns += ktime_get_ns() - t0;
		t0 = ktime_get_ns();
		for (i = 0; i < per; i++) {
			percpu_counter_add(&pn_mmcid_bench_pc, 1);
			if (!(i & 4095))
				cond_resched();
		}
		*pcpu_ns += ktime_get_ns() - t0;
	}
}

static ssize_t pn_mmcid_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	struct pn_mmcid_fd *f = file->private_data;
	char buf[PN_MMCID_LINE];
	struct mmcid_counter *ctr;
	struct mmcid_pcpu *s;
	u64 mmcid_ns = 0, pcpu_ns = 0;
	unsigned int cpu, bench_n;
	s64 delta, sum;
	int cid, ret;

	if (*ppos)
		return -EINVAL;
	if (count >= PN_MMCID_LINE)
		return -E2BIG;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	bench_n = 0;
	if (count > 6 && !memcmp(buf, "bench ", 6)) {
		ret = pn_mmcid_parse_bench(buf, count, &bench_n);
		delta = 0;
		if (!ret && !pn_mmcid_bench_pc_ok)
			ret = -ENOMEM;
	} else {
		ret = pn_mmcid_parse(buf, count, &delta);
	}
	if (ret)
		return ret;
	if (!current->mm || (current->flags & PF_KTHREAD))
		return -EINVAL;

	/* current->mm stays alive, so its counter does too (see release). */
	ctr = pn_mmcid_counter_of(current->mm);
	if (IS_ERR(ctr)) {
		ret = PTR_ERR(ctr);
		/*
		 * -EINTR: a pending signal made mmu_notifier_get() give up
		 * before anything was added; restart the write after it.
		 */
		return ret == -EINTR ? -ERESTARTNOINTR : ret;
	}
	if (bench_n)
		pn_mmcid_bench_run(ctr, bench_n, &mmcid_ns, &pcpu_ns);
	cid = mmcid_counter_add(ctr, delta, GFP_KERNEL, &cpu);
	sum = mmcid_counter_sum(ctr);
	s = mmcid_counter_storage(ctr);

	mutex_lock(&f->lock);
	f->valid = true;
	f->bench = bench_n;
	f->bench_n = bench_n;
	f->bench_mmcid_ns = mmcid_ns;
	f->bench_pcpu_ns = pcpu_ns;
	f->cid = cid;
	f->cpu = cpu;
	f->sum = sum;
	f->maxcid = mmcid_pcpu_max_cid(s);
	f->slots = mmcid_pcpu_slots(s);
	f->mem = mmcid_pcpu_memory(s);
	mutex_unlock(&f->lock);
	return count;
}

static ssize_t pn_mmcid_read(struct file *file, char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	struct pn_mmcid_fd *f = file->private_data;
	char buf[192];
	int len;

	mutex_lock(&f->lock);
	if (!f->valid) {
		mutex_unlock(&f->lock);
		return -ENODATA;
	}
	len = scnprintf(buf, sizeof(buf),
			"cid=%d cpu=%u sum=%lld maxcid=%d slots=%u mem=%zu\n",
			f->cid, f->cpu, f->sum, f->maxcid, f->slots, f->mem);
	if (f->bench)
		len += scnprintf(buf + len, sizeof(buf) - len,
				 "bench n=%u mmcid_ns=%llu pcpu_ns=%llu\n",
				 f->bench_n, f->bench_mmcid_ns, f->bench_pcpu_ns);
	mutex_unlock(&f->lock);
	return simple_read_from_buffer(ubuf, count, ppos, buf, len);
}

/*
 * .owner, as on every file of the module: ->release is module code (it
 * frees the per-file state) and debugfs calls it even after the file was
 * removed, so an open file must pin the module.
 */
static const struct file_operations pn_mmcid_fops = {
	.owner = THIS_MODULE,
	.open = pn_mmcid_open,
	.release = pn_mmcid_release,
	.read = pn_mmcid_read,
	.write = pn_mmcid_write,
	.llseek = default_llseek,
};

/**
 * pn_mmcid_torture_start() - create the mmcid debugfs file
 *
 * The control plane calls it from pn_control_start(), once every
 * component is ready; the file's path and behaviour are those the
 * selftests (mmcid, fuzz, failnth) and the guest scripts use.
 *
 * Context: Module init, after pn_mmcid_init(); may sleep.
 */
void pn_mmcid_torture_start(void)
{
	/* Without it "bench <n>" answers -ENOMEM; adds work regardless. */
	pn_mmcid_bench_pc_ok = !percpu_counter_init(&pn_mmcid_bench_pc, 0,
						    GFP_KERNEL);
	pn_mmcid_file = debugfs_create_file("mmcid", 0600, pn_debugfs_dir(),
					    NULL, &pn_mmcid_fops);
}

/**
 * pn_mmcid_torture_stop() - remove the file, free every counter of the
 *			     registry, wait for the registry's notifiers
 *
 * The control plane calls it from pn_control_stop(), while the library
 * still works.  Removing the file waits for writers in progress; after
 * that no counter is created any more, and those still registered are
 * destroyed here (the mm of each may outlive the module).
 *
 * Context: Module exit, before pn_mmcid_exit(); may sleep.
 */
void pn_mmcid_torture_stop(void)
{
	struct pn_mmcid_reg *r, *tmp;

	debugfs_remove(pn_mmcid_file);	/* waits for writers in progress */
	pn_mmcid_file = NULL;
	if (pn_mmcid_bench_pc_ok)
		percpu_counter_destroy(&pn_mmcid_bench_pc);
	pn_mmcid_bench_pc_ok = false;
	mutex_lock(&pn_mmcid_reg_lock);
	pn_mmcid_dying = true;
	list_for_each_entry_safe(r, tmp, &pn_mmcid_regs, node)
		pn_mmcid_reg_drop(r);
	mutex_unlock(&pn_mmcid_reg_lock);
	/*
	 * The registry's free_notifier callback (our code) must finish
	 * before unload.  In 6.12 mmu_notifier_synchronize() is
	 * synchronize_srcu() on the notifiers' SRCU, which
	 * mmu_notifier_put() frees through.  pn_mmcid_exit() does the same
	 * for the library's own per-mm contexts.
	 */
	mmu_notifier_synchronize();
}

/* ---- stress and bench ------------------------------------------------------------ */

static struct mm_struct *pn_mmcid_test_mm(struct pn_run *run, bool *owned)
{
#if IS_ENABLED(CONFIG_KUNIT)
	struct mm_struct *mm = mm_alloc();

	if (mm) {
		*owned = true;
		return mm;
	}
#endif
	*owned = false;
	if (!run->mm)
		return NULL;
	mmget(run->mm);
	return run->mm;
}

enum pn_mmcid_mode { PN_MC_MIXED, PN_MC_LOCAL, PN_MC_REMOTE, PN_MC_PCPU,
		     PN_MC_PCTR };

struct pn_mmcid_arg {
	enum pn_mmcid_mode mode;
	struct mmcid_counter *ctr;
	struct mm_struct *mm;
	u64 __percpu *pcpu;
	struct percpu_counter *pctr;
	atomic64_t issued;
	u64 *counts;			/* per worker: ops (bench) or sum (stress) */
	atomic_long_t bad_cid;		/* remote adds that got a cid slot */
	unsigned long bad_read;		/* reader (worker 0) saw a bad sum */
};

static int pn_mmcid_stress_worker(struct pn_run *run, unsigned int idx,
				  void *data)
{
	struct pn_mmcid_arg *a = data;
	bool use_mm = idx & 1;
	s64 last = 0;
	u64 n = 0, mine = 0;

	if (use_mm)
		kthread_use_mm(a->mm);
	while (!pn_should_stop(run)) {
		unsigned int d = 1 + (n % 3);

		atomic64_add_return(d, &a->issued);	/* before the add */
		/* Counter 1 of the array gets what counter 0 gets. */
		if (n & 1) {
			__mmcid_counter_add(a->ctr, d, GFP_KERNEL, MMCID_SRC_CPU,
					    0, NULL);
			__mmcid_counter_add_at(a->ctr, 1, d, GFP_KERNEL,
					       MMCID_SRC_CPU, 0, NULL);
		} else {
			/* kthreads own no cid: both must go remote */
			if (mmcid_counter_add(a->ctr, d, GFP_KERNEL, NULL) !=
			    MMCID_PCPU_REMOTE)
				atomic_long_inc(&a->bad_cid);
			if (mmcid_counter_add_at(a->ctr, 1, d, GFP_KERNEL,
						 NULL) != MMCID_PCPU_REMOTE)
				atomic_long_inc(&a->bad_cid);
		}
		mine += d;
		if (idx == 0 && !(n & 63)) {
			s64 sum = mmcid_counter_sum(a->ctr);

			smp_rmb();	/* the sum before what was issued */
			if (sum < last || sum > atomic64_read(&a->issued))
				a->bad_read++;
			last = sum;
		}
		if (!(++n & 255))
			cond_resched();
	}
	if (use_mm)
		kthread_unuse_mm(a->mm);
	a->counts[idx] = mine;
	return 0;
}

static int pn_mmcid_stress(struct pn_run *run)
{
	struct pn_mmcid_arg a = { .mode = PN_MC_MIXED };
	s64 sum, after, sums[2], after1;
	u64 expect = 0;
	bool owned;
	unsigned int i;
	int ret;

	a.counts = kcalloc(run->p.threads, sizeof(*a.counts), GFP_KERNEL);
	if (!a.counts)
		return -ENOMEM;
	a.mm = pn_mmcid_test_mm(run, &owned);
	if (!a.mm) {
		ret = -ESRCH;
		goto free;
	}
	/* An array of two: the second counter mirrors the first. */
	a.ctr = mmcid_counter_create_many(a.mm, 2);
	if (IS_ERR(a.ctr)) {
		ret = PTR_ERR(a.ctr);
		goto put_mm;
	}
	atomic64_set(&a.issued, 0);

	ret = pn_run_threads(run, run->p.threads, run->p.pin,
			     run->p.duration_ms, pn_mmcid_stress_worker, &a);
	for (i = 0; i < run->p.threads; i++)
		expect += a.counts[i];
	sum = mmcid_counter_sum(a.ctr);
	mmcid_counter_sum_many(a.ctr, 0, 2, sums);
	pn_printf(run, "mm=%s ops_sum=%llu sum=%lld maxcid=%d slots=%u mem=%zu ",
		  owned ? "test" : "writer", expect, sum,
		  mmcid_pcpu_max_cid(mmcid_counter_storage(a.ctr)),
		  mmcid_pcpu_slots(mmcid_counter_storage(a.ctr)),
		  mmcid_pcpu_memory(mmcid_counter_storage(a.ctr)));
	if (ret)
		goto destroy;
	if (sum != expect)
		pn_fail(run, "sum_off_by=%lld", sum - (s64)expect);
	if (sums[0] != sum || sums[1] != sum)
		pn_fail(run, "array_sums_%lld_%lld_of_%lld", sums[0], sums[1],
			sum);
	if (atomic_long_read(&a.bad_cid))
		pn_fail(run, "kthread_got_cid=%ld", atomic_long_read(&a.bad_cid));
	if (a.bad_read)
		pn_fail(run, "inconsistent_reads=%lu", a.bad_read);

	if (owned) {
		/* Tear the mm down under the counter: the sum must survive. */
		mmput(a.mm);
		a.mm = NULL;
		after = mmcid_counter_sum(a.ctr);
		after1 = mmcid_counter_sum_at(a.ctr, 1);
		pn_printf(run, "teardown_sum=%lld teardown_mem=%zu ", after,
			  mmcid_pcpu_memory(mmcid_counter_storage(a.ctr)));
		if (!mmcid_pcpu_mm_gone(mmcid_counter_storage(a.ctr)))
			pn_fail(run, "mm_teardown_not_seen");
		if (after != sum)
			pn_fail(run, "teardown_lost=%lld", sum - after);
		if (after1 != sums[1])
			pn_fail(run, "teardown_lost_1=%lld", sums[1] - after1);
		if (mmcid_pcpu_slots(mmcid_counter_storage(a.ctr)))
			pn_fail(run, "slots_left_after_teardown");
	}
destroy:
	mmcid_counter_destroy(a.ctr);
put_mm:
	if (a.mm)
		mmput(a.mm);
free:
	kfree(a.counts);
	return ret;
}

static int pn_mmcid_bench_worker(struct pn_run *run, unsigned int idx,
				 void *data)
{
	struct pn_mmcid_arg *a = data;
	u64 n = 0;

	while (!pn_should_stop(run)) {
		switch (a->mode) {
		case PN_MC_LOCAL:
			__mmcid_counter_add(a->ctr, 1, GFP_KERNEL, MMCID_SRC_CPU,
					    0, NULL);
			break;
		case PN_MC_REMOTE:
			mmcid_counter_add(a->ctr, 1, GFP_KERNEL, NULL);
			break;
		case PN_MC_PCPU:
			this_cpu_add(*a->pcpu, 1);
			break;
		case PN_MC_PCTR:
			percpu_counter_add(a->pctr, 1);
			break;
		default:
			break;
		}
		if (!(++n & 1023))
			cond_resched();
	}
	a->counts[idx] = n;
	return 0;
}

static int pn_mmcid_phase(struct pn_run *run, struct pn_mmcid_arg *a,
			  enum pn_mmcid_mode mode, u64 *ops, struct pn_span *s)
{
	unsigned int i;
	int ret;

	a->mode = mode;
	memset(a->counts, 0, run->p.threads * sizeof(*a->counts));
	pn_span_next(run, s);
	ret = pn_run_threads(run, run->p.threads, run->p.pin,
			     run->p.duration_ms, pn_mmcid_bench_worker, a);
	for (*ops = 0, i = 0; i < run->p.threads; i++)
		*ops += a->counts[i];
	return ret;
}

#define PN_FP_MAX	8	/* objects in one footprint row */

/* "<int>.<3 digits>" of a / b, for the footprint rows. */
static void pn_fp_ratio(char *buf, size_t len, size_t a, size_t b)
{
	u64 r = div64_u64((u64)a * 1000, b);

	snprintf(buf, len, "%llu.%03llu", r / 1000, r % 1000);
}

/*
 * Footprint: @nobj storage objects of @payload bytes in one mm, cids
 * 0..T-1 used by each, against per-CPU memory for the same objects
 * (nobj * payload on every possible CPU).  With @nctr, the objects are
 * one counter array of @nctr counters (mmcid_counter_create_many(), every
 * counter added to on every cid): what a client with several counters
 * per mm (rss_stat) creates.  Two figures: the unit blocks (the cid
 * slots, with the units' padding) and every byte (the per-mm context
 * with the first unit set, further unit sets, blocks, dir and ready
 * words and object headers, by kmalloc bucket).  The layout model of the
 * library (mmcid_pcpu_model_bytes()) must give the measured bytes at
 * this machine's nr_cpu_ids; it then prints the same for 256 possible
 * CPUs.  Runs on an mm whose other storage objects are gone (the bench's
 * counter is destroyed first).
 */
static int pn_mmcid_footprint(struct pn_run *run, struct mm_struct *mm,
			      unsigned int nobj, unsigned int payload,
			      unsigned int nctr)
{
	unsigned int possible = num_possible_cpus(), t, i, j;
	size_t pcpu = (size_t)ALIGN(payload, sizeof(long)) * nobj * possible;
	struct mmcid_pcpu *obj[PN_FP_MAX];
	char r_units[24], r_all[24], what[48];

	if (nctr) {
		nobj = 1;
		payload = nctr * sizeof(u64);
		pcpu = (size_t)payload * possible;
		snprintf(what, sizeof(what), "counters=%u (one array)", nctr);
	} else {
		snprintf(what, sizeof(what), "objects=%u payload=%u", nobj,
			 payload);
	}
	for (t = 1; t <= nr_cpu_ids; t *= 2) {
		size_t all, units, m_all, m_units;
		struct mmcid_counter *ctr = NULL;
		struct mmcid_pcpu_ref ref;
		int cid, ret = 0;

		for (i = 0; i < nobj; i++) {
			if (nctr) {
				ctr = mmcid_counter_create_many(mm, nctr);
				obj[i] = IS_ERR(ctr) ? ERR_CAST(ctr) :
					 mmcid_counter_storage(ctr);
			} else {
				obj[i] = mmcid_pcpu_create(mm, payload, NULL,
							   NULL);
			}
			if (IS_ERR(obj[i])) {
				ret = PTR_ERR(obj[i]);
				break;
			}
			for (cid = 0; cid < t; cid++) {
				if (!nctr) {
					__mmcid_pcpu_get(obj[i], &ref, GFP_KERNEL,
							 MMCID_SRC_FIXED, cid);
					mmcid_pcpu_put(obj[i], &ref);
					continue;
				}
				for (j = 0; j < nctr; j++)
					__mmcid_counter_add_at(ctr, j, 1,
							       GFP_KERNEL,
							       MMCID_SRC_FIXED,
							       cid, NULL);
			}
		}
		if (!ret) {
			all = mmcid_pcpu_mm_memory(obj[0], &units);
			m_all = mmcid_pcpu_model_bytes(nr_cpu_ids, nobj, payload,
						       t, &m_units);
		}
		if (!ret && nctr)
			for (j = 0; j < nctr; j++)
				if (mmcid_counter_sum_at(ctr, j) != t)
					pn_fail(run, "footprint_array_sum_%u", j);
		while (i--)
			mmcid_pcpu_destroy(obj[i]);
		if (ret)
			return ret;
		pn_fp_ratio(r_units, sizeof(r_units), units, pcpu);
		pn_fp_ratio(r_all, sizeof(r_all), all, pcpu);
		pn_printf(run,
			  "# footprint %s threads=%u possible=%u units=%zu all=%zu percpu=%zu ratio_units=%s ratio_all=%s\n",
			  what, t, possible, units, all, pcpu, r_units, r_all);
		if (all != m_all || units != m_units)
			pn_fail(run, "footprint_model_%zu_%zu_measured_%zu_%zu",
				m_all, m_units, all, units);
	}
	/* The same layout on a machine with 256 possible CPUs, computed. */
	t = min(4U, nr_cpu_ids);
	pcpu = (size_t)ALIGN(payload, sizeof(long)) * nobj * 256;
	{
		size_t units, all = mmcid_pcpu_model_bytes(256, nobj, payload, t,
							   &units);

		pn_fp_ratio(r_units, sizeof(r_units), units, pcpu);
		pn_fp_ratio(r_all, sizeof(r_all), all, pcpu);
		pn_printf(run,
			  "# footprint %s threads=%u possible=256 (computed) units=%zu all=%zu percpu=%zu ratio_units=%s ratio_all=%s\n",
			  what, t, units, all, pcpu, r_units, r_all);
	}
	return 0;
}

static int pn_mmcid_bench(struct pn_run *run)
{
	struct pn_mmcid_arg a = {};
	struct percpu_counter pctr;
	struct pn_span ls = {}, rs = {}, ps = {}, cs = {};
	u64 lops, rops, pops, cops;
	bool owned, pctr_ok = false;
	int ret = -ENOMEM;

	a.counts = kcalloc(run->p.threads, sizeof(*a.counts), GFP_KERNEL);
	a.pcpu = alloc_percpu(u64);
	if (!a.counts || !a.pcpu)
		goto free;
	if (percpu_counter_init(&pctr, 0, GFP_KERNEL))
		goto free;
	pctr_ok = true;
	a.pctr = &pctr;
	a.mm = pn_mmcid_test_mm(run, &owned);
	if (!a.mm) {
		ret = -ESRCH;
		goto free;
	}
	a.ctr = mmcid_counter_create(a.mm);
	if (IS_ERR(a.ctr)) {
		ret = PTR_ERR(a.ctr);
		a.ctr = NULL;
		goto free;
	}

	ret = pn_mmcid_phase(run, &a, PN_MC_LOCAL, &lops, &ls);
	if (!ret)
		ret = pn_mmcid_phase(run, &a, PN_MC_PCPU, &pops, &ps);
	if (!ret)
		ret = pn_mmcid_phase(run, &a, PN_MC_PCTR, &cops, &cs);
	if (!ret)
		ret = pn_mmcid_phase(run, &a, PN_MC_REMOTE, &rops, &rs);
	if (ret)
		goto free;
	pn_bench_row(run, "mmcid_counter_add (cid slot)", lops, &ls,
		     "this_cpu_add", pops, &ps);
	pn_bench_row(run, "mmcid_counter_add (cid slot)", lops, &ls,
		     "percpu_counter_add", cops, &cs);
	pn_bench_row(run, "mmcid_counter_add (remote)", rops, &rs,
		     "percpu_counter_add", cops, &cs);
	pn_printf(run,
		  "# cid slot = CPU number from kthreads (same fast path as a user thread's mm_cid); remote = kthread, atomic add to the remote slot\n");
	if (mmcid_counter_sum(a.ctr) != lops + rops)
		pn_fail(run, "bench_sum_inexact");

	mmcid_counter_destroy(a.ctr);
	a.ctr = NULL;
	pn_printf(run, "# per-mm context (shared by all objects of an mm): %zu bytes\n",
		  mmcid_pcpu_ctx_size());
	pn_printf(run,
		  "# footprint: units = the cid slots (unit blocks), all = every byte of metadata too; percpu = the same objects as per-CPU memory\n");
	/* Four counters of one mm (rss_stat): one array, then four objects. */
	ret = pn_mmcid_footprint(run, a.mm, 0, 0, 4);
	if (!ret)
		ret = pn_mmcid_footprint(run, a.mm, 4, sizeof(u64), 0);
	if (!ret)
		ret = pn_mmcid_footprint(run, a.mm, 1, SMP_CACHE_BYTES, 0);
free:
	mmcid_counter_destroy(a.ctr);
	if (a.mm)
		mmput(a.mm);
	if (pctr_ok)
		percpu_counter_destroy(&pctr);
	free_percpu(a.pcpu);
	kfree(a.counts);
	return ret;
}

const struct pn_test pn_mmcid_test = {
	.name = "mmcid",
	.desc = "mm_cid-indexed per-mm counter: remote kthreads, cid slots, reader, mm teardown",
	.def_duration_ms = 1000,
	.stress = pn_mmcid_stress,
	.bench = pn_mmcid_bench,
};

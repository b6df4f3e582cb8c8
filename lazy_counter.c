// SPDX-License-Identifier: GPL-2.0
/*
 * Dual-mode (lazy) per-CPU counters.
 *
 * Problem.  A per-CPU counter costs a per-CPU allocation (and its
 * zeroing over every possible CPU) at init and a free at destroy.  For a
 * short-lived object that one context updates (the RSS counters of a
 * single-threaded process) that cost buys nothing.  A lazy counter starts
 * as three words and only pays for per-CPU storage when the user says the
 * counter became shared: lazy_counter_upgrade_many().
 *
 *   lazy mode                              upgraded
 *   +--------------------------+           +--------------------------+
 *   | local   (owner, plain)   |           | local   (frozen, summed) |
 *   | state = remote << 1      |  ------>  | state = remote << 1 | 1  |
 *   |                          |  upgrade  |   (live, summed)         |
 *   | slot  = NULL             | fetch_or  | slot  ---------------------+
 *   +--------------------------+           +--------------------------+ |
 *      add_local: local += a                 add_*: target add          |
 *      add_remote: atomic add(state, 2a)                                |
 *      (all three zero: lazy, value 0)                                  v
 *     lazy_group (one per upgraded array of N counters)
 *     +------------+------------------------------------------+
 *     | node, nr   | slot[0] | slot[1] | ... | slot[N-1]      |
 *     | pcpu ------+--> one per-CPU allocation: N x s32 per CPU
 *     +------------+------------------------------------------+
 *     slot = { ops, group, flat: { lock, count, pcpu } }
 *
 * Value of a counter:
 *   lazy:      local + decode(state)           decode(x) = x >> 1
 *   upgraded:  local + decode(state) + target value (flat: count + sum
 *              of the per-CPU s32 deltas)
 *   destroyed: 0 (local = 0, state = bit 0 only, slot = NULL)
 *
 * Encoding.  Bit 0 of @state (LAZY_COUNTER_UPGRADED) is clear in lazy
 * mode and set once the counter is switched, so the all-zero counter is a
 * lazy counter of value 0: zero-filled memory (kzalloc(), a memset()
 * structure) is initialised, and lazy_counter_init_many(c, 0, n) stores
 * exactly that.  Remote adds add 2a to @state, which never changes bit 0,
 * so in lazy mode a remote add is one atomic_long_add() (a
 * compare-and-exchange loop would collapse under contention).  The
 * remote total has 63 bits: [LAZY_COUNTER_REMOTE_MIN, _MAX].
 *
 * Word sizes.  This is 64-bit only, and the build refuses anything else
 * (Kconfig `depends on 64BIT`, Kbuild, and a static_assert below): @local
 * is a long holding an s64 total, the remote total is 63 bits of a long,
 * the flat target's central count is an s64 read with READ_ONCE(), and
 * the API takes s64 amounts.  On a 32-bit kernel each of those would
 * truncate or tear (31-bit remote totals, a 32-bit local word, two loads
 * for one s64); making them correct would need 64-bit atomics on the
 * remote word and tear-free 64-bit local reads, a cost on every add that
 * the users this is for (rss_stat on 64-bit machines) would pay for
 * nothing.
 *
 * Invariants.
 *  (I1) @local is written only by the owning context (add_local while it
 *       observes lazy mode) and by destroy.  The upgrade never resets it,
 *       so an add_local that observed lazy mode just before the switch and
 *       stores afterwards is still counted.  That is why the upgrade
 *       needs no cooperation from the owner and may run from any context
 *       that may allocate (another task, a workqueue, a spinlocked
 *       section with GFP_ATOMIC; see Contexts).
 *  (I2) Bit 0 of @state goes from 0 to 1 at most once per counter before
 *       destroy (exactly once if an upgrade succeeds), by one
 *       fetch_or(state, LAZY_COUNTER_UPGRADED) issued after @slot was
 *       set; the other bits, the remote total, are left as they are and
 *       stay part of the value for the counter's whole life (the word is
 *       live, as percpu-refcount's atomic count stays live).  Destroy
 *       stores exactly LAZY_COUNTER_UPGRADED (the destroyed state: bit 0
 *       set, remote total 0, @slot NULL), when nobody uses the counter
 *       any more.
 *  (I3) Every allocation an upgrade needs (group, per-CPU storage) is
 *       made before the first counter is switched; a failure therefore
 *       leaves every counter of the array lazy and fully working.
 *  (I4) Counter 0's @slot is the claim: concurrent upgrades of one array
 *       race on cmpxchg(c[0].slot, NULL, ...); the loser frees its
 *       unpublished group and returns 0.  Only the winner writes the other
 *       counters' @slot and switches any counter.
 *  (I5) A flat target's per-CPU delta is never moved by hotplug: an
 *       offline CPU keeps its delta in place and exact sums read every
 *       CPU ever brought up (pn_cpus_seen, internal/core.h), so there is
 *       no CPU-dead callback, no list of groups and no global lock on
 *       upgrade or destroy.
 *
 * Memory ordering.  Lossless remote updates: a remote add that saw lazy
 * mode adds 2a to @state, before or after the switch: the switch only
 * sets bit 0, every value of the word is summed, so the add is counted
 * exactly once wherever it falls (an add of an even amount never changes
 * bit 0, and bit 0 never changes the remote total).  An adder that loads
 * a set bit 0 goes to the target instead, which only keeps later adds
 * off the shared word.  The add itself needs no ordering and returns
 * nothing: the adder never reads the slot after it.
 * Publication: the upgrader fills the slot (ops, lock, pcpu pointer;
 * per-CPU storage comes zeroed) and stores @slot before the fully ordered
 * fetch_or (it must be at least a release; an unordered atomic_long_or()
 * would need smp_mb__before_atomic()); updaters and readers load @state
 * with acquire, so a set bit 0 makes @slot and the slot's target fields
 * visible.  Nobody waits: there is no carried base to publish.  (Until
 * issue 13 the switch was an xchg that took the remote total into a
 * slot->base, a remote add that hit the dead word had to be redone on the
 * target, and readers spun on a slot->ready flag; the live word removes
 * all three, a reviewer's suggestion after lib/percpu-refcount.c, adopted
 * because the SPIN model proves it, below.)  Local adds use
 * WRITE_ONCE/READ_ONCE only so that the single-writer word is never torn
 * or re-stored by the compiler under concurrent readers.
 *
 * Reads.  A sum loads @state (mode and remote total from that one load),
 * then @local (and the target): it is not a snapshot of a value the
 * counter ever held, but it lies between the total of the adds that
 * completed before it started and the total of those that started
 * before it ended.
 *
 * Model check.  scripts/model/lazy_upgrade.pml (SPIN, run by
 * scripts/model.sh in `make check`) explores every interleaving of an
 * owner, two remote adders, two racing upgraders whose allocations may
 * fail, and a reader, at the granularity of single loads, stores and
 * RMWs (sequentially consistent: it checks the RMW-order argument above,
 * not the acquire/release pairs); a second configuration upgrades an
 * array of two counters.  It checks that no add is lost or doubled, I2
 * and I4, that both counters of an array end in the same mode, the read
 * bound above, and that no group leaks or is freed twice.  This file's
 * protocol is the model's -DLIVE variant (1,482,219 states for one
 * counter, 367,815 for an array of two, exhaustive, 0 errors); its
 * mutants (a reader that ignores the live word, an xchg that clears the
 * remote total, a redirect that counts an add twice, load+store for the
 * or, no claim, a switch before @slot is set) each fail it.  The earlier
 * xchg-and-redirect protocol stays in the model (default variant,
 * 18,754,314 states, with its nine mutants) as the comparison.  The
 * model uses this file's encoding and ends in the destroyed state.
 *
 * Compared with the RFC this follows (a percpu_counter whose pointer word
 * doubles as the tagged remote count, switched by xchg and with the local
 * count becoming the central count): here the owner's word stays separate
 * and summed (I1), so upgrades need not be run by the owner; remote adds
 * are one atomic add, not a cmpxchg loop, and the remote word stays live
 * after the switch (no redirect); the flat target needs no hotplug list
 * at all (the kernel's is not exported; I5).
 *
 * Locking.
 *  - No global lock: upgrade and destroy of one array touch only that
 *    array and the allocators (I5).
 *  - slot->flat.lock (raw spinlock, irqsave) protects slot->flat.count and
 *    serialises folding of per-CPU deltas into it (batch overflow in add)
 *    against exact sums.
 *  - Upgrades of one array are serialised by I4, not by a lock.  Destroy
 *    requires that nobody else uses the array any more.
 *
 * Contexts.  Every step of an upgrade is atomic-safe: kzalloc(gfp) of the
 * group; the target's storage from pcpu_alloc.c (pn_alloc_percpu_gfp()),
 * which with a non-blocking gfp is served under a local_lock_t and a
 * spinlock_t from its magazines, depot, chunks and reserve, else from
 * __alloc_percpu_gfp(gfp) (the kernel's atomic path: pcpu_lock, a
 * spinlock_t, no mutex), and kicks its refill work with queue_work();
 * for the tree, one more kmalloc(gfp); no global lock; the switch (one
 * fetch_or per counter); nothing waits for
 * another CPU.  A losing or failing upgrade frees
 * through the same locks (pn_free_percpu(), which may end in
 * free_percpu(); kfree()).  So the upgrade runs wherever a spinlock_t may
 * be taken and kmalloc(gfp) called:
 *  - gfp that may block (GFP_KERNEL): process context, may sleep;
 *  - GFP_ATOMIC or GFP_NOWAIT: also under a spinlock_t or local_lock_t,
 *    in softirq context, in threaded interrupt handlers, and, on kernels
 *    without PREEMPT_RT, with preemption or interrupts disabled and in
 *    interrupt handlers that PREEMPT_RT would run in a thread;
 *  - never in NMI or under a raw_spinlock_t (a bug on PREEMPT_RT, and
 *    reported on every kernel by lockdep's PROVE_RAW_LOCK_NESTING), and,
 *    on PREEMPT_RT, never with preemption or interrupts disabled or in a
 *    hard interrupt handler: spinlock_t, local_lock_t and the slab
 *    allocator sleep there.
 * might_alloc(gfp) checks the first rule.  A non-blocking upgrade may fail
 * with -ENOMEM where a sleeping one would succeed; the counters stay lazy
 * and exact (I3).  That failure is an expected outcome, not a bug, so a
 * non-blocking upgrade adds __GFP_NOWARN to every allocation it makes
 * (group, per-CPU storage, tree items): no allocation-failure report
 * with a call trace.  The tree target's items come from one
 * kmalloc(roundup_pow_of_two(total)), which is a high-order allocation
 * on large machines (1024 CPU ids and 4 counters: 9728 bytes of shared
 * rows, 16 KiB, order 2), so
 * GFP_ATOMIC upgrades to the tree target will mostly fail there; the
 * flat target does not have that problem.  Destroy of an upgraded array
 * takes the same locks.
 *
 * Misuse.  Destroy leaves every counter in the destroyed state (value 0,
 * bit 0 set, @slot NULL): the set bit sends every add and read to the
 * out-of-line upgraded paths, which find no slot, count the use in
 * lazy_counter_stats.misuse, WARN once per boot and do nothing (adds are
 * dropped, reads return 0, an upgrade returns -EINVAL).  The lazy fast
 * paths pay nothing for it; the upgraded ones one test of a pointer they
 * load anyway.  A use racing with destroy is not caught (the group may be
 * freed under it); the API forbids it.  Destroying part of an upgraded
 * array is caught: the group is leaked, not freed under the rest.  The
 * KUnit suite checks the count:
 * it announces how many misuses it is about to make with the test hook
 * lazy_counter_expect_misuse(), a budget of one atomic that each misuse
 * consumes (atomic_dec_if_positive()) instead of WARNing, because every
 * WARN fails the test lanes; it then checks that the budget was used up
 * exactly.  The hook takes no lock and looks at no test state, so the
 * misuse paths stay valid in every context the add and read paths are
 * (any but NMI, raw_spinlock_t and interrupts-off sections included); it
 * exists only on kernels with KUnit, elsewhere a misuse always WARNs once.
 *
 * CPU hotplug.  percpu_counter folds a dead CPU's delta into the count
 * from a hotplug callback that walks every counter on a global list under
 * a global lock (percpu_counters_lock, taken by every init and destroy:
 * the fork/exit serialisation this work exists to remove; the list is not
 * exported either).  The flat target does neither: a dead CPU keeps its
 * delta, and exact sums visit every CPU ever brought up (pn_cpus_seen),
 * which on a machine whose possible CPUs never all come up is the online
 * set plus the CPUs that went offline, never the whole possible range.
 *
 * Targets.  An upgrade target is a struct lazy_target_ops: setup/teardown
 * of a group's storage and add/read/sum/slack of one slot, chosen per
 * array at upgrade time.  The add path makes no indirect call (which
 * retpolines and IBT make dear) and, in the common case, no call into
 * this file at all: the public header's inline add reads the slot's head
 * (struct lazy_slot_head: the flat target's per-CPU delta or the tree)
 * and does the flat target's CPU-local compare-and-exchange, or the
 * tree's add (__pn_ctree_add_step()), itself (where percpu_counter_add()
 * always calls the exported percpu_counter_add_batch()); only a fold into
 * the central count comes here
 * (__lazy_counter_add_upgraded()).  Reads, sums and setup go through the
 * table.  The tree target
 * (LAZY_COUNTER_TREE) puts each counter of the array on a hierarchical
 * counter tree (counter_tree.c): all trees' level-0 counters in one
 * per-CPU allocation, trees and items in one kmalloc(); its precise sum
 * visits the same CPUs, so it needs no hotplug callback either.  The lazy
 * protocol above is target-independent: only the add/sum entry points and
 * setup/teardown differ.
 *
 * Automatic upgrade (optional, per array).  A struct lazy_counter_auto
 * counts the remote adds made through lazy_counter_add_remote_auto()
 * while the array is lazy; when a threshold is reached within one second
 * it queues lazy_counter_upgrade_many() on system_dfl_wq.  This is the
 * case I1 makes safe: the upgrade runs in a worker while the owner keeps
 * adding locally.  lazy_counter_auto_destroy() cancels the work first.
 *
 * Allocation.  Per-CPU storage for the flat target comes from
 * lazy_pcpu_alloc(), from the project's allocator (pcpu_alloc.c);
 * the tree target's comes from counter_tree.c's own helper.  Every
 * allocation step of an upgrade (step 1 the group, step 2 the target's
 * storage) first asks lazy_should_fail(), with CONFIG_FAULT_INJECTION
 * the kernel's fault injection and nothing home-grown: the fault_attr
 * lazy_fail_upgrade (defined in core.c, debugfs
 * pcpu_next/fault/fail_upgrade/, armed by a stress line's faults=, see
 * torture/control.c; fail-nth reaches it too; the KUnit suite and the
 * stress's INJECT mode fail the n-th step of their own task with
 * pn_fault_fail_nth()), asked through pn_fault_hit().
 *
 * Statistics (struct lazy_counter_stats, lazy_counter_get_stats()).  The
 * slow-path ones are always kept, one atomic each per event: upgrades,
 * upgrade failures and races, live groups, per-CPU allocations, automatic
 * triggers and upgrades and misuse (injected failures are counted per
 * site by the module core, pn_fault_injected()).  The add paths
 * count nothing (there used to be one event there, a remote add that
 * raced with a switch; the live state word removed it), so
 * CONFIG_PCPU_NEXT_STATS changes nothing in this file.  This component
 * has no debugfs statistics file.
 *
 * Files.  This file is the library only.  It includes kernel headers, the
 * public headers include/pcpu_next/{lazy_counter,counter_tree,pcpu_alloc}.h
 * (the targets use the tree's and the allocator's public API only) and
 * the module's private internal/core.h (pn_fault_hit(), the prototypes
 * of lazy_counter_module_init() and _exit()) and internal/lazy_counter.h
 * (what only the KUnit suites and the harness may call:
 * lazy_counter_batch(), lazy_counter_read_slack(), and with KUnit
 * lazy_counter_expect_misuse()).  The KUnit suite is
 * kunit/lazy_counter_kunit.c (also kunit/failnth_kunit.c); the stress and
 * the bench, test=lazy of the debugfs control plane, are
 * torture/lazy_counter_torture.c (CONFIG_PCPU_NEXT_TORTURE), which this
 * file knows nothing of.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/export.h>
#include <linux/gfp.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/percpu.h>
#include <linux/percpu_counter.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <kunit/visibility.h>

#include <pcpu_next/counter_tree.h>
#include <pcpu_next/lazy_counter.h>
#include <pcpu_next/pcpu_alloc.h>

#include "internal/core.h"
#include "internal/lazy_counter.h"

/* See "Word sizes" above: @local and the remote word must hold an s64. */
static_assert(BITS_PER_LONG == 64, "lazy_counter needs a 64-bit kernel");

struct lazy_slot;
struct lazy_group;

/**
 * struct lazy_target_ops - one kind of per-CPU upgrade target
 * @name: for messages
 * @setup: allocate and link the group's storage with the upgrade's gfp;
 *	   sleeps only if that gfp may block (a non-blocking upgrade calls it
 *	   with GFP_ATOMIC or GFP_NOWAIT, possibly under a spinlock_t)
 * @teardown: undo @setup; any context except NMI
 * @read: fast approximate value of one slot's target
 * @sum: exact value of one slot's target
 * @slack: largest |read - sum| of one slot at quiescence
 */
struct lazy_target_ops {
	const char *name;
	int (*setup)(struct lazy_group *g, gfp_t gfp);
	void (*teardown)(struct lazy_group *g);
	s64 (*read)(struct lazy_slot *s);
	s64 (*sum)(struct lazy_slot *s);
	u64 (*slack)(struct lazy_slot *s);
};

/**
 * struct lazy_slot - one upgraded counter's place in its target
 * @head: what the inline add of include/pcpu_next/lazy_counter.h reads
 *	  (struct lazy_slot_head, first member): the flat target's s32 per
 *	  CPU inside the group's allocation, or the tree target's counter
 *	  tree inside the group's tree array (@group->priv); the other NULL
 * @ops: the target
 * @group: the group the slot belongs to
 * @flat: LAZY_COUNTER_FLAT state
 * @flat.lock: protects @flat.count and the folding of per-CPU deltas
 * @flat.count: folded deltas
 */
struct lazy_slot {
	struct lazy_slot_head head;
	const struct lazy_target_ops *ops;
	struct lazy_group *group;
	struct {
		raw_spinlock_t lock;
		s64 count;
	} flat;
};

static_assert(offsetof(struct lazy_slot, head) == 0);

/**
 * struct lazy_group - the target storage of one upgraded array
 * @pcpu: the one per-CPU allocation shared by all slots (flat target)
 * @priv: the tree target's trees and items (one allocation)
 * @nr: number of counters (and slots)
 * @slot: one per counter
 */
struct lazy_group {
	void __percpu *pcpu;
	void *priv;
	unsigned int nr;
	struct lazy_slot slot[] __counted_by(nr);
};

/*
 * Slow-path statistics, always kept: each is one atomic per upgrade,
 * group release, trigger or misuse, never per add.
 */
static atomic_long_t lazy_stat_upgrades;
static atomic_long_t lazy_stat_failures;
static atomic_long_t lazy_stat_races;
static atomic_long_t lazy_stat_live;
static atomic_long_t lazy_stat_pcpu_allocs;
static atomic_long_t lazy_stat_auto_triggers;
static atomic_long_t lazy_stat_auto_upgrades;
static atomic_long_t lazy_stat_misuse;

/* An upgrade's allocation step: the fault_attr lazy_fail_upgrade. */
static bool lazy_should_fail(void)
{
	return pn_fault_hit(PN_FAULT_UPGRADE);
}

/*
 * The one place that obtains per-CPU storage for the flat target: the
 * project's allocator (pcpu_alloc.c), whose sized API has the contract of
 * __alloc_percpu_gfp() (zeroed on every possible CPU, at most 32 KiB, so
 * at most 8192 counters per upgrade) without the kernel's global lock.
 * An accounted request takes that lock only in a module, where it is
 * served by the kernel's allocator (pcpu_alloc.c, "GFP").
 */
static void __percpu *lazy_pcpu_alloc(size_t size, size_t align, gfp_t gfp)
{
	void __percpu *p;

	if (lazy_should_fail())
		return NULL;
	p = pn_alloc_percpu_gfp(size, align, gfp);
	if (p)
		atomic_long_inc(&lazy_stat_pcpu_allocs);
	return p;
}

static void lazy_pcpu_free(void __percpu *p)
{
	pn_free_percpu(p);
}

/* Misuses still expected (KUnit), see struct pn_misuse_budget. */
static struct pn_misuse_budget lazy_misuse_budget;

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * lazy_counter_expect_misuse() - announce misuses that must not WARN
 * @n: how many of the next uses of destroyed counters are deliberate
 *
 * Test hook for KUnit only (not API): each of the next @n misuses, from
 * any context, is counted in lazy_counter_stats.misuse without the WARN,
 * which would fail the test lanes.  Replaces the budget left from a
 * previous call.
 *
 * Context: Any context.
 * Return: what was left of the previous budget, so that a test can check
 * that it made exactly the misuses it announced: lazy_counter_expect_misuse(0)
 * returns 0 then.
 */
VISIBLE_IF_KUNIT unsigned int lazy_counter_expect_misuse(unsigned int n)
{
	return pn_misuse_expect(&lazy_misuse_budget, n);
}
EXPORT_SYMBOL_IF_KUNIT(lazy_counter_expect_misuse);
#endif

/* A misuse (see Misuse above): count, WARN once. */
static void lazy_misuse(const char *what)
{
	atomic_long_inc(&lazy_stat_misuse);
	if (pn_misuse_expected(&lazy_misuse_budget))
		return;
	WARN_ONCE(1, "lazy_counter: %s\n", what);
}

/* ---- flat target ------------------------------------------------------- */

/*
 * The largest batch the kernel ever computes (compute_batch_value() in
 * lib/percpu_counter.c: max(32, 2 * online CPUs)), for nr_cpu_ids CPUs
 * online; set at module init.  An add never uses a larger one.  Exported
 * for the inline add of the public header.
 */
s32 lazy_counter_flat_batch_max __read_mostly = 32;
EXPORT_SYMBOL_GPL(lazy_counter_flat_batch_max);

/**
 * lazy_counter_batch() - the flat target's folding threshold
 *
 * The per-CPU delta stays below this in absolute value; it follows
 * percpu_counter_batch so that the comparison with percpu_counter is fair,
 * capped at what the kernel computes with every possible CPU online.  The
 * kernel recomputes percpu_counter_batch at every CPU hotplug step and an
 * offline CPU keeps its delta (I5), so a delta may have been left under an
 * earlier, larger batch: the cap, not the current value, bounds it.
 *
 * Context: Any context.
 * Return: the batch in force now.
 */
long lazy_counter_batch(void)
{
	return min_t(s32, READ_ONCE(percpu_counter_batch), lazy_counter_flat_batch_max);
}

static __always_inline void lazy_flat_add(struct lazy_slot *s, s64 amount)
{
	s32 batch = min_t(s32, READ_ONCE(percpu_counter_batch),
			  lazy_counter_flat_batch_max);
	unsigned long flags;
#ifdef CONFIG_HAVE_CMPXCHG_LOCAL
	s32 old = this_cpu_read(*s->head.flat_pcpu);
	s64 new;

	/*
	 * Fast path: a CPU-local cmpxchg, so that an interrupt on this CPU
	 * between the test and the store cannot push the delta past the
	 * batch.  Slow path: with interrupts off and the lock held, move the
	 * whole delta of this CPU (the one we are on now) into count.
	 */
	do {
		new = (s64)old + amount;
		if (unlikely(abs(new) >= batch)) {
			raw_spin_lock_irqsave(&s->flat.lock, flags);
			old = __this_cpu_read(*s->head.flat_pcpu);
			s->flat.count += (s64)old + amount;
			__this_cpu_sub(*s->head.flat_pcpu, old);
			raw_spin_unlock_irqrestore(&s->flat.lock, flags);
			return;
		}
	} while (!this_cpu_try_cmpxchg(*s->head.flat_pcpu, &old, (s32)new));
#else
	s64 new;

	local_irq_save(flags);
	new = (s64)__this_cpu_read(*s->head.flat_pcpu) + amount;
	if (abs(new) >= batch) {
		raw_spin_lock(&s->flat.lock);
		s->flat.count += new;
		__this_cpu_write(*s->head.flat_pcpu, 0);
		raw_spin_unlock(&s->flat.lock);
	} else {
		__this_cpu_write(*s->head.flat_pcpu, (s32)new);
	}
	local_irq_restore(flags);
#endif
}

static s64 lazy_flat_read(struct lazy_slot *s)
{
	return READ_ONCE(s->flat.count);
}

static s64 lazy_flat_sum(struct lazy_slot *s)
{
	unsigned long flags;
	unsigned int cpu;
	s64 ret;

	raw_spin_lock_irqsave(&s->flat.lock, flags);
	ret = s->flat.count;
	/* offline CPUs keep their delta (I5); never-seen ones hold 0 */
	for_each_cpu(cpu, pn_cpus_seen)
		ret += *per_cpu_ptr(s->head.flat_pcpu, cpu);
	raw_spin_unlock_irqrestore(&s->flat.lock, flags);
	return ret;
}

static int lazy_flat_setup(struct lazy_group *g, gfp_t gfp)
{
	s32 __percpu *pcpu;
	unsigned int i;

	pcpu = lazy_pcpu_alloc(array_size(g->nr, sizeof(s32)),
			       __alignof__(s32), gfp);
	if (!pcpu)
		return -ENOMEM;
	g->pcpu = pcpu;
	for (i = 0; i < g->nr; i++) {
		struct lazy_slot *s = &g->slot[i];

		raw_spin_lock_init(&s->flat.lock);
		s->flat.count = 0;
		s->head.flat_pcpu = pcpu + i;
		s->head.tree = NULL;
	}
	return 0;
}

static void lazy_flat_teardown(struct lazy_group *g)
{
	lazy_pcpu_free(g->pcpu);
}

static u64 lazy_flat_slack(struct lazy_slot *s)
{
	/*
	 * Every CPU that ever ran may hold |delta| < the batch of its last
	 * add, which the kernel may since have lowered (hotplug): use the cap.
	 */
	return (u64)lazy_counter_flat_batch_max * nr_cpu_ids;
}

static const struct lazy_target_ops lazy_flat_ops = {
	.name = "flat",
	.setup = lazy_flat_setup,
	.teardown = lazy_flat_teardown,
	.read = lazy_flat_read,
	.sum = lazy_flat_sum,
	.slack = lazy_flat_slack,
};

/* ---- tree target: the hierarchical counter tree (counter_tree.c) ---------- */

/*
 * The trees of a group and their items share one kmalloc(): the array of
 * struct pn_ctree first, then the items, which must be cache-line
 * aligned; a power-of-two kmalloc() size is naturally aligned, so the
 * size is rounded up to one.  The level-0 per-CPU counters of all trees
 * are one per-CPU allocation made by pn_ctree_init_many().  Level 0 is
 * summed over every CPU ever brought up, so the tree needs no hotplug
 * callback.
 */
static int lazy_tree_setup(struct lazy_group *g, gfp_t gfp)
{
	size_t isz = pn_ctree_items_size_many(g->nr);
	size_t hdr = ALIGN(array_size(g->nr, sizeof(struct pn_ctree)),
			   SMP_CACHE_BYTES);
	size_t total = size_add(hdr, isz);
	unsigned long batch;
	struct pn_ctree *trees;
	unsigned int i;
	int ret;

	if (lazy_should_fail())
		return -ENOMEM;
	if (total > KMALLOC_MAX_SIZE / 2)
		return -ENOMEM;
	/* pn_ctree_init_many() writes every tree and item: no zeroing */
	trees = kmalloc(roundup_pow_of_two(total), gfp);
	if (!trees)
		return -ENOMEM;
	/* No worse than percpu_counter's bound, at any machine size. */
	batch = pn_ctree_default_batch();
	ret = pn_ctree_init_many(trees, (void *)trees + hdr, g->nr, batch, gfp);
	if (ret) {
		kfree(trees);
		return ret;
	}
	atomic_long_inc(&lazy_stat_pcpu_allocs);
	g->priv = trees;
	for (i = 0; i < g->nr; i++)
		g->slot[i].head.tree = &trees[i];
	return 0;
}

static void lazy_tree_teardown(struct lazy_group *g)
{
	pn_ctree_destroy_many(g->priv, g->nr);
	kfree(g->priv);
}

static void lazy_tree_add(struct lazy_slot *s, s64 amount)
{
	pn_ctree_add(s->head.tree, amount);
}

static s64 lazy_tree_read(struct lazy_slot *s)
{
	return pn_ctree_approx_sum(s->head.tree);
}

static s64 lazy_tree_sum(struct lazy_slot *s)
{
	return pn_ctree_precise_sum(s->head.tree);
}

static u64 lazy_tree_slack(struct lazy_slot *s)
{
	unsigned long under = 0, over = 0;

	pn_ctree_accuracy_range(s->head.tree, &under, &over);
	return max(under, over);
}

static const struct lazy_target_ops lazy_tree_ops = {
	.name = "tree",
	.setup = lazy_tree_setup,
	.teardown = lazy_tree_teardown,
	.read = lazy_tree_read,
	.sum = lazy_tree_sum,
	.slack = lazy_tree_slack,
};

/* __lazy_counter_add_upgraded() knows exactly these two. */
static_assert(LAZY_COUNTER_NR_TARGETS == 2);

static const struct lazy_target_ops *const lazy_targets[LAZY_COUNTER_NR_TARGETS] = {
	[LAZY_COUNTER_FLAT] = &lazy_flat_ops,
	[LAZY_COUNTER_TREE] = &lazy_tree_ops,
};

/* ---- upgraded-mode entry points ---------------------------------------- */

/*
 * The slot of a counter whose state was seen upgraded (acquire): the
 * switch stored it before setting bit 0.  NULL for a destroyed counter
 * (counted as misuse).
 */
static struct lazy_slot *lazy_slot_of(const struct lazy_counter *c,
				      const char *what)
{
	struct lazy_slot *s = READ_ONCE(c->slot);

	if (unlikely(!s))
		lazy_misuse(what);
	return s;
}

/**
 * __lazy_counter_add_upgraded() - add to an upgraded counter
 * @c: the counter; bit 0 of its state was seen set (acquire)
 * @amount: signed amount
 *
 * Out-of-line half of the header's inline add (__lazy_counter_add_target()):
 * a flat add whose delta reaches the batch (the fold under the slot's
 * lock), every flat add without CONFIG_HAVE_CMPXCHG_LOCAL, and a
 * destroyed counter (no slot), whose amount is dropped and the misuse
 * counted.
 *
 * Context: Any context except NMI.
 */
void __lazy_counter_add_upgraded(const struct lazy_counter *c, s64 amount)
{
	struct lazy_slot *s = READ_ONCE(c->slot);

	if (unlikely(!s)) {
		lazy_misuse("add to a destroyed counter");
		return;
	}
	/* Both targets called directly: no indirect call on the add path. */
	if (likely(s->ops == &lazy_flat_ops))
		lazy_flat_add(s, amount);
	else
		lazy_tree_add(s, amount);
}
EXPORT_SYMBOL_GPL(__lazy_counter_add_upgraded);

/**
 * __lazy_counter_read_upgraded() - fast value of an upgraded counter
 * @c: the counter; bit 0 of its state was seen set (acquire)
 *
 * The caller adds @c->local and the live remote total of the state word.
 *
 * Context: Any context except NMI.
 * Return: the target's approximate value; 0 for a destroyed counter
 * (counted as misuse).
 */
s64 __lazy_counter_read_upgraded(const struct lazy_counter *c)
{
	struct lazy_slot *s = lazy_slot_of(c, "read of a destroyed counter");

	return s ? s->ops->read(s) : 0;
}
EXPORT_SYMBOL_GPL(__lazy_counter_read_upgraded);

/**
 * __lazy_counter_sum_upgraded() - exact value of an upgraded counter
 * @c: the counter; bit 0 of its state was seen set (acquire)
 *
 * The caller adds @c->local and the live remote total of the state word.
 *
 * Context: Any context except NMI.
 * Return: the target's exact value; 0 for a destroyed counter (counted as
 * misuse).
 */
s64 __lazy_counter_sum_upgraded(const struct lazy_counter *c)
{
	struct lazy_slot *s = lazy_slot_of(c, "sum of a destroyed counter");

	return s ? s->ops->sum(s) : 0;
}
EXPORT_SYMBOL_GPL(__lazy_counter_sum_upgraded);

/* ---- lifetime ------------------------------------------------------------ */

/*
 * Switch one counter whose c->slot is already set (I2): set bit 0 and
 * nothing else.  Fully ordered, so it publishes c->slot and the slot's
 * target (written before) to whoever loads the state with acquire and
 * sees the bit; the remote total stays in the word, live and summed.
 */
static void lazy_switch(struct lazy_counter *c)
{
	long old = atomic_long_fetch_or(LAZY_COUNTER_UPGRADED, &c->state);

	WARN_ON_ONCE(old & LAZY_COUNTER_UPGRADED);
}

static void lazy_group_free(struct lazy_group *g)
{
	g->slot[0].ops->teardown(g);
	kfree(g);
	atomic_long_dec(&lazy_stat_live);
}

/**
 * lazy_counter_upgrade_many() - move an array of counters to per-CPU storage
 * @c: the array, initialised by lazy_counter_init_many() with the same @nr
 *     (or zero-filled)
 * @nr: number of counters
 * @target: the kind of per-CPU counter to become
 * @gfp: allocation flags: GFP_KERNEL (possibly with __GFP_ACCOUNT), or
 *	 GFP_ATOMIC / GFP_NOWAIT where the caller cannot sleep
 *
 * One group allocation and one per-CPU allocation serve all @nr counters.
 * Updaters keep running during the upgrade; no update is lost (see the
 * ordering argument at the top of this file).  Concurrent upgrades of the
 * same array are allowed: one wins, the others free their storage and
 * return 0.  A 0 return means the array is claimed by an upgrade that
 * can no longer fail, not that it is switched: a loser (or a caller that
 * finds the claim already made) may return before the winner switched
 * any counter, so any counter may still read as lazy until the winner's
 * call returns, and the array must not be destroyed while an upgrade is
 * in flight.  Updates and sums stay exact meanwhile.
 *
 * Context: Process context, may sleep, if @gfp may block.  With
 * GFP_ATOMIC or GFP_NOWAIT, wherever a spinlock_t may be taken and
 * kmalloc(@gfp) called: also under a spinlock_t or local_lock_t, in
 * softirq context, and, without PREEMPT_RT, with preemption or interrupts
 * disabled; never in NMI, under a raw_spinlock_t, or (PREEMPT_RT) with
 * preemption or interrupts disabled.  See "Contexts" in the essay at the
 * top of this file.
 * Return: 0 if the array is (being) upgraded; -EINVAL for a bad @nr or
 * @target, or a destroyed array (counted as misuse); -ENOMEM if an
 * allocation failed (more likely with a non-blocking @gfp), in which case
 * every counter is still lazy and fully working.
 */
int lazy_counter_upgrade_many(struct lazy_counter *c, unsigned int nr,
			      enum lazy_counter_target target, gfp_t gfp)
{
	const struct lazy_target_ops *ops;
	struct lazy_group *g;
	unsigned int i;
	int ret;

	might_alloc(gfp);
	/* -ENOMEM is an expected outcome here: no allocation-failure splat */
	if (!gfpflags_allow_blocking(gfp))
		gfp |= __GFP_NOWARN;
	if (!nr || target >= LAZY_COUNTER_NR_TARGETS || !lazy_targets[target])
		return -EINVAL;
	ops = lazy_targets[target];
	/* already upgraded (slot set before the switch), or destroyed */
	if (!lazy_counter_is_lazy(&c[0])) {
		if (likely(READ_ONCE(c[0].slot)))
			return 0;
		lazy_misuse("upgrade of a destroyed counter");
		return -EINVAL;
	}
	/* claimed by an upgrade in progress */
	if (READ_ONCE(c[0].slot))
		return 0;

	g = lazy_should_fail() ? NULL :
	    kzalloc(struct_size(g, slot, nr), gfp);
	if (!g) {
		ret = -ENOMEM;
		goto fail;
	}
	g->nr = nr;
	for (i = 0; i < nr; i++) {
		g->slot[i].ops = ops;
		g->slot[i].group = g;
	}
	ret = ops->setup(g, gfp);
	if (ret)
		goto free_group;
	atomic_long_inc(&lazy_stat_live);

	/* I4: claim the array on counter 0, fully ordered. */
	if (cmpxchg(&c[0].slot, NULL, &g->slot[0])) {
		atomic_long_inc(&lazy_stat_races);
		lazy_group_free(g);
		return 0;
	}
	for (i = 1; i < nr; i++)
		WRITE_ONCE(c[i].slot, &g->slot[i]);
	for (i = 0; i < nr; i++)
		lazy_switch(&c[i]);
	atomic_long_inc(&lazy_stat_upgrades);
	return 0;

free_group:
	kfree(g);
fail:
	atomic_long_inc(&lazy_stat_failures);
	return ret;
}
EXPORT_SYMBOL_GPL(lazy_counter_upgrade_many);

/**
 * __lazy_counter_destroy_upgraded() - release an upgraded array
 * @c: the array; c[0].slot is set
 * @nr: number of counters, as given to lazy_counter_init_many()
 *
 * Out-of-line half of lazy_counter_destroy_many().  The counters are left
 * in the destroyed state (value 0, bit 0 set, no slot), which later uses
 * trip over harmlessly (see Misuse at the top of this file), and a second
 * destroy is a no-op.
 *
 * Context: As lazy_counter_upgrade_many() with a non-blocking gfp.
 */
void __lazy_counter_destroy_upgraded(struct lazy_counter *c, unsigned int nr)
{
	struct lazy_slot *s = c[0].slot;
	unsigned int i;

	/*
	 * Not the array that was upgraded: the counters past @nr still use
	 * the group.  Leak it rather than free it under them.
	 */
	if (s->group->nr != nr || s != &s->group->slot[0]) {
		lazy_misuse("destroy of part of an upgraded array");
		return;
	}
	for (i = 0; i < nr; i++)
		__lazy_counter_mark_destroyed(&c[i]);
	lazy_group_free(s->group);
}
EXPORT_SYMBOL_GPL(__lazy_counter_destroy_upgraded);

/* ---- automatic upgrade ---------------------------------------------------- */

static void lazy_auto_work(struct work_struct *work)
{
	struct lazy_counter_auto *a = container_of(work, struct lazy_counter_auto,
						   work);

	if (!lazy_counter_upgrade_many(a->c, a->nr, a->target, GFP_KERNEL))
		atomic_long_inc(&lazy_stat_auto_upgrades);
}

/**
 * lazy_counter_auto_init() - watch an array's remote update rate
 * @a: the state to initialise
 * @c: the array, already initialised with lazy_counter_init_many()
 * @nr: its length
 * @target: what to upgrade to
 * @threshold: remote adds per second that trigger the upgrade (>= 1)
 *
 * Context: Any context.
 */
void lazy_counter_auto_init(struct lazy_counter_auto *a, struct lazy_counter *c,
			    unsigned int nr, enum lazy_counter_target target,
			    unsigned int threshold)
{
	a->c = c;
	a->nr = nr;
	a->target = target;
	a->threshold = max(threshold, 1U);
	a->window_start = jiffies;
	atomic_set(&a->events, 0);
	INIT_WORK(&a->work, lazy_auto_work);
}
EXPORT_SYMBOL_GPL(lazy_counter_auto_init);

/**
 * __lazy_counter_auto_event() - count one remote add of a lazy array
 * @a: the array's automatic-upgrade state
 *
 * The window is advisory: concurrent resets may drop a few events, which
 * only delays the trigger.  The upgrade is queued when the count reaches
 * the threshold exactly, so one burst queues it once; queue_work() also
 * ignores an already pending item.
 *
 * Context: Any context except NMI.
 */
void __lazy_counter_auto_event(struct lazy_counter_auto *a)
{
	unsigned long start = READ_ONCE(a->window_start);

	if (time_after(jiffies, start + HZ)) {
		WRITE_ONCE(a->window_start, jiffies);
		atomic_set(&a->events, 0);
	}
	if (atomic_inc_return(&a->events) == a->threshold) {
		atomic_long_inc(&lazy_stat_auto_triggers);
		queue_work(system_dfl_wq, &a->work);
	}
}
EXPORT_SYMBOL_GPL(__lazy_counter_auto_event);

/**
 * lazy_counter_auto_destroy() - stop watching and destroy the array
 * @a: the state; its array is destroyed with lazy_counter_destroy_many()
 *
 * Waits for a queued or running automatic upgrade first.
 *
 * Context: Process context, may sleep.
 */
void lazy_counter_auto_destroy(struct lazy_counter_auto *a)
{
	cancel_work_sync(&a->work);
	lazy_counter_destroy_many(a->c, a->nr);
}
EXPORT_SYMBOL_GPL(lazy_counter_auto_destroy);

/**
 * lazy_counter_read_slack() - how far read() may be from sum() at rest
 * @c: the counter
 *
 * For the KUnit suites and the stress, not exported: 0 in lazy mode; the
 * target's bound once upgraded.
 *
 * Context: Any context except NMI.
 * Return: the largest |lazy_counter_read() - lazy_counter_sum()| at
 * quiescence.
 */
u64 lazy_counter_read_slack(const struct lazy_counter *c)
{
	struct lazy_slot *s;

	if (lazy_counter_is_lazy(c))
		return 0;
	s = lazy_slot_of(c, "read_slack of a destroyed counter");
	return s ? s->ops->slack(s) : 0;
}

/**
 * lazy_counter_get_stats() - snapshot of the module-wide statistics
 * @st: filled in
 *
 * Each field is read on its own (no snapshot across fields); at
 * quiescence they are exact.
 *
 * Context: Any context.
 */
void lazy_counter_get_stats(struct lazy_counter_stats *st)
{
	st->upgrades = atomic_long_read(&lazy_stat_upgrades);
	st->upgrade_failures = atomic_long_read(&lazy_stat_failures);
	st->upgrade_races = atomic_long_read(&lazy_stat_races);
	st->live_groups = atomic_long_read(&lazy_stat_live);
	st->pcpu_allocs = atomic_long_read(&lazy_stat_pcpu_allocs);
	st->auto_triggers = atomic_long_read(&lazy_stat_auto_triggers);
	st->auto_upgrades = atomic_long_read(&lazy_stat_auto_upgrades);
	st->misuse = atomic_long_read(&lazy_stat_misuse);
}
EXPORT_SYMBOL_GPL(lazy_counter_get_stats);

/**
 * lazy_counter_module_init() - set the flat target's batch cap
 *
 * The flat target needs no hotplug callback (I5); only the cap on its
 * batch (lazy_counter_batch()) is computed here, from nr_cpu_ids.  Called
 * by the module core (main.c) after pn_alloc_init().
 *
 * Context: Module init.
 * Return: 0.
 */
int lazy_counter_module_init(void)
{
	lazy_counter_flat_batch_max = max_t(s32, 32, 2 * nr_cpu_ids);
	return 0;
}

/**
 * lazy_counter_module_exit() - check that no upgraded array is left
 *
 * Context: Module exit.
 */
void lazy_counter_module_exit(void)
{
	WARN_ON(atomic_long_read(&lazy_stat_live));
}

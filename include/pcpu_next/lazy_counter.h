/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lazy (dual-mode) per-CPU counters.
 *
 * A lazy counter starts as three words and no allocation: a plain count
 * that one owning context updates with ordinary arithmetic, an atomic word
 * that any other context updates with a fetch-and-add, and a NULL slot
 * pointer.  All three zero is a valid lazy counter of value 0, so
 * zero-filled memory (kzalloc(), a memset() structure) needs no init.
 * When the counter becomes shared, lazy_counter_upgrade_many() moves it
 * (and its siblings of the same array) onto per-CPU storage, a flat
 * per-CPU counter or a hierarchical counter tree, without stopping any
 * updater.
 * See lazy_counter.c for the design, the encoding and the ordering
 * argument.  64-bit kernels only (see "Word sizes" there).
 *
 * This is the API for client modules.  The double-underscore helpers are
 * the out-of-line halves of the inline functions, not for direct use.
 * What only the module's KUnit suites and test harness use is in the
 * module's private internal/lazy_counter.h.
 */
#ifndef _PCPU_NEXT_LAZY_COUNTER_H
#define _PCPU_NEXT_LAZY_COUNTER_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/gfp_types.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/percpu_counter.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include <pcpu_next/counter_tree.h>

struct lazy_slot;

/**
 * struct lazy_counter - one lazy counter
 * @local: the owner's part; written only by the single updating context
 *	   (add_local in lazy mode), read by anyone.  Never reset by an
 *	   upgrade: afterwards it keeps the owner's lazy-mode total.
 * @state: the remote total << 1, where the remote total is what
 *	   add_remote() accumulated in lazy mode, and bit 0
 *	   (LAZY_COUNTER_UPGRADED), clear in lazy mode.  The switch only
 *	   sets bit 0: the remote total stays live and summed, and a remote
 *	   add that saw lazy mode and lands after the switch is counted in
 *	   it like any other.  Destroyed: exactly LAZY_COUNTER_UPGRADED.
 * @slot: NULL until an upgrade claims the array; then the counter's slot
 *	  in its per-CPU target, set before bit 0 of @state is set (so it
 *	  may be set while the counter is still lazy; lazy-mode paths never
 *	  read it).  NULL again after destroy: bit 0 set with a NULL slot is
 *	  the destroyed state.
 *
 * The value of the counter is @local plus the remote total, plus the
 * slot's value once upgraded.  All-zero is lazy mode
 * with value 0.
 */
struct lazy_counter {
	long local;
	atomic_long_t state;
	struct lazy_slot *slot;
};

/**
 * define LAZY_COUNTER_UPGRADED - bit 0 of lazy_counter.state
 *
 * Clear in lazy mode; set once the counter was switched to per-CPU
 * storage, or destroyed.
 */
#define LAZY_COUNTER_UPGRADED	1L

/**
 * enum lazy_counter_target - what a lazy counter is upgraded to
 * @LAZY_COUNTER_FLAT: a flat per-CPU counter with batched folding into a
 *	central count (the percpu_counter algorithm) with no hotplug
 *	callback: sums read every CPU ever brought up
 * @LAZY_COUNTER_TREE: the hierarchical counter tree of counter_tree.c
 *	(O(1) approximate read with a known accuracy range, exact sum over
 *	every CPU ever brought up): a lazy counter tree
 * @LAZY_COUNTER_NR_TARGETS: number of targets
 */
enum lazy_counter_target {
	LAZY_COUNTER_FLAT,
	LAZY_COUNTER_TREE,
	LAZY_COUNTER_NR_TARGETS,
};

/**
 * define LAZY_COUNTER_REMOTE_MAX - largest remote total in lazy mode
 *
 * Remote totals are kept shifted left by one in a long (bit 0 clear), so
 * in lazy mode the total of lazy_counter_add_remote() amounts must stay
 * within [LAZY_COUNTER_REMOTE_MIN, LAZY_COUNTER_REMOTE_MAX].
 */
#define LAZY_COUNTER_REMOTE_MAX	(LONG_MAX >> 1)
/**
 * define LAZY_COUNTER_REMOTE_MIN - smallest remote total in lazy mode
 */
#define LAZY_COUNTER_REMOTE_MIN	(LONG_MIN >> 1)

/**
 * __lazy_counter_encode() - a remote total as lazy_counter.state holds it
 * @remote: the total, within [LAZY_COUNTER_REMOTE_MIN, _MAX]
 *
 * Context: Any context.
 * Return: @remote shifted left by one (bit 0 clear: lazy mode).
 */
static inline long __lazy_counter_encode(long remote)
{
	return (long)((unsigned long)remote << 1);
}

/**
 * __lazy_counter_decode() - the remote total held in a state word
 * @state: a value of lazy_counter.state, in either mode (bit 0 dropped)
 *
 * Context: Any context.
 * Return: the remote total (arithmetic shift: the sign is kept).
 */
static inline long __lazy_counter_decode(long state)
{
	return state >> 1;
}

/**
 * struct lazy_slot_head - what the inline add reads of an upgraded counter
 * @flat_pcpu: LAZY_COUNTER_FLAT: this counter's s32 delta per CPU, else
 *	       NULL
 * @tree: LAZY_COUNTER_TREE: this counter's counter tree, else NULL
 *
 * The first member of the library's (private) slot, which
 * lazy_counter.slot points to: written before the switch publishes the
 * slot (the state load's acquire makes it visible) and not changed until
 * destroy.  Only the add below reads it; everything else goes through the
 * library.
 */
struct lazy_slot_head {
	s32 __percpu *flat_pcpu;
	struct pn_ctree *tree;
};

extern s32 lazy_counter_flat_batch_max;

void __lazy_counter_add_upgraded(const struct lazy_counter *c, s64 amount);

/**
 * __lazy_counter_add_target() - add to an upgraded counter, inline
 * @c: the counter; bit 0 of its state was seen set (acquire)
 * @amount: signed amount
 *
 * The target's fast path without a call into the library (where
 * percpu_counter_add() always calls the exported
 * percpu_counter_add_batch()): for the flat target a CPU-local
 * compare-and-exchange of the per-CPU delta while it stays below the
 * batch (percpu_counter_batch, capped at lazy_counter_flat_batch_max);
 * for the tree target the tree's own fast path (__pn_ctree_add_step();
 * pn_ctree_add() for an amount beyond PN_CTREE_STEP_MAX either way or a
 * destroyed tree).  A fold into the central
 * count, a destroyed counter (no slot) and architectures without
 * CONFIG_HAVE_CMPXCHG_LOCAL take __lazy_counter_add_upgraded().
 *
 * Context: Any context except NMI.
 */
static __always_inline void __lazy_counter_add_target(const struct lazy_counter *c,
						      s64 amount)
{
	const struct lazy_slot_head *h = (const void *)READ_ONCE(c->slot);

	if (likely(h)) {
#ifdef CONFIG_HAVE_CMPXCHG_LOCAL
		if (likely(h->flat_pcpu)) {
			s64 batch = min_t(s64, READ_ONCE(percpu_counter_batch),
					  READ_ONCE(lazy_counter_flat_batch_max));
			s32 old = this_cpu_read(*h->flat_pcpu);
			s64 new;

			do {
				new = (s64)old + amount;
				/* |new| >= batch, in one unsigned compare */
				if (unlikely((u64)new + (batch - 1) >=
					     (u64)(2 * batch - 1)))
					goto slow;
			} while (!this_cpu_try_cmpxchg(*h->flat_pcpu, &old,
						       (s32)new));
			return;
		}
#endif
		if (h->tree) {
			struct pn_ctree *t = h->tree;
			u32 __percpu *level0 = READ_ONCE(t->level0);

			/* |amount| <= PN_CTREE_STEP_MAX in one compare */
			if (likely(level0 &&
				   (u64)amount + PN_CTREE_STEP_MAX <= 2 * PN_CTREE_STEP_MAX))
				__pn_ctree_add_step(t, level0, amount);
			else
				pn_ctree_add(t, amount);
			return;
		}
	}
#ifdef CONFIG_HAVE_CMPXCHG_LOCAL
slow:
#endif
	__lazy_counter_add_upgraded(c, amount);
}

s64 __lazy_counter_read_upgraded(const struct lazy_counter *c);
s64 __lazy_counter_sum_upgraded(const struct lazy_counter *c);

/**
 * __lazy_counter_state() - load a counter's state word
 * @c: the counter
 *
 * With acquire: a set bit 0 makes @c->slot and the slot's contents
 * visible.
 *
 * Context: Any context.
 * Return: the state word.
 */
static inline long __lazy_counter_state(const struct lazy_counter *c)
{
	return atomic_long_read_acquire(&c->state);
}

/**
 * lazy_counter_is_lazy() - is the counter still in lazy mode?
 * @c: the counter
 *
 * Context: Any context.
 * Return: true from init (or zero-filled memory) until an upgrade has
 * switched @c to per-CPU storage; false once switched, and after destroy.
 */
static inline bool lazy_counter_is_lazy(const struct lazy_counter *c)
{
	return !(__lazy_counter_state(c) & LAZY_COUNTER_UPGRADED);
}

int lazy_counter_upgrade_many(struct lazy_counter *c, unsigned int nr,
			      enum lazy_counter_target target, gfp_t gfp);
void __lazy_counter_destroy_upgraded(struct lazy_counter *c, unsigned int nr);

/**
 * lazy_counter_init_many() - initialise an array of lazy counters
 * @c: the array
 * @amount: initial value of every counter
 * @nr: number of counters
 *
 * No allocation: the counters start in lazy mode.  With @amount 0 this
 * stores zeroes only, so zero-filled memory is already initialised.  Also
 * makes destroyed counters usable again.
 *
 * Context: Any context.
 */
static inline void lazy_counter_init_many(struct lazy_counter *c, s64 amount,
					  unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		c[i].local = amount;
		atomic_long_set(&c[i].state, __lazy_counter_encode(0));
		c[i].slot = NULL;
	}
}

/**
 * __lazy_counter_mark_destroyed() - put a counter in the destroyed state
 * @c: the counter, no longer used by anyone
 *
 * Value 0, bit 0 set, no slot (see lazy_counter_destroy_many()).
 *
 * Context: Any context.
 */
static inline void __lazy_counter_mark_destroyed(struct lazy_counter *c)
{
	WRITE_ONCE(c->local, 0);
	WRITE_ONCE(c->slot, NULL);
	atomic_long_set(&c->state, LAZY_COUNTER_UPGRADED);
}

/**
 * lazy_counter_destroy_many() - release an array of counters, either mode
 * @c: the array
 * @nr: number of counters, as given to lazy_counter_init_many()
 *
 * Lazy counters own nothing; an upgraded array releases its group.
 * Nobody may use the counters any more (no updater, reader or upgrade in
 * flight) before lazy_counter_init_many() is called on them again.  They
 * are left in a destroyed state that makes a later use harmless and
 * visible: adds are dropped, reads return 0, an upgrade returns -EINVAL,
 * and each such use is counted in lazy_counter_stats.misuse and WARNs
 * once per boot.  Destroying them again is a no-op.
 *
 * Context: Any context in which lazy_counter_upgrade_many() may be called
 * with a non-blocking gfp (an upgraded array frees through spinlock_t and
 * local_lock_t); lazy arrays: any context.
 */
static inline void lazy_counter_destroy_many(struct lazy_counter *c,
					     unsigned int nr)
{
	unsigned int i;

	if (nr && READ_ONCE(c[0].slot)) {
		__lazy_counter_destroy_upgraded(c, nr);
		return;
	}
	for (i = 0; i < nr; i++)
		__lazy_counter_mark_destroyed(&c[i]);
}

/**
 * lazy_counter_add_local() - add from the counter's single updating context
 * @c: the counter
 * @amount: signed amount
 *
 * In lazy mode this is one load and one plain store.  Once the counter is
 * upgraded it goes to the per-CPU target.  The caller guarantees that no
 * two lazy_counter_add_local() calls on @c run concurrently (one task,
 * or an external lock); concurrent add_remote(), reads and upgrades are
 * fine.
 *
 * Context: The owning context; any context the target allows (not NMI).
 */
static inline void lazy_counter_add_local(struct lazy_counter *c, s64 amount)
{
	if (likely(!(__lazy_counter_state(c) & LAZY_COUNTER_UPGRADED)))
		WRITE_ONCE(c->local, c->local + amount);
	else
		__lazy_counter_add_target(c, amount);
}

/**
 * lazy_counter_add_remote() - add from any context, losslessly
 * @c: the counter
 * @amount: signed amount; in lazy mode the remote total must stay within
 *	    [LAZY_COUNTER_REMOTE_MIN, LAZY_COUNTER_REMOTE_MAX]
 *
 * In lazy mode one atomic add of 2 * @amount on @c->state (bit 0 is
 * untouched).  An update that races with the upgrade lands in the state
 * word before or after the switch, and is counted there either way: the
 * word stays live and summed after the switch.  Once upgraded, a load of
 * @c->state sends later adds to the target, off the shared word.
 *
 * Context: Any context except NMI.
 */
static inline void lazy_counter_add_remote(struct lazy_counter *c, s64 amount)
{
	if (likely(!(__lazy_counter_state(c) & LAZY_COUNTER_UPGRADED))) {
		/* counted in the live word even if the switch came first */
		atomic_long_add(__lazy_counter_encode(amount), &c->state);
		return;
	}
	__lazy_counter_add_target(c, amount);
}

/**
 * lazy_counter_read() - fast read
 * @c: the counter
 *
 * Exact in lazy mode (up to updates in flight); in per-CPU mode it omits
 * the deltas still held per CPU, like percpu_counter_read().  Never waits.
 *
 * Context: Any context except NMI.
 * Return: the approximate value.
 */
static inline s64 lazy_counter_read(const struct lazy_counter *c)
{
	long state = __lazy_counter_state(c);
	s64 v = READ_ONCE(c->local) + __lazy_counter_decode(state);

	if (state & LAZY_COUNTER_UPGRADED)
		v += __lazy_counter_read_upgraded(c);
	return v;
}

/**
 * lazy_counter_read_positive() - lazy_counter_read(), clamped at zero
 * @c: the counter
 *
 * Context: Any context except NMI.
 * Return: the approximate value, or 0 if it is negative.
 */
static inline s64 lazy_counter_read_positive(const struct lazy_counter *c)
{
	s64 v = lazy_counter_read(c);

	return v > 0 ? v : 0;
}

/**
 * lazy_counter_sum() - exact value
 * @c: the counter
 *
 * Adds every per-CPU delta in per-CPU mode.  Exact once the updaters are
 * quiescent; while they run, the result is a value the counter had at
 * some point during the call for each part.
 *
 * Context: Any context except NMI.
 * Return: the value.
 */
static inline s64 lazy_counter_sum(const struct lazy_counter *c)
{
	long state = __lazy_counter_state(c);
	s64 v = READ_ONCE(c->local) + __lazy_counter_decode(state);

	if (state & LAZY_COUNTER_UPGRADED)
		v += __lazy_counter_sum_upgraded(c);
	return v;
}

/**
 * lazy_counter_sum_positive() - lazy_counter_sum(), clamped at zero
 * @c: the counter
 *
 * Context: Any context except NMI.
 * Return: the value, or 0 if it is negative.
 */
static inline s64 lazy_counter_sum_positive(const struct lazy_counter *c)
{
	s64 v = lazy_counter_sum(c);

	return v > 0 ? v : 0;
}

/**
 * lazy_counter_sum_local() - exact value as the owning context sees it
 * @c: the counter
 *
 * Called by the single updating context: its own updates are all
 * included (it is the only writer of @c->local), plus every remote update
 * that completed before the call.
 *
 * Context: The owning context (not NMI).
 * Return: the value.
 */
static inline s64 lazy_counter_sum_local(const struct lazy_counter *c)
{
	long state = __lazy_counter_state(c);
	s64 v = c->local + __lazy_counter_decode(state);

	if (state & LAZY_COUNTER_UPGRADED)
		v += __lazy_counter_sum_upgraded(c);
	return v;
}

/**
 * struct lazy_counter_auto - automatic upgrade of one array of counters
 * @c: the array
 * @nr: its length
 * @target: what to upgrade to
 * @threshold: remote adds within one window that trigger the upgrade
 * @window_start: jiffies when the current window began (racy, advisory)
 * @events: remote adds seen in lazy mode in the current window
 * @work: runs the upgrade (process context)
 *
 * Remote adds made through lazy_counter_add_remote_auto() are counted
 * while the array is lazy; when @threshold of them fall within one second
 * the upgrade is queued on a workqueue.  A failed upgrade is retried on a
 * later burst.
 */
struct lazy_counter_auto {
	struct lazy_counter *c;
	unsigned int nr;
	enum lazy_counter_target target;
	unsigned int threshold;
	unsigned long window_start;
	atomic_t events;
	struct work_struct work;
};

void lazy_counter_auto_init(struct lazy_counter_auto *a, struct lazy_counter *c,
			    unsigned int nr, enum lazy_counter_target target,
			    unsigned int threshold);
void __lazy_counter_auto_event(struct lazy_counter_auto *a);
void lazy_counter_auto_destroy(struct lazy_counter_auto *a);

/**
 * lazy_counter_add_remote_auto() - lazy_counter_add_remote() with rate check
 * @a: the array's automatic-upgrade state
 * @idx: which counter of the array
 * @amount: signed amount
 *
 * Costs one more atomic increment while the array is lazy, nothing more
 * once it is upgraded.
 *
 * Context: Any context except NMI.
 */
static inline void lazy_counter_add_remote_auto(struct lazy_counter_auto *a,
						unsigned int idx, s64 amount)
{
	lazy_counter_add_remote(&a->c[idx], amount);
	if (unlikely(lazy_counter_is_lazy(&a->c[0])))
		__lazy_counter_auto_event(a);
}

/**
 * struct lazy_counter_stats - module-wide statistics
 * @upgrades: arrays upgraded
 * @upgrade_failures: upgrades that failed (allocation or injected)
 * @upgrade_races: upgrades that lost to a concurrent upgrade of the array
 * @live_groups: upgraded arrays not yet destroyed
 * @pcpu_allocs: per-CPU allocations made for targets
 * @auto_triggers: automatic upgrades queued (rate threshold crossed)
 * @auto_upgrades: automatic upgrade work items whose upgrade call returned 0
 *		   (won, or found the array already claimed)
 * @misuse: adds, reads and upgrades of destroyed counters (dropped, 0,
 *	    -EINVAL); the first one of a boot also WARNs
 *
 * All fields are slow-path counts, always kept (the add paths count
 * nothing, so CONFIG_PCPU_NEXT_STATS adds nothing here).
 */
struct lazy_counter_stats {
	u64 upgrades;
	u64 upgrade_failures;
	u64 upgrade_races;
	u64 live_groups;
	u64 pcpu_allocs;
	u64 auto_triggers;
	u64 auto_upgrades;
	u64 misuse;
};

void lazy_counter_get_stats(struct lazy_counter_stats *st);

#endif /* _PCPU_NEXT_LAZY_COUNTER_H */

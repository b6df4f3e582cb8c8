/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * lazy_upgrade.pml - SPIN model of the lazy-counter upgrade protocol
 * (lazy_counter.c, include/pcpu_next/lazy_counter.h), checked over all
 * interleavings.  Run: scripts/model.sh (TAP 13).  By hand:
 *	spin -a [-DMUTANT_...] lazy_upgrade.pml
 *	gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c && ./pan -m10000 -w25
 *
 * WHAT IS MODELLED
 * One counter (an array of nr == 1) set up by lazy_counter_init_many(c,
 * INIT, 1) with INIT = 1, and these processes running concurrently:
 *   owner      add_local(1), add_local(2)            (the single owner)
 *   remote_a   add_remote(2), add_remote(1)
 *   remote_b   add_remote(1)
 *   upgrader   x2: lazy_counter_upgrade_many(c, 1, ...) racing on the
 *              claim; each allocation may fail (nondeterministic), so the
 *              runs include: one wins, both fail, one fails and one wins,
 *              the loser backs off, the loser already sees the claim or
 *              the switch in its early check.  An automatic upgrade
 *              (lazy_auto_work) is this same call from a worker; its
 *              trigger (events/window) does not touch the counter words.
 *   reader     lazy_counter_sum(): local + decode(state) in lazy mode,
 *              local + base + target after, waiting for slot->ready
 * then, at quiescence (init, after every process ended), the value check
 * and lazy_counter_destroy_many().  With -DOWNER_SUM the reader process is
 * replaced by the owner calling lazy_counter_sum_local() after its adds
 * (a second, smaller run in scripts/model.sh).
 *
 * Granularity: one Promela statement per atomic operation or plain
 * load/store of the C code; an `atomic { }` only ever contains ONE access
 * to a shared counter word plus ghost bookkeeping (the ghost variables
 * started/done/switches/live/seen exist only for the assertions) or local
 * arithmetic.  The memory model is sequentially consistent.  Mapping of
 * the C ordering argument onto SC: (1) the fetch_adds and the xchg on
 * c->state are RMWs on one location and are totally ordered in the C code
 * too, which is exactly what SC gives here; (2) the publication of c->slot
 * and of the slot (stored before the fully ordered xchg, read after an
 * acquire load of state that sees bit 0 clear) and of slot->base (stored
 * before smp_store_release(ready), read after smp_load_acquire(ready)) are
 * release/acquire pairs: in the C code they make the writes visible in
 * program order to a reader that observed the flag, which is what SC
 * provides for free.  What SC does NOT check is that every one of those
 * pairs is really present in the C code (that is reviewed in the essay
 * and by KCSAN); the model checks the protocol logic under that premise.
 *
 * ABSTRACTIONS (and why)
 * - The target (flat per-CPU counter or counter tree) is one atomic
 *   integer per group, target[g]: add is one atomic step, and the reader
 *   reads it in one step with sum() semantics.  The targets' own
 *   correctness (batching, folding, hotplug, tree accuracy) is tested by
 *   their KUnit and stress tests; lazy_counter_read() differs from sum()
 *   only by the target's approximation (lazy_counter_read_slack()).
 * - Allocation (kzalloc of the group, ops->setup() of the storage) is one
 *   nondeterministic success/failure: both failure paths in
 *   lazy_counter_upgrade_many() free what they allocated and return
 *   -ENOMEM before touching the counter.  A new group's base/ready/target
 *   start at 0 (kzalloc, zeroed per-CPU storage).  Memory is a ghost
 *   count `live` of groups allocated and not yet freed.
 * - local_irq_save() in lazy_switch() only keeps a reader on the same CPU
 *   from spinning on ready inside the window; readers here run on other
 *   CPUs, so it has no effect on the model.
 * - Values are small unsigned bytes (amounts 1 and 2, at most 3 adds per
 *   kind): no overflow, the REMOTE_MIN/MAX range is not exercised, and
 *   negative amounts are not modelled (bit 0 is unchanged by any even
 *   addend, so the lossless argument is sign-independent; the reader's
 *   interval check needs a monotone counter).
 * - Counter statistics (lazy_stat_*) are omitted.
 *
 * MAPPING (C lines at commit 8f24819; header = lazy_counter.h)
 *   add_local     state acquire load      header:161 lazy_counter_add_local
 *                 l = c->local            header:162 (the load)
 *                 c->local = l + a        header:162 WRITE_ONCE
 *                 else target_add         header:164
 *   add_remote    state acquire load      header:185 lazy_counter_add_remote
 *                 fetch_add(state, 2a)    header:186
 *                 old bit 0 clear: redo   header:188-191 add_redirected
 *                 state clear: direct     header:194
 *   target_add    s = READ_ONCE(c->slot)  lazy_counter.c:552
 *                 target add (atomic)     lazy_counter.c:554-557
 *   upgrader      is_lazy(c[0]), slot     lazy_counter.c:667 early return
 *                 allocation, may fail    lazy_counter.c:670-683
 *                 cmpxchg(c[0].slot)      lazy_counter.c:687 (I4 claim)
 *                 loser frees its group   lazy_counter.c:688-690
 *                 xchg(state, 0)          lazy_counter.c:622 lazy_switch
 *                 base = decode(old)      lazy_counter.c:623
 *                 ready = 1 (release)     lazy_counter.c:624
 *                 assert(old & 1)         lazy_counter.c:626 WARN_ON_ONCE
 *   reader        state acquire load      header:245 lazy_counter_sum
 *                 READ_ONCE(c->local)     header:246
 *                 local + decode(state)   header:249
 *                 READ_ONCE(c->slot)      lazy_counter.c:532 ready_slot
 *                 wait for ready          lazy_counter.c:535
 *                 base, then ops->sum     lazy_counter.c:604
 *   init (end)    destroy_many            header:139-144, lazy_counter.c:
 *                                         718-729 (state = 0, slot = NULL,
 *                                         lazy_group_free)
 *
 * PROPERTIES (assertions; pan also reports invalid end states, i.e. any
 * process blocked for ever, e.g. a reader waiting on a ready never set)
 * (a) At quiescence: done == started (every add finished) and the value,
 *     computed as the C code computes it for the mode the counter is in,
 *     equals INIT + the sum of all adds: nothing lost or counted twice.
 *     Lazy at the end implies slot == NULL, no switch and no live group
 *     (I3: failed upgrades leave the counter lazy and working).  Upgraded
 *     implies one switch, ready set, exactly one live group.
 * (b) Bit 0 of state goes 1 -> 0 at most once, only by the claim winner:
 *     every fetch_add leaves bit 0 unchanged; the xchg asserts old & 1
 *     (the C code's WARN_ON_ONCE) and slot == its own group.  Every path
 *     that saw bit 0 clear finds a non-NULL slot.
 * (c) Every read v satisfies lo <= v <= hi, lo = INIT + adds completed
 *     when the read began (its state load), hi = INIT + adds begun when it
 *     ended (its last load).  Same for the owner's sum_local (OWNER_SUM),
 *     whose lo includes all its own adds, as its kernel-doc promises.
 *     This is the strongest property the code supports: it does NOT
 *     promise that a read returns a value the counter actually held at
 *     some instant (linearizable read), and it does not provide it: a
 *     lazy-mode read loads state, then local, so an update of either part
 *     in between is seen for one part and not the other.  Minimal
 *     schedule: reader loads state (remote 0); a remote add of 2 lands;
 *     then the owner adds 1; the reader loads local: it returns INIT + 1
 *     while the counter went INIT -> INIT+2 -> INIT+3.  lazy_counter_sum()
 *     documents exactly this ("a value the counter had at some point
 *     during the call for each part"), like percpu_counter_sum().
 *     -DCHECK_SNAPSHOT asserts the stronger property and pan refutes it
 *     (scripts/model.sh expects that refutation).
 * (d) No invalid end state (pan default): no deadlock, no reader stuck.
 * (e) No group leaked or freed twice: live == 0 after destroy.
 * scripts/model.sh also requires that every statement of every process
 * is reached, so every path above (redirect, direct, loser, early
 * return, allocation failure, reader wait) is really exercised.
 *
 * MUTANTS (each must fail; scripts/model.sh checks that it does)
 *   -DMUTANT_NO_REDIRECT   add_remote ignores bit 0 of the value its
 *                          fetch_add returned: the add stays in the dead
 *                          word.  Caught by (a): v != done.
 *   -DMUTANT_LOAD_STORE    the switch is a load then a store of 0 instead
 *                          of one xchg: a fetch_add between them is wiped
 *                          (it saw bit 0 set, so it does not redirect).
 *                          Caught by (a).
 *   -DMUTANT_RESET_LOCAL   the upgrade moves c->local into base and resets
 *                          it (the RFC's scheme, violating I1): an owner
 *                          that loaded local before the reset stores
 *                          old + a after it, so the old local is counted
 *                          twice.  Caught by (a).
 *   -DMUTANT_NO_READY_WAIT the reader does not wait for slot->ready and
 *                          reads base = 0 between xchg and publication:
 *                          the carried remote total is missing.  Caught by
 *                          (c): v < lo.
 *   -DMUTANT_NO_CLAIM      the claim is a load of slot then a store, not a
 *                          cmpxchg: both upgraders switch.  Caught by (b):
 *                          the second xchg sees bit 0 clear.
 *
 * STATE COUNTS (spin 6.5.2, -DSAFETY -DCOLLAPSE -w25, one core)
 *   model:      18,754,301 states stored, 35,884,082 transitions, depth
 *               94, 1.1 GB, 21-33 s (load-dependent)
 *   OWNER_SUM:   2,465,053 states stored, 4,245,536 transitions, 0.35 GB
 *   mutants:    violation found after 8,515 (NO_REDIRECT), 13,408
 *               (LOAD_STORE), 24,155 (RESET_LOCAL), 2,047,931
 *               (NO_READY_WAIT), 460,476 (NO_CLAIM) states;
 *               CHECK_SNAPSHOT after 3,292,994.
 *
 * ESSAY/DOCS VERSUS CODE (no protocol bug found; wording only)
 * - struct lazy_counter's kernel-doc says "@slot: NULL in lazy mode".  The
 *   claim (cmpxchg on c[0].slot) comes before the switch, so slot is
 *   non-NULL while bit 0 is still set for the whole claim-to-xchg window
 *   (reachable here); harmless, since lazy-mode paths never read slot,
 *   but "NULL until an upgrade claims the array" would be exact.
 * - (I2) "goes from 1 to 0 exactly once per counter": at most once (never
 *   when every upgrade failed or none ran); exactly once per upgraded
 *   counter.
 *
 * NOT COVERED
 * - Arrays of nr > 1 (the winner's WRITE_ONCE of c[i].slot, i >= 1,
 *   before the switches; a loser that returns 0 before the winner has
 *   switched the last counter).
 * - Weak memory (LKMM): the model is SC; see above.
 * - The targets' internals, CPU hotplug folding, lazy_counter_read()'s
 *   approximation, destroy racing with users (forbidden by the API),
 *   re-initialisation, overflow of the remote total, negative amounts.
 */

/* ---- configuration ----------------------------------------------------- */

#ifndef INIT
#define INIT	1		/* lazy_counter_init_many(c, INIT, 1) */
#endif

/* Amounts: positive only, so that the reader's interval check has teeth. */
#define OWNER_ADD_1	1
#define OWNER_ADD_2	2
#define REMOTE_A_1	2
#define REMOTE_A_2	1
#define REMOTE_B_1	1

/* ---- the counter: struct lazy_counter c, nr == 1 ------------------------ */

byte lcl = INIT;		/* c->local ("local" is a Promela keyword) */
byte state = 1;			/* c->state = encode(0) = (0 << 1) | 1 */
byte slot  = 0;			/* c->slot: 0 is NULL, g is &group[g].slot[0] */

/* One group per upgrader (g = 1, 2); index 0 unused (NULL). */
byte base[3];			/* slot->base (kzalloc: 0) */
bit  ready[3];			/* slot->ready (kzalloc: 0) */
byte target[3];			/* the slot's target value, one atomic int */

/* ---- ghost variables (not in the C code; used by the assertions) ------- */

byte started = INIT;		/* INIT + amounts of adds that began */
byte done    = INIT;		/* INIT + amounts of adds that completed */
byte switches = 0;		/* bit-0 clearings of c->state (I2) */
byte live = 0;			/* groups allocated and not yet freed */

/*
 * An add "lands" at the one step that makes it part of the counter's
 * value (the store to c->local, the fetch_add on a live word, the target
 * add).  CHECK_SNAPSHOT also records every value the counter takes while
 * the reader runs, to test the stronger property (not promised by the
 * code) that a read returns one of them.
 */
#ifdef CHECK_SNAPSHOT
bit  reading = 0;
int  seen = 0;			/* bit n: the counter was n during the read */
#endif

inline landed(a)
{
	done = done + a;
#ifdef CHECK_SNAPSHOT
	if
	:: reading -> seen = seen | (1 << done)
	:: else -> skip
	fi
#endif
}

inline snap_begin()
{
#ifdef CHECK_SNAPSHOT
	reading = 1;
	seen = 1 << done
#else
	skip
#endif
}

inline snap_end()
{
#ifdef CHECK_SNAPSHOT
	reading = 0
#else
	skip
#endif
}

/* ---- updaters ----------------------------------------------------------- */

/*
 * __lazy_counter_add_upgraded(): s = READ_ONCE(c->slot), then the target
 * add, abstracted as one atomic add (the flat/tree targets are checked by
 * their own KUnit and stress tests).  The add completes with it.
 */
inline target_add(a)
{
	sl = slot;
	assert(sl != 0);			/* never a NULL slot */
	atomic { target[sl] = target[sl] + a; landed(a) }
	sl = 0
}

/* lazy_counter_add_local(): the owner only */
inline add_local(a)
{
	atomic { started = started + a; s = state }	/* acquire load */
	if
	:: (s & 1) ->
		l = lcl;				/* c->local + amount */
		atomic { lcl = l + a; landed(a); l = 0 }	/* WRITE_ONCE */
	:: else ->
		target_add(a)
	fi;
	s = 0
}

/* lazy_counter_add_remote(): any context */
inline add_remote(a)
{
	atomic { started = started + a; s = state }	/* acquire load */
	if
	:: (s & 1) ->
		/* atomic_long_fetch_add_acquire(2a, &c->state) */
		atomic {
			old = state;
			state = state + 2 * a;
			assert((state & 1) == (old & 1));	/* adds never touch bit 0 */
#ifdef MUTANT_NO_REDIRECT
			landed(a)			/* believes it landed */
#else
			if
			:: (old & 1) -> landed(a)	/* landed in the live word */
			:: else -> skip
			fi
#endif
		}
#ifndef MUTANT_NO_REDIRECT
		if
		:: (old & 1) -> skip
		:: else -> target_add(a)		/* __lazy_counter_add_redirected() */
		fi;
#endif
		old = 0
	:: else ->
		target_add(a)				/* already upgraded: direct */
	fi;
	s = 0
}

proctype owner()
{
	byte s, l, sl;

	add_local(OWNER_ADD_1);
	add_local(OWNER_ADD_2);
#ifdef OWNER_SUM
	/* lazy_counter_sum_local(): own adds all in, remote ones that completed */
	byte b, t, v, lo, hi;
	atomic { lo = done; s = state }
	if
	:: (s & 1) ->
		atomic { l = lcl; hi = started }
		v = l + (s >> 1)
	:: else ->
		l = lcl;
		sl = slot;
		assert(sl != 0);
		(ready[sl] == 1);
		b = base[sl];
		atomic { t = target[sl]; hi = started }
		v = l + b + t
	fi;
	assert(lo <= v && v <= hi)
#endif
}

proctype remote_a()
{
	byte s, old, sl;

	add_remote(REMOTE_A_1);
	add_remote(REMOTE_A_2)
}

proctype remote_b()
{
	byte s, old, sl;

	add_remote(REMOTE_B_1)
}

/* ---- upgraders: lazy_counter_upgrade_many(c, 1, ...) --------------------- */

proctype upgrader(byte g)
{
	byte s, old, l, sl; bit won;

	/* already upgraded, or claimed by an upgrade in progress */
	s = state;					/* lazy_counter_is_lazy(&c[0]) */
	if
	:: !(s & 1) -> goto out
	:: else -> s = 0
	fi;
	sl = slot;					/* READ_ONCE(c[0].slot) */
	if
	:: sl != 0 -> sl = 0; goto out
	:: else -> skip
	fi;

	/*
	 * Allocation: the group (kzalloc) and the target's storage (setup).
	 * Either may fail; both failure paths free what was allocated and
	 * return -ENOMEM before touching the counter (I3), so one
	 * nondeterministic choice covers them.
	 */
	if
	:: live = live + 1				/* success */
	:: goto out					/* -ENOMEM */
	fi;

	/* I4: the claim */
#ifdef MUTANT_NO_CLAIM
	sl = slot;					/* load ... */
	if
	:: sl == 0 -> slot = g; won = 1		/* ... then store */
	:: else -> won = 0
	fi;
	sl = 0;
#else
	atomic {					/* cmpxchg(&c[0].slot, NULL, g) */
		if
		:: slot == 0 -> slot = g; won = 1
		:: else -> won = 0
		fi
	}
#endif
	if
	:: !won -> live = live - 1; goto out		/* lazy_group_free(): loser */
	:: else -> skip
	fi;

	/* lazy_switch(&c[0], &g->slot[0]) */
#ifdef MUTANT_LOAD_STORE
	old = state;					/* load ... */
	atomic {
		state = 0;				/* ... then store: not one RMW */
		assert(old & 1);
		assert(slot == g);
		switches = switches + 1
	}
#else
	atomic {					/* atomic_long_xchg(&c->state, 0) */
		old = state;
		state = 0;
		assert(old & 1);			/* WARN_ON_ONCE: 1 -> 0 once */
		assert(slot == g);			/* only the claim winner */
		switches = switches + 1
	}
#endif
#ifdef MUTANT_RESET_LOCAL
	/* the RFC's way: the local count moves into the central count */
	l = lcl;
	lcl = 0;
	base[g] = (old >> 1) + l;
	l = 0;
#else
	base[g] = old >> 1;				/* s->base = decode(old) */
#endif
	ready[g] = 1;					/* smp_store_release(&s->ready, 1) */
	old = 0;
out:
	skip
}

/* ---- reader: lazy_counter_sum() / lazy_counter_read() -------------------- */

proctype reader()
{
	byte s, l, b, t, v, lo, hi, sl;

	atomic { lo = done; s = state; snap_begin() }		/* __lazy_counter_state(): acquire */
	if
	:: (s & 1) ->
		atomic { l = lcl; hi = started; snap_end() }	/* READ_ONCE(c->local) */
		v = l + (s >> 1)			/* local + decode(state) */
	:: else ->
		l = lcl;				/* READ_ONCE(c->local) */
		sl = slot;				/* lazy_ready_slot(): READ_ONCE(c->slot) */
		assert(sl != 0);
#ifndef MUTANT_NO_READY_WAIT
		(ready[sl] == 1);			/* smp_load_acquire(&s->ready) loop */
#endif
		b = base[sl];				/* s->base */
		atomic { t = target[sl]; hi = started; snap_end() }	/* s->ops->sum(s) */
		v = l + b + t
	fi;
	assert(lo <= v && v <= hi);
#ifdef CHECK_SNAPSHOT
	assert((seen >> v) & 1);			/* fails: see the header */
	seen = 0;
#endif
	s = 0; l = 0; b = 0; t = 0; sl = 0
}

/* ---- quiescence, then lazy_counter_destroy_many() ------------------------ */

init
{
	byte v;

	atomic {
		run owner();
		run remote_a();
		run remote_b();
		run upgrader(1);
		run upgrader(2);
#ifndef OWNER_SUM
		run reader()
#else
		skip				/* the owner reads instead */
#endif
	}
	(_nr_pr == 1);					/* everybody finished */

	assert(done == started);
	if
	:: (state & 1) ->				/* never upgraded (all failed) */
		assert(slot == 0 && switches == 0 && live == 0);
		v = lcl + (state >> 1)
	:: else ->
		assert(slot != 0 && ready[slot] == 1 && switches == 1 && live == 1);
		v = lcl + base[slot] + target[slot]
	fi;
	assert(v == done);				/* (a): nothing lost or doubled */

	/* lazy_counter_destroy_many(): if (c[0].slot) destroy_upgraded() */
	if
	:: slot != 0 ->
		state = 0;
		slot = 0;
		live = live - 1				/* lazy_group_free() */
	:: else -> skip
	fi;
	assert(live == 0)				/* no group leaked or freed twice */
}

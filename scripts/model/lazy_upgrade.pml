/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * lazy_upgrade.pml - SPIN model of the lazy-counter upgrade protocol
 * (lazy_counter.c, include/pcpu_next/lazy_counter.h), checked over all
 * interleavings.  Run: scripts/model.sh (TAP 13).  By hand:
 *	spin -a [-DNR2] [-DLIVE] [-DMUTANT_...] lazy_upgrade.pml
 *	gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c && ./pan -m10000 -w25
 *
 * Two configurations share this file: the default one (nr == 1, below)
 * and -DNR2 (an array of two counters, "ARRAYS: -DNR2" further down).
 * NR2 is a compile-time variant rather than a second .pml because the
 * per-counter protocol (add_local, add_remote, target add, the switch,
 * the reader, the value check) is the same code for every counter of an
 * array: the counters are arrays indexed by counter (c[i] = lcl[i],
 * state[i], slot[i]; slot i of group g = index S(g, i)), the inlines
 * take the counter index as a constant argument, and only the process
 * set, the winner's loop over the counters and the ghost checks of the
 * loser's return differ.  A second file would have duplicated all of it
 * and let the two copies drift apart.  With nr == 1 the state space is
 * the one of the original single-counter model (same 84-byte state
 * vector, 13 more states from the reworked ghost bookkeeping).  -DLIVE
 * (below) is an orthogonal compile-time switch for the protocol
 * lazy_counter.c implements since issue 13; without it the preprocessed
 * model is token for token the one before LIVE was added (checked with
 * gcc -E on every case): the earlier xchg-and-redirect protocol, kept as
 * the comparison, with every verdict and state count below unchanged.
 *
 * ENCODING
 * Bit 0 of c->state (LAZY_COUNTER_UPGRADED) is clear in lazy mode and set
 * by the switch, so state starts at 0 (encode(0) = 0 << 1: a zero-filled
 * counter is lazy) and the switch is xchg(state, 1); lazy_counter_destroy
 * _many() leaves every counter destroyed (local 0, slot NULL, bit 0 set).
 * The model's state byte follows the C encoding exactly.  Until issue 11
 * the C code (and this model) used the opposite polarity (bit 0 set =
 * lazy, init stored 1, the switch stored 0); the protocol is the same up
 * to that bit flip, and so are the verdicts and every state count below
 * (re-run after the change: identical).
 *
 * WHAT IS MODELLED (default, nr == 1)
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
 * ARRAYS: -DNR2
 * lazy_counter_init_many(c, INIT, 2), INIT = 1, and concurrently:
 *   owner      add_local(&c[0], 1), add_local(&c[1], 2)
 *   remote     add_remote(&c[0], 2), add_remote(&c[1], 1)
 *   upgrader   x2: lazy_counter_upgrade_many(c, 2, ...), allocation may
 *              fail as above.  Early return on c[0] (is_lazy, then slot),
 *              claim = cmpxchg(c[0].slot), loser frees its own group;
 *              the winner then WRITE_ONCE(c[1].slot), lazy_switch(c[0]),
 *              lazy_switch(c[1]) (each: xchg, base, ready), returns 0.
 *   reader     lazy_counter_sum(&c[1]) (the counter switched last, whose
 *              slot is published separately)
 * then the checks at quiescence and lazy_counter_destroy_many(c, 2).
 * Every return 0 of a LOSER (early return on c[0] upgraded, early return
 * on c[0].slot set, lost cmpxchg) is marked; at that instant the model
 * asserts what a caller may rely on (property (f) below).  -DREMOTE2 adds
 * a second remote adder (add_remote(&c[1], 2)); it passes too, but with
 * 33,021,647 states, 63 s and 1.75 GB it is too big for the check lane
 * (scripts/model.sh does not run it).
 *
 * LIVE: -DLIVE (what lazy_counter.c does since issue 13, adopted after
 * this variant verified)
 * percpu-refcount style: the atomic word stays live after the switch and
 * is always summed.  Same processes, amounts, upgraders, claim (I4),
 * destroy and ghost checks as above (with or without -DNR2/-DOWNER_SUM);
 * what differs:
 *   add_remote    acquire load of state; bit 0 clear: add(state, 2a), and
 *                 the add has landed whatever bit 0 of the old value was
 *                 (no redirect: a straggler's add after the switch stays
 *                 in the live word, which is summed); bit 0 set: target
 *   lazy_switch   fetch_or(state, 1): sets bit 0, keeps the remote total;
 *                 asserts !(old & 1) and slot == own group as before
 *   no slot->base, no slot->ready (the arrays are not declared): the
 *                 switch is the whole publication
 *   reader        state acquire load, READ_ONCE(local); bit 0 clear:
 *                 local + decode(state); set: slot, target sum, and
 *                 v = local + decode(state) + target (no wait)
 *   value (a)     local + decode(state) + target in upgraded mode (the
 *                 target is 0 while no switch happened, so one formula)
 *   destroy       local 0, slot NULL, state = 1 (a store, not an or: the
 *                 word now holds a remote total that must not survive)
 * Properties (a)-(h) are asserted unchanged; (b) is "bit 0 goes 0 -> 1
 * once, by fetch_or of the claim winner", and that the or keeps the
 * remote total is not asserted at the switch but follows from (a) and (c)
 * (MUTANT_LIVE_SWITCH_XCHG).  The model does not check the orderings the
 * C code would need (SC, see below): the fetch_or must be at least
 * release (fully ordered atomic_long_fetch_or(), whose old value feeds
 * the WARN; a void atomic_long_or() is unordered and would need
 * smp_mb__before_atomic()), since it publishes c->slot and the slot's
 * target exactly as the old protocol's xchg did; readers and adders still load
 * state with acquire before using the slot; the remote add itself needs
 * neither a return value nor ordering (atomic_long_add()), because its
 * adder never reads the slot after it.
 *
 * WHAT A CALLER MAY ASSUME WHEN upgrade_many() RETURNS 0 AS A LOSER
 *   MAY:     the array is claimed: c[0].slot is set by an upgrade that
 *            can no longer fail (every allocation precedes the claim), so
 *            every counter of the array WILL be upgraded when the
 *            winner's call returns, and all counters then agree on their
 *            mode (g, h).  That window is the rest of the winner's
 *            call, which can be preempted: it is bounded in steps (two
 *            switches, no wait, no failure path), not in time.  Adds and
 *            reads on every counter stay exact (lossless, read bound) in
 *            the meantime, whatever mode each counter is in (a)-(c).  Its
 *            own group is already freed.
 *   MAY NOT: that any counter is upgraded yet: c[0] AND c[1] may both
 *            still be lazy, and c[1].slot may still be NULL (the loser
 *            saw the claim on c[0].slot before the winner published
 *            c[1].slot; refuted by REFUTE_LOSER_UPGRADED and
 *            REFUTE_LOSER_SLOT1); that !lazy_counter_is_lazy(&c[0])
 *            implies c[1] is upgraded (REFUTE_C0_MEANS_ALL: the early
 *            return on an upgraded c[0] happens while c[1] is lazy); that
 *            it won (winner and losers all return 0); that no upgrade is
 *            still in flight, so it may NOT destroy the array on the
 *            strength of its own return (lazy_counter_destroy_many()
 *            requires that no upgrade is in flight; the model only
 *            destroys once every process ended).
 *
 * Granularity: one Promela statement per atomic operation or plain
 * load/store of the C code; an `atomic { }` only ever contains ONE access
 * to a shared counter word plus ghost bookkeeping (the ghost variables
 * started/done/switches/alive/zero_ret/seen exist only for the assertions,
 * and an assertion may read any variable) or local arithmetic; the destroy
 * at the end runs alone, after every other process ended, so it is one
 * step.  The memory model is sequentially consistent.  Mapping of the C
 * ordering argument onto SC: (1) the fetch_adds and the xchg on c->state
 * are RMWs on one location and are totally ordered in the C code too, which
 * is exactly what SC gives here; (2) the publication of c->slot and of the
 * slot (stored before the fully ordered xchg, read after an acquire load of
 * state that sees bit 0 set) and of slot->base (stored before
 * smp_store_release(ready), read after smp_load_acquire(ready)) are
 * release/acquire pairs: in the C code they make the writes visible in
 * program order to a reader that observed the flag, which is what SC
 * provides for free.  What SC does NOT check is that every one of those
 * pairs is really present in the C code (that is reviewed in the essay and
 * by KCSAN); the model checks the protocol logic under that premise.
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
 *   bit alive[g] per group: allocated and not yet freed.
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
 * MAPPING (C lines of the issue-11 change; header = lazy_counter.h)
 *   add_local     state acquire load      header:192 lazy_counter_add_local
 *                 l = c->local            header:193 (the load)
 *                 c->local = l + a        header:193 WRITE_ONCE
 *                 else target_add         header:195
 *   add_remote    state acquire load      header:216 lazy_counter_add_remote
 *                 fetch_add(state, 2a)    header:217
 *                 old bit 0 set: redo     header:219-223 add_redirected
 *                 state set: direct       header:225
 *   target_add    s = READ_ONCE(c->slot)  lazy_counter.c:685
 *                 target add (atomic)     lazy_counter.c:691-694
 *   upgrader      is_lazy(c[0]), slot     lazy_counter.c:820-828 early
 *                                         return (the destroyed-array
 *                                         check, bit 0 set and no slot,
 *                                         never holds here: destroy runs
 *                                         at quiescence)
 *                 allocation, may fail    lazy_counter.c:830-844
 *                 cmpxchg(c[0].slot)      lazy_counter.c:847 (I4 claim)
 *                 loser frees its group   lazy_counter.c:848-850
 *                 slot[1] = g (NR2)       lazy_counter.c:852-853 WRITE_ONCE
 *                 lazy_switch(i), i=0,1   lazy_counter.c:854-855
 *                 xchg(state, UPGRADED)   lazy_counter.c:761 lazy_switch
 *                 base = decode(old)      lazy_counter.c:762
 *                 ready = 1 (release)     lazy_counter.c:763
 *                 assert(!(old & 1))      lazy_counter.c:765 WARN_ON_ONCE
 *   reader        state acquire load      header:276 lazy_counter_sum
 *                 READ_ONCE(c->local)     header:277
 *                 local + decode(state)   header:280
 *                 READ_ONCE(c->slot)      lazy_counter.c:659 ready_slot
 *                 wait for ready          lazy_counter.c:666
 *                 base, then ops->sum     lazy_counter.c:743
 *   init (end)    destroy_many            header:164-175, lazy_counter.c:
 *                                         879-888 (every counter to the
 *                                         destroyed state, header:140-145;
 *                                         if upgraded, one lazy_group_free
 *                                         of c[0]'s group)
 *
 * PROPERTIES (assertions; pan also reports invalid end states, i.e. any
 * process blocked for ever, e.g. a reader waiting on a ready never set)
 * (a) At quiescence: done == started (every add finished) and the value,
 *     computed as the C code computes it for the mode the counter is in,
 *     equals INIT + the sum of all adds: nothing lost or counted twice.
 *     Lazy at the end implies slot == NULL, no switch and no live group
 *     (I3: failed upgrades leave the counter lazy and working).  Upgraded
 *     implies one switch, ready set, exactly one live group.
 * (b) Bit 0 of state goes 0 -> 1 at most once, only by the claim winner:
 *     every fetch_add leaves bit 0 unchanged; the xchg asserts !(old & 1)
 *     (the C code's WARN_ON_ONCE) and slot == its own group.  Every path
 *     that saw bit 0 set finds a non-NULL slot.
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
 * (e) No group leaked, freed twice or used after free: each group g has
 *     a ghost bit alive[g]; every target add and every read of a slot
 *     asserts its group is alive, destroy asserts it frees a live group,
 *     and at quiescence at most the claim winner's group is alive (iff
 *     the array is upgraded), none after destroy.
 * NR2 adds, with (a) and (b) checked per counter (switches[i]; the xchg
 * on c[i] asserts that c[0].slot and c[i].slot are the switcher's own
 * group, i.e. only the claim winner switches, each counter once):
 * (f) At every loser's return 0: c[0].slot != NULL (the array is
 *     claimed by an upgrade that cannot fail any more).
 * (g) At quiescence both counters are in the same mode.
 * (h) At quiescence, if any call returned 0, every counter is upgraded.
 * scripts/model.sh also requires that every statement of every process
 * is reached (in the default and in the NR2 configuration), so every
 * path above (redirect, direct, loser, early return, allocation
 * failure, reader wait) is really exercised.
 *
 * MUTANTS (each must fail; scripts/model.sh checks that it does; the
 * first five on nr == 1, the last four on -DNR2)
 *   -DMUTANT_NO_REDIRECT   add_remote ignores bit 0 of the value its
 *                          fetch_add returned: the add stays in the dead
 *                          word.  Caught by (a): v != done.
 *   -DMUTANT_LOAD_STORE    the switch is a load then a store of 1 instead
 *                          of one xchg: a fetch_add between them is wiped
 *                          (it saw bit 0 clear, so it does not redirect).
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
 *                          the second xchg sees bit 0 set.
 *   -DMUTANT_SWITCH_BEFORE_SLOT  the winner switches c[1] before its
 *                          WRITE_ONCE(c[1].slot): an adder that sees c[1]
 *                          upgraded loads a NULL slot.  Caught by (b):
 *                          sl != 0 in target_add.
 *   -DMUTANT_SWITCH_BEFORE_CLAIM  lazy_switch(c[0]) before the cmpxchg:
 *                          a counter is switched by an upgrader that does
 *                          not (yet) own the claim.  Caught by (b).
 *   -DMUTANT_LOSER_FREES_WINNER  the loser frees c[0].slot's group (the
 *                          winner's) instead of its own: use after free
 *                          and a leak.  Caught by (e): alive[sl].
 *   -DMUTANT_SWITCH_ONLY_C0  the winner's switch loop stops after c[0]
 *                          (an off-by-one on nr): c[1] stays lazy with
 *                          its slot set.  Caught by (g).
 *
 * LIVE MUTANTS (with -DLIVE; each must fail, scripts/model.sh checks it)
 *   -DMUTANT_LIVE_READER_NO_WORD  after the switch the reader sums local
 *                          + target only (the word treated as dead): the
 *                          remote total of the lazy phase is missing.
 *                          Caught by (c): v < lo.
 *   -DMUTANT_LIVE_SWITCH_XCHG  the switch is xchg(state, 1), which drops
 *                          the remote total (the current protocol's xchg
 *                          without its base).  Caught by (a).
 *   -DMUTANT_LIVE_REDIRECT  the adder whose add returned bit 0 set also
 *                          repeats it on the target (the current
 *                          protocol's redirect): counted twice.  Caught
 *                          by (a).
 *   -DLIVE -DMUTANT_LOAD_STORE  the switch is a load, then a store of
 *                          old | 1: an add between them is wiped.  (a).
 *   -DLIVE -DMUTANT_NO_CLAIM  both upgraders switch.  Caught by (b).
 *   -DLIVE -DNR2 -DMUTANT_SWITCH_BEFORE_SLOT  fetch_or on c[1] before
 *                          c[1].slot is stored: an adder that sees bit 0
 *                          set loads a NULL slot.  Caught by (b): sl != 0.
 * MUTANT_NO_REDIRECT, _RESET_LOCAL and _NO_READY_WAIT mutate what LIVE
 * does not have; with -DLIVE they stop the preprocessor (#error).
 *
 * REFUTATIONS (stronger claims than the code makes; pan must refute them,
 * scripts/model.sh expects the violation): CHECK_SNAPSHOT, see (c), also
 * with -DLIVE (the lazy-mode schedule of (c) is the same there); and
 * on -DNR2, each asserted at every loser's return 0:
 *   -DREFUTE_LOSER_UPGRADED  "every counter is upgraded": refuted.
 *   -DREFUTE_LOSER_SLOT1     "c[1].slot is set": refuted.  Trail: the
 *                          winner claims c[0].slot; the loser loads c[0]
 *                          lazy, loads its slot set, returns 0; nothing
 *                          is switched and c[1].slot is still NULL.
 *   -DREFUTE_C0_MEANS_ALL    "the early return saw c[0] upgraded, so c[1]
 *                          is upgraded": refuted (winner between its two
 *                          switches).
 *
 * STATE COUNTS (spin 6.5.2, -DSAFETY -DCOLLAPSE -w25, one core)
 *   model:      18,754,314 states stored, 35,884,095 transitions, depth
 *               93-96, 1.1 GB, 21-33 s (load-dependent)
 *   OWNER_SUM:   2,465,066 states stored, 4,245,549 transitions, 0.35 GB
 *   NR2:         1,959,364 states stored, 3,712,840 transitions, depth
 *               98-102, 0.33 GB, 2.2-2.5 s
 *   mutants:    violation found after 8,514 (NO_REDIRECT), 13,408
 *               (LOAD_STORE), 24,153 (RESET_LOCAL), 2,047,944
 *               (NO_READY_WAIT), 460,482 (NO_CLAIM) states; NR2: 1,231
 *               (SWITCH_BEFORE_SLOT), 13 (SWITCH_BEFORE_CLAIM), 55,353
 *               (LOSER_FREES_WINNER), 51 (SWITCH_ONLY_C0).
 *   refuted:    CHECK_SNAPSHOT after 3,293,007; NR2: LOSER_UPGRADED and
 *               C0_MEANS_ALL after 2,191, LOSER_SLOT1 after 54,837.
 *   LIVE:        1,482,219 states stored, 2,743,689 transitions, depth
 *               83, 0.32 GB, 2.5-3.4 s (12.7x fewer than the model)
 *   LIVE OWNER_SUM: 276,199 states, 454,657 transitions, depth 83
 *   LIVE NR2:      367,815 states, 684,062 transitions, depth 88, 0.27 GB
 *   LIVE mutants: violation after 243,332 (READER_NO_WORD), 2,902
 *               (SWITCH_XCHG), 2,473 (REDIRECT), 2,903 (LOAD_STORE),
 *               43,573 (NO_CLAIM); NR2: 1,225 (SWITCH_BEFORE_SLOT).
 *               CHECK_SNAPSHOT refuted after 411,984.
 *   scripts/model.sh in all: 16 cases, 70-76 s wall on one core (gcc
 *   of pan.c is ~2.5 s of each case), peak 1.1 GB; with the ten LIVE
 *   cases, 26 cases, 187 s wall measured on 2 cores shared with a
 *   running CI (load ~2.5; the one-counter model alone took 40 s).
 *
 * ESSAY/DOCS VERSUS CODE (no protocol bug found; wording only)
 * - struct lazy_counter's kernel-doc says "@slot: NULL in lazy mode".  The
 *   claim (cmpxchg on c[0].slot) comes before the switch, so slot is
 *   non-NULL while the counter is still lazy, for the whole claim-to-xchg
 *   window (reachable here); harmless, since lazy-mode paths never read
 *   slot, but "NULL until an upgrade claims the array" would be exact.
 * - (I2) "bit 0 changes exactly once per counter": at most once (never
 *   when every upgrade failed or none ran); exactly once per upgraded
 *   counter.
 *   (Both wordings fixed in the C code since, commit 8e0aa3f.)
 * - lazy_counter_upgrade_many()'s kernel-doc says losers "return 0,
 *   possibly before the winner switched the last counter".  True, but it
 *   reads as if at least c[0] were switched: a loser may return 0 before
 *   the winner switched ANY counter, or even published c[1].slot
 *   (REFUTE_LOSER_SLOT1).  "Return: 0 if the array is (being) upgraded"
 *   is exact.  struct lazy_counter_stats' @auto_upgrades says "automatic
 *   upgrades that completed", but lazy_auto_work() counts every 0
 *   return, including a loser's or an early return while another
 *   upgrade is still switching.
 *
 * NOT COVERED
 * - Arrays of nr > 2 (the winner's loop does the same for every i >= 1
 *   as for i = 1; NR2 has one counter that is not the claim counter),
 *   counters of one array with different amounts of traffic beyond the
 *   one adder per kind, and a reader of c[0] in NR2 (covered by nr == 1).
 * - Weak memory (LKMM): the model is SC; see above.
 * - The targets' internals, CPU hotplug folding, lazy_counter_read()'s
 *   approximation, destroy racing with users (forbidden by the API),
 *   uses of a destroyed counter (KUnit: lazy_use_after_destroy_test),
 *   re-initialisation, overflow of the remote total, negative amounts.
 */

/* ---- configuration ----------------------------------------------------- */

#ifndef INIT
#define INIT	1		/* lazy_counter_init_many(c, INIT, NR) */
#endif

#ifdef NR2
#define NR	2		/* lazy_counter_init_many(c, INIT, 2) */
#define RD	1		/* the reader reads counter 1 */
/* Amounts: positive only, so that the reader's interval check has teeth. */
#define OWNER_ADD_C0	1
#define OWNER_ADD_C1	2
#define REMOTE_ADD_C0	2
#define REMOTE_ADD_C1	1
#define REMOTE2_ADD_C1	2
#else
#define NR	1
#define RD	0
#define OWNER_ADD_1	1
#define OWNER_ADD_2	2
#define REMOTE_A_1	2
#define REMOTE_A_2	1
#define REMOTE_B_1	1
#endif

#ifdef LIVE
/* mutants of the current protocol's base/ready/redirect: nothing to mutate */
#if defined(MUTANT_NO_REDIRECT) || defined(MUTANT_RESET_LOCAL) || \
    defined(MUTANT_NO_READY_WAIT)
#error "this mutant has no meaning with -DLIVE (no redirect, base or ready)"
#endif
/* the switch: fetch_or(state, 1) keeps the remote total in the live word */
#define SWITCHED(x)	((x) | 1)
#else
#if defined(MUTANT_LIVE_READER_NO_WORD) || defined(MUTANT_LIVE_SWITCH_XCHG) || \
    defined(MUTANT_LIVE_REDIRECT)
#error "MUTANT_LIVE_* needs -DLIVE"
#endif
#define SWITCHED(x)	1	/* xchg(state, UPGRADED) */
#endif

/* &group[g].slot[i] for upgrader g = 1, 2; index 0 .. NR-1 unused (NULL) */
#define S(g, i)	((g) * NR + (i))

/* ---- the counters: struct lazy_counter c[NR] ---------------------------- */

byte lcl[NR] = INIT;		/* c[i].local ("local" is a Promela keyword) */
byte state[NR] = 0;		/* c[i].state = encode(0) = 0 << 1: zero is lazy */
byte slot[NR];			/* c[i].slot: 0 is NULL, g is &group[g].slot[i] */

/* One group per upgrader (g = 1, 2), NR slots each. */
#ifndef LIVE
byte base[3 * NR];		/* slot->base (kzalloc: 0) */
bit  ready[3 * NR];		/* slot->ready (kzalloc: 0) */
#endif
byte target[3 * NR];		/* the slot's target value, one atomic int */

/* ---- ghost variables (not in the C code; used by the assertions) ------- */

byte started[NR] = INIT;	/* INIT + amounts of adds that began, per counter */
byte done[NR] = INIT;		/* INIT + amounts of adds that completed */
byte switches[NR];		/* bit-0 clearings of c[i].state (I2) */
bit  alive[3];			/* group g allocated and not yet freed */
#ifdef NR2
bit  zero_ret = 0;		/* some upgrade returned 0 (winner or loser) */
#endif

/*
 * An add "lands" at the one step that makes it part of the counter's
 * value (the store to c->local, the fetch_add on a live word, the target
 * add).  CHECK_SNAPSHOT also records every value counter RD takes while
 * the reader runs, to test the stronger property (not promised by the
 * code) that a read returns one of them.
 */
#ifdef CHECK_SNAPSHOT
bit  reading = 0;
int  seen = 0;			/* bit n: the counter was n during the read */
#endif

inline landed(i, a)
{
	done[i] = done[i] + a;
#ifdef CHECK_SNAPSHOT
	if
	:: (reading && i == RD) -> seen = seen | (1 << done[i])
	:: else -> skip
	fi
#endif
}

inline snap_begin()
{
#ifdef CHECK_SNAPSHOT
	reading = 1;
	seen = 1 << done[RD]
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
inline target_add(i, a)
{
	sl = slot[i];
	assert(sl != 0);			/* never a NULL slot */
	atomic {
		assert(alive[sl]);		/* never a freed group */
		target[S(sl, i)] = target[S(sl, i)] + a;
		landed(i, a)
	}
	sl = 0
}

/* lazy_counter_add_local(&c[i], a): the owner only */
inline add_local(i, a)
{
	atomic { started[i] = started[i] + a; s = state[i] }	/* acquire load */
	if
	:: !(s & 1) ->					/* bit 0 clear: lazy */
		l = lcl[i];				/* c->local + amount */
		atomic { lcl[i] = l + a; landed(i, a); l = 0 }	/* WRITE_ONCE */
	:: else ->
		target_add(i, a)
	fi;
	s = 0
}

/* lazy_counter_add_remote(&c[i], a): any context */
inline add_remote(i, a)
{
	atomic { started[i] = started[i] + a; s = state[i] }	/* acquire load */
	if
#if defined(LIVE) && !defined(MUTANT_LIVE_REDIRECT)
	:: !(s & 1) ->					/* bit 0 clear: lazy */
		/*
		 * LIVE: atomic_long_add(2a, &c->state).  The word is summed
		 * in every mode, so the add lands here even if the switch
		 * came first (bit 0 set in the old value): no redirect.
		 */
		atomic {
			old = state[i];
			state[i] = state[i] + 2 * a;
			assert((state[i] & 1) == (old & 1));	/* adds never touch bit 0 */
			landed(i, a);
			old = 0
		}
#else
	:: !(s & 1) ->					/* bit 0 clear: lazy */
		/* atomic_long_fetch_add_acquire(2a, &c->state) */
		atomic {
			old = state[i];
			state[i] = state[i] + 2 * a;
			assert((state[i] & 1) == (old & 1));	/* adds never touch bit 0 */
#ifdef MUTANT_NO_REDIRECT
			landed(i, a)			/* believes it landed */
#else
			if
			:: !(old & 1) -> landed(i, a)	/* landed in the live word */
			:: else -> skip
			fi
#endif
		}
#ifndef MUTANT_NO_REDIRECT
		if
		:: !(old & 1) -> skip
		:: else -> target_add(i, a)		/* __lazy_counter_add_redirected() */
		fi;
#endif
		old = 0
#endif /* LIVE */
	:: else ->
		target_add(i, a)			/* already upgraded: direct */
	fi;
	s = 0
}

#ifndef NR2
proctype owner()
{
	byte s, l, sl;

	add_local(0, OWNER_ADD_1);
	add_local(0, OWNER_ADD_2);
#ifdef OWNER_SUM
	/* lazy_counter_sum_local(): own adds all in, remote ones that completed */
	byte b, t, v, lo, hi;
	atomic { lo = done[0]; s = state[0] }
	if
	:: !(s & 1) ->
		atomic { l = lcl[0]; hi = started[0] }
		v = l + (s >> 1)
	:: else ->
		l = lcl[0];
		sl = slot[0];
		assert(sl != 0);
#ifdef LIVE
		atomic { t = target[S(sl, 0)]; hi = started[0] }
		v = l + (s >> 1) + t			/* the live word, always */
#else
		(ready[S(sl, 0)] == 1);
		b = base[S(sl, 0)];
		atomic { t = target[S(sl, 0)]; hi = started[0] }
		v = l + b + t
#endif
	fi;
	assert(lo <= v && v <= hi)
#endif
}

proctype remote_a()
{
	byte s, old, sl;

	add_remote(0, REMOTE_A_1);
	add_remote(0, REMOTE_A_2)
}

proctype remote_b()
{
	byte s, old, sl;

	add_remote(0, REMOTE_B_1)
}
#else /* NR2 */
proctype owner()
{
	byte s, l, sl;

	add_local(0, OWNER_ADD_C0);
	add_local(1, OWNER_ADD_C1)
}

proctype remote()
{
	byte s, old, sl;

	add_remote(0, REMOTE_ADD_C0);
	add_remote(1, REMOTE_ADD_C1)
}

#ifdef REMOTE2
proctype remote2()
{
	byte s, old, sl;

	add_remote(1, REMOTE2_ADD_C1)
}
#endif
#endif

/* ---- upgraders: lazy_counter_upgrade_many(c, NR, ...) -------------------- */

/*
 * A losing upgrader returns 0 here (early return or lost claim).  What a
 * caller may rely on at that instant: the array is claimed (c[0].slot is
 * set) by an upgrade that can no longer fail, so every counter will be
 * switched once the winner's call ends (checked at quiescence via
 * zero_ret).  The REFUTE_* variants assert more, which does not hold.
 */
#ifdef NR2
#define LOSER_RET(early)						\
	atomic {							\
		assert(slot[0] != 0);					\
		zero_ret = 1;						\
		loser_refute(early)					\
	};
#else
#define LOSER_RET(early)
#endif

inline loser_refute(early)
{
#if defined(REFUTE_LOSER_UPGRADED)
	/* "0 means every counter is upgraded": false */
	assert((state[0] & 1) && (state[1] & 1))
#elif defined(REFUTE_C0_MEANS_ALL)
	/* "c[0] upgraded (the early return) means c[1] is": false */
	assert(!early || (state[1] & 1))
#elif defined(REFUTE_LOSER_SLOT1)
	/* "0 means every counter's slot is set": false */
	assert(slot[1] != 0)
#else
	skip
#endif
}

/* lazy_switch(&c[i], &g->slot[i]) */
inline lazy_switch(i)
{
#ifdef MUTANT_LOAD_STORE
	old = state[i];					/* load ... */
	atomic {
		state[i] = SWITCHED(old);		/* ... then store: not one RMW */
		assert(!(old & 1));
		assert(slot[0] == g && slot[i] == g);
		switches[i] = switches[i] + 1
#ifdef LIVE
		; old = 0
#endif
	}
#elif defined(LIVE)
	atomic {					/* atomic_long_fetch_or(UPGRADED, &c->state) */
		old = state[i];
#ifdef MUTANT_LIVE_SWITCH_XCHG
		state[i] = 1;				/* xchg: the remote total is dropped */
#else
		state[i] = old | 1;			/* the remote total stays live */
#endif
		assert(!(old & 1));			/* WARN_ON_ONCE: 0 -> 1 once */
		assert(slot[0] == g && slot[i] == g);	/* only the claim winner */
		switches[i] = switches[i] + 1;
		old = 0
	}
#else
	atomic {					/* atomic_long_xchg(&c->state, UPGRADED) */
		old = state[i];
		state[i] = 1;
		assert(!(old & 1));			/* WARN_ON_ONCE: 0 -> 1 once */
		assert(slot[0] == g && slot[i] == g);	/* only the claim winner */
		switches[i] = switches[i] + 1
	}
#endif
#ifdef LIVE
	/* LIVE: no slot->base, no slot->ready: the switch is the one step */
#elif defined(MUTANT_RESET_LOCAL)
	/* the RFC's way: the local count moves into the central count */
	l = lcl[i];
	lcl[i] = 0;
	base[S(g, i)] = (old >> 1) + l;
	l = 0;
#else
	base[S(g, i)] = old >> 1;			/* s->base = decode(old) */
#endif
#ifndef LIVE
	ready[S(g, i)] = 1;				/* smp_store_release(&s->ready, 1) */
	old = 0
#endif
}

proctype upgrader(byte g)
{
	byte s, old, l, sl; bit won;

	/* already upgraded, or claimed by an upgrade in progress */
	s = state[0];					/* lazy_counter_is_lazy(&c[0]) */
	if
	:: (s & 1) -> LOSER_RET(1) goto out		/* bit 0 set: switched */
	:: else -> s = 0
	fi;
	sl = slot[0];					/* READ_ONCE(c[0].slot) */
	if
	:: sl != 0 -> sl = 0; LOSER_RET(0) goto out
	:: else -> skip
	fi;

	/*
	 * Allocation: the group (kzalloc) and the target's storage (setup).
	 * Either may fail; both failure paths free what was allocated and
	 * return -ENOMEM before touching the counters (I3), so one
	 * nondeterministic choice covers them.
	 */
	if
	:: alive[g] = 1					/* success */
	:: goto out					/* -ENOMEM */
	fi;

#ifdef MUTANT_SWITCH_BEFORE_CLAIM
	lazy_switch(0);					/* switch c[0] first, claim after */
#endif
	/* I4: the claim */
#ifdef MUTANT_NO_CLAIM
	sl = slot[0];					/* load ... */
	if
	:: sl == 0 -> slot[0] = g; won = 1		/* ... then store */
	:: else -> won = 0
	fi;
	sl = 0;
#else
	atomic {					/* cmpxchg(&c[0].slot, NULL, g) */
		if
		:: slot[0] == 0 -> slot[0] = g; won = 1
		:: else -> won = 0
		fi
	}
#endif
	if
	:: !won ->
#ifdef MUTANT_LOSER_FREES_WINNER
		atomic {				/* frees c[0].slot->group */
			sl = slot[0];
			assert(alive[sl]);		/* no double free */
			alive[sl] = 0;
			sl = 0
		};
#else
		alive[g] = 0;				/* lazy_group_free(g): loser */
#endif
		LOSER_RET(0)
		goto out
	:: else -> skip
	fi;

#ifdef NR2
	/* for (i = 1; i < nr; i++) WRITE_ONCE(c[i].slot, &g->slot[i]) */
#ifndef MUTANT_SWITCH_BEFORE_SLOT
	slot[1] = g;
#endif
	/* for (i = 0; i < nr; i++) lazy_switch(&c[i], &g->slot[i]) */
#ifndef MUTANT_SWITCH_BEFORE_CLAIM
	lazy_switch(0);
#endif
#ifdef MUTANT_SWITCH_BEFORE_SLOT
	/* counter 1 is switched before its slot is published */
	atomic {
		old = state[1];
		state[1] = SWITCHED(old);
		assert(!(old & 1));
		switches[1] = switches[1] + 1
	}
#ifndef LIVE
	base[S(g, 1)] = old >> 1;
	ready[S(g, 1)] = 1;
#endif
	old = 0;
	slot[1] = g;
#elif !defined(MUTANT_SWITCH_ONLY_C0)
	lazy_switch(1);
#endif
	zero_ret = 1;					/* the winner returns 0 */
#elif !defined(MUTANT_SWITCH_BEFORE_CLAIM)
	lazy_switch(0);
#endif
out:
	skip
}

/* ---- reader: lazy_counter_sum(&c[RD]) / lazy_counter_read() -------------- */

proctype reader()
{
	byte s, l, b, t, v, lo, hi, sl;

	atomic { lo = done[RD]; s = state[RD]; snap_begin() }	/* __lazy_counter_state(): acquire */
	if
	:: !(s & 1) ->
		atomic { l = lcl[RD]; hi = started[RD]; snap_end() }	/* READ_ONCE(c->local) */
		v = l + (s >> 1)			/* local + decode(state) */
	:: else ->
		l = lcl[RD];				/* READ_ONCE(c->local) */
		sl = slot[RD];				/* lazy_ready_slot(): READ_ONCE(c->slot) */
		assert(sl != 0);
#ifdef LIVE
		/* no wait: the remote total is in s, loaded above */
		atomic {				/* s->ops->sum(s) */
			assert(alive[sl]);
			t = target[S(sl, RD)];
			hi = started[RD];
			snap_end()
		}
#ifdef MUTANT_LIVE_READER_NO_WORD
		v = l + t				/* the word is dead after the switch */
#else
		v = l + (s >> 1) + t			/* local + decode(state) + target */
#endif
#else
#ifndef MUTANT_NO_READY_WAIT
		(ready[S(sl, RD)] == 1);		/* smp_load_acquire(&s->ready) loop */
#endif
		atomic { assert(alive[sl]); b = base[S(sl, RD)] }	/* s->base */
		atomic {				/* s->ops->sum(s) */
			assert(alive[sl]);
			t = target[S(sl, RD)];
			hi = started[RD];
			snap_end()
		}
		v = l + b + t
#endif
	fi;
	assert(lo <= v && v <= hi);
#ifdef CHECK_SNAPSHOT
	assert((seen >> v) & 1);			/* fails: see the header */
	seen = 0;
#endif
	s = 0; l = 0; b = 0; t = 0; sl = 0
}

/* ---- quiescence, then lazy_counter_destroy_many() ------------------------ */

/* __lazy_counter_mark_destroyed(&c[i]) */
inline destroyed(i)
{
	lcl[i] = 0;
	slot[i] = 0;
	state[i] = 1
}

/* (a) for counter i, computed as the C code computes it in its mode */
inline check_counter(i)
{
	assert(done[i] == started[i]);
	if
	:: !(state[i] & 1) ->			/* never upgraded (all failed) */
		assert(slot[i] == 0 && switches[i] == 0);
		v = lcl[i] + (state[i] >> 1)
	:: else ->
#ifdef LIVE
		assert(slot[i] != 0 && alive[slot[i]] && switches[i] == 1);
		v = lcl[i] + (state[i] >> 1) + target[S(slot[i], i)]
#else
		assert(slot[i] != 0 && alive[slot[i]] && ready[S(slot[i], i)] == 1 &&
		       switches[i] == 1);
		v = lcl[i] + base[S(slot[i], i)] + target[S(slot[i], i)]
#endif
	fi;
	assert(v == done[i])			/* nothing lost or doubled */
}

init
{
	byte v, g;

	atomic {
		run owner();
#ifdef NR2
		run remote();
#ifdef REMOTE2
		run remote2();
#endif
#else
		run remote_a();
		run remote_b();
#endif
		run upgrader(1);
		run upgrader(2);
#ifndef OWNER_SUM
		run reader()
#else
		skip				/* the owner reads instead */
#endif
	}
	(_nr_pr == 1);					/* everybody finished */

#ifdef NR2
	/* (g) every counter in the same mode once every call returned */
	assert((state[0] & 1) == (state[1] & 1));
	/* (h) some call returned 0: the whole array is upgraded now */
	assert(!zero_ret || (state[0] & 1));
	check_counter(0);
	check_counter(1);
#else
	check_counter(0);
#endif
	/* at most one group alive: the claim winner's, iff upgraded */
	assert(alive[1] + alive[2] == ((state[0] & 1) -> 1 : 0));

	/*
	 * lazy_counter_destroy_many(): every counter to the destroyed state
	 * (local 0, slot NULL, bit 0 set); if (c[0].slot) the group is freed
	 */
	if
	:: slot[0] != 0 ->
		atomic {
			g = slot[0];
			destroyed(0);
#ifdef NR2
			destroyed(1);
#endif
			assert(alive[g]);		/* not freed before */
			alive[g] = 0			/* lazy_group_free(s->group) */
		}
	:: else ->
		atomic {
			destroyed(0);
#ifdef NR2
			destroyed(1)
#else
			skip
#endif
		}
	fi;
	assert(!alive[1] && !alive[2])			/* no group leaked */
}

/* HEADER-PLACEHOLDER */

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
	atomic { target[sl] = target[sl] + a; done = done + a }
	sl = 0
}

/* lazy_counter_add_local(): the owner only */
inline add_local(a)
{
	atomic { started = started + a; s = state }	/* acquire load */
	if
	:: (s & 1) ->
		l = lcl;				/* c->local + amount */
		atomic { lcl = l + a; done = done + a; l = 0 }	/* WRITE_ONCE */
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
			done = done + a			/* believes it landed */
#else
			if
			:: (old & 1) -> done = done + a	/* landed in the live word */
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
	add_local(OWNER_ADD_2)
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

	atomic { lo = done; s = state }		/* __lazy_counter_state(): acquire */
	if
	:: (s & 1) ->
		atomic { l = lcl; hi = started }	/* READ_ONCE(c->local) */
		v = l + (s >> 1)			/* local + decode(state) */
	:: else ->
		l = lcl;				/* READ_ONCE(c->local) */
		sl = slot;				/* lazy_ready_slot(): READ_ONCE(c->slot) */
		assert(sl != 0);
#ifndef MUTANT_NO_READY_WAIT
		(ready[sl] == 1);			/* smp_load_acquire(&s->ready) loop */
#endif
		b = base[sl];				/* s->base */
		atomic { t = target[sl]; hi = started }	/* s->ops->sum(s) */
		v = l + b + t
	fi;
	assert(lo <= v && v <= hi);
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
		run reader()
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

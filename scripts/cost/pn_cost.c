// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pn_cost: a QEMU TCG plugin that counts what hardware prices.
 *
 * For each benchmark window the guest marks, per vCPU:
 *
 *	raw	instructions as -icount counts them (a REP string
 *		instruction once per iteration)
 *	insns	retired instructions (a REP string instruction once)
 *	mem	data accesses (a REP iteration is one)
 *	l1	L1D misses
 *	l2	L2 misses
 *	llc	misses of the shared last-level cache (DRAM accesses)
 *	xfer	L2 misses served by another vCPU's cache: the line is
 *		dirty there (written, not read elsewhere since, not
 *		evicted from the writer's L2)
 *	upg	writes to a line other vCPUs hold (their copies
 *		invalidated), unless the same instruction's load of it
 *		already missed L2 (one RFO for a read-modify-write)
 *	locked	locked read-modify-writes (LOCK prefix, XCHG with memory)
 *
 * Modeled cycles are computed from these on the host (scripts/cost.py,
 * Documentation/cost_model.rst), never here: the plugin counts, the
 * table prices.
 *
 * The cache model: per vCPU an L1D and an L2, one LLC shared by all,
 * set-associative, LRU, 64-byte lines, physical addresses.  A miss
 * fills every level; a line leaving an L2 goes to the LLC (a victim
 * cache, as Sapphire Rapids' non-inclusive L3).  A directory keeps,
 * per line, the vCPUs that hold a valid copy and the last writer while
 * its copy is dirty.  A write invalidates the other copies.
 *
 * The window marker is an x86 NOP the plugin recognises,
 * `nopl 0x4b4d4e50(%rax)` (0f 1f 80 50 4e 4d 4b), with RAX =
 * (id << 1) | end.  Windows with the same id add up.  At each end the
 * plugin writes the window's totals so far, one line per vCPU and one
 * for all, to out=FILE:
 *
 *	pn-cost ID VCPU raw insns mem l1 l2 llc xfer upg locked
 *
 * The running vCPU is found from the guest's GS base at each block:
 * QEMU 10.0.2 passes the callbacks of a block the index of the vCPU that
 * translated it (cpu_from_key()).
 * The plugin needs one TCG thread (QEMU's -icount): its caches and
 * directory are not locked.  It refuses to load without -icount's
 * single thread being promised by the icount=on argument.  vCPUs
 * hotplugged later are not counted (make rss never brings one up).
 *
 * Arguments: out=FILE (required), icount=on (required),
 * l1=KIB:WAYS, l2=KIB:WAYS, llc=KIB_PER_VCPU:WAYS.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define LINE_SHIFT	6
#define MAX_VCPUS	64
#define DIR_CHUNK_SHIFT	16
#define DIR_TOP		(1UL << (46 - LINE_SHIFT - DIR_CHUNK_SHIFT))

static const uint8_t marker[] = { 0x0f, 0x1f, 0x80, 0x50, 0x4e, 0x4d, 0x4b };

enum { C_RAW, C_INSNS, C_MEM, C_L1, C_L2, C_LLC, C_XFER, C_UPG, C_LOCKED, C_N };
static const char *const cname[C_N] = {
	"raw", "insns", "mem", "l1", "l2", "llc", "xfer", "upg", "locked",
};

/*
 * One vCPU's counters.  No inline ops: QEMU 10.0.2 under -icount
 * crashes in the code they generate (its own tests/tcg/plugins/insn.c
 * with inline=true too), so a callback per translation block adds its
 * instructions.  A block cut short by an exception still counts whole:
 * raw and insns may overcount by the instructions after a faulting one.
 */
struct vcpu {
	uint64_t c[C_N];	/* c[C_INSNS] unused: raw - rep_extra */
	uint64_t tbs;		/* blocks run */
	uint64_t rep_extra;	/* REP iterations after the first */
	uint64_t rep_pc;	/* the last REP string instruction run */
	uint64_t rep_tbs;	/* tbs when it ran */
	uint64_t last_line;	/* the line of the last access, + 1 */
	uint64_t ld_pc;		/* the last load: its instruction, */
	uint64_t ld_line;	/* line + 1, */
	bool ld_missed;		/* and whether it missed L2 */
};

struct cache {
	uint64_t *tag;		/* line + 1; 0 is empty */
	uint64_t *used;		/* LRU stamp */
	unsigned int sets, ways;
};

/* The directory, in chunks of lines, zeroed (untouched pages unused). */
struct dchunk {
	uint64_t holders[1UL << DIR_CHUNK_SHIFT];	/* vCPUs with a copy */
	uint8_t owner[1UL << DIR_CHUNK_SHIFT];		/* dirty there: vCPU + 1 */
};

struct window {
	uint64_t id;
	uint64_t *start;	/* [vcpu][C_N] at the open begin */
	uint64_t *sum;		/* [vcpu][C_N] of the closed windows */
	bool open;
};

static struct qemu_plugin_scoreboard *score;
static struct cache l1[MAX_VCPUS], l2[MAX_VCPUS], llc;
static struct dchunk *dir[DIR_TOP];
static uint64_t stamp;
static unsigned int l1_kib = 48, l1_ways = 12, l2_kib = 2048, l2_ways = 16;
static unsigned int llc_kib = 1920, llc_ways = 15;
static unsigned int nvcpus;
static struct qemu_plugin_register *rax[MAX_VCPUS];
static struct qemu_plugin_register *gs_reg, *kgs_reg;
static GByteArray *regbuf;
/*
 * The vCPU that runs, found from its registers at each block (see
 * vcpu_tb()): cpu_key[i] is vCPU i's per-CPU base, cur the running one.
 */
static uint64_t cpu_key[MAX_VCPUS], last_key;
static unsigned int nkeys, cur, stray_keys;
static GHashTable *windows;
static FILE *out;

static struct vcpu *vc(unsigned int i)
{
	return qemu_plugin_scoreboard_find(score, i);
}

static void cache_init(struct cache *c, unsigned int kib, unsigned int ways)
{
	c->ways = ways;
	c->sets = (size_t)kib * 1024 / 64 / ways;
	c->tag = g_new0(uint64_t, (size_t)c->sets * ways);
	c->used = g_new0(uint64_t, (size_t)c->sets * ways);
}

/*
 * Look @line up; on a miss fill it, evicting the least recently used
 * way.  Returns true on a hit; *evicted is the line pushed out, or ~0.
 */
static bool cache_access(struct cache *c, uint64_t line, uint64_t *evicted)
{
	size_t base = (line % c->sets) * c->ways, i, victim = base;

	*evicted = ~0ULL;
	for (i = base; i < base + c->ways; i++) {
		if (c->tag[i] == line + 1) {
			c->used[i] = ++stamp;
			return true;
		}
		if (c->used[i] < c->used[victim])
			victim = i;
	}
	if (c->tag[victim])
		*evicted = c->tag[victim] - 1;
	c->tag[victim] = line + 1;
	c->used[victim] = ++stamp;
	return false;
}

static void cache_drop(struct cache *c, uint64_t line)
{
	size_t base = (line % c->sets) * c->ways, i;

	for (i = base; i < base + c->ways; i++)
		if (c->tag[i] == line + 1) {
			c->tag[i] = 0;
			c->used[i] = 0;
		}
}

static struct dchunk *chunk(uint64_t line)
{
	uint64_t top = line >> DIR_CHUNK_SHIFT;

	if (top >= DIR_TOP)
		return NULL;
	if (!dir[top])
		dir[top] = g_malloc0(sizeof(struct dchunk));
	return dir[top];
}

#define IDX(line)	((line) & ((1UL << DIR_CHUNK_SHIFT) - 1))

/*
 * A line left vCPU @v's L2: into the LLC (a victim cache), and no
 * longer dirty in @v.
 */
static void private_evicted(unsigned int v, uint64_t line)
{
	struct dchunk *d = chunk(line);
	uint64_t ev;

	cache_access(&llc, line, &ev);
	if (!d)
		return;
	d->holders[IDX(line)] &= ~(1ULL << v);
	if (d->owner[IDX(line)] == v + 1)
		d->owner[IDX(line)] = 0;
}

/* Returns true if the access missed L2. */
static bool access_line(unsigned int v, struct vcpu *s, uint64_t line,
			bool store, bool rmw)
{
	struct dchunk *d = chunk(line);
	uint64_t bit = 1ULL << v, ev, *holders;
	bool remote = false, missed = false;
	uint8_t *owner;

	if (!d)
		return false;
	holders = &d->holders[IDX(line)];
	owner = &d->owner[IDX(line)];
	/* The line just used, still ours: an L1 hit that changes nothing. */
	if (s->last_line == line + 1 && (*holders & bit) &&
	    (!store || (*owner == v + 1 && *holders == bit)))
		return false;
	s->last_line = line + 1;
	if (!(*holders & bit)) {
		/* Any copy here is stale: a miss in every private level. */
		cache_drop(&l1[v], line);
		cache_drop(&l2[v], line);
		remote = *owner && *owner != v + 1;
	}
	if (!cache_access(&l1[v], line, &ev)) {
		s->c[C_L1]++;
		if (!cache_access(&l2[v], line, &ev)) {
			s->c[C_L2]++;
			missed = true;
			if (ev != ~0ULL) {
				cache_drop(&l1[v], ev);
				private_evicted(v, ev);
			}
			if (remote) {
				s->c[C_XFER]++;
				cache_access(&llc, line, &ev);
			} else if (!cache_access(&llc, line, &ev)) {
				s->c[C_LLC]++;
			}
		}
	}
	if (store) {
		if (!remote && !rmw && (*holders & ~bit))
			s->c[C_UPG]++;
		*holders = bit;
		*owner = v + 1;
	} else {
		*holders |= bit;
		if (remote)
			*owner = 0;	/* now shared, written back */
	}
	return missed;
}

static void mem_access(unsigned int v, qemu_plugin_meminfo_t info,
		       uint64_t vaddr, uint64_t pc)
{
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	unsigned int size = 1U << qemu_plugin_mem_size_shift(info);
	bool store = qemu_plugin_mem_is_store(info), rmw, missed;
	uint64_t pa, line;
	struct vcpu *s;

	if (!hw || qemu_plugin_hwaddr_is_io(hw) || v >= MAX_VCPUS)
		return;
	s = vc(v);
	pa = qemu_plugin_hwaddr_phys_addr(hw);
	s->c[C_MEM]++;
	line = pa >> LINE_SHIFT;
	/* The store of a read-modify-write whose load missed: one RFO. */
	rmw = store && s->ld_missed && s->ld_pc == pc && s->ld_line == line + 1;
	missed = access_line(v, s, line, store, rmw);
	if (!store) {
		s->ld_pc = pc;
		s->ld_line = line + 1;
		s->ld_missed = missed;
	}
	/* An access across a line: the second line, on its own page maybe. */
	if ((vaddr & 63) + size > 64) {
		hw = qemu_plugin_get_hwaddr(info, vaddr + size - 1);
		if (hw && !qemu_plugin_hwaddr_is_io(hw))
			access_line(v, s, qemu_plugin_hwaddr_phys_addr(hw) >> LINE_SHIFT,
				    store, false);
	}
}

static void vcpu_mem(unsigned int v, qemu_plugin_meminfo_t info,
		     uint64_t vaddr, void *udata)
{
	mem_access(cur, info, vaddr, (uintptr_t)udata);
}

static uint64_t read_reg(struct qemu_plugin_register *r)
{
	uint64_t val = 0;

	g_byte_array_set_size(regbuf, 0);
	if (r && qemu_plugin_read_register(r, regbuf) >= 8)
		memcpy(&val, regbuf->data, 8);	/* little-endian, as the host */
	return val;
}

/*
 * A per-CPU base: a kernel address below the kernel image.  0 (a user
 * GS), the image (early boot's GS) and user addresses are not.
 */
static bool cpu_key_ok(uint64_t key)
{
	return key >= 0xff00000000000000ULL && key < 0xffffffff80000000ULL;
}

/*
 * Which vCPU runs this block.  QEMU 10.0.2 under -icount passes the
 * callbacks of a block the index of the vCPU that translated it, for
 * every vCPU that runs it (a block of shared code reads as one vCPU's).
 * The guest's GS base is its CPU's per-CPU base: in the kernel GS, in
 * user mode (and on kernel entry before SWAPGS) KERNEL_GS_BASE, read
 * here if @kgs is 0 (one register read a block in the kernel).  A new
 * base is the next vCPU; until the first, the boot CPU runs.
 */
static void cpu_from_key(uint64_t gs, uint64_t kgs)
{
	uint64_t key = cpu_key_ok(gs) ? gs : kgs;
	unsigned int i;

	if (!cpu_key_ok(gs) && !kgs && kgs_reg)
		key = read_reg(kgs_reg);	/* (read only when needed) */

	if (key == last_key || !cpu_key_ok(key))
		return;
	for (i = 0; i < nkeys && cpu_key[i] != key; i++)
		;
	if (i == nkeys) {
		if (nkeys == nvcpus) {
			/* a vCPU hotplugged later, or a stray GS: not counted apart */
			if (!stray_keys++)
				fprintf(stderr, "pn_cost: more per-CPU bases than %u vCPUs: "
					"charged to the last vCPU\n", nvcpus);
			return;
		}
		cpu_key[nkeys++] = key;
	}
	cur = i;
	last_key = key;
}

static void vcpu_tb(unsigned int v, void *udata)
{
	struct vcpu *s;

	cpu_from_key(read_reg(gs_reg), 0);
	s = vc(cur);
	s->c[C_RAW] += (uintptr_t)udata;
	s->tbs++;
}

static void vcpu_locked(unsigned int v, void *udata)
{
	vc(cur)->c[C_LOCKED]++;
}

/*
 * A REP string instruction.  Under -icount QEMU runs one iteration,
 * then jumps to the instruction again: a block of its own.  So an
 * iteration after the first is this instruction again with no other
 * block run since; it does not count as retired.
 */
static void vcpu_rep(unsigned int v, void *udata)
{
	struct vcpu *s = vc(cur);
	uint64_t pc = (uintptr_t)udata;

	if (s->rep_pc == pc && s->tbs == s->rep_tbs + 1)
		s->rep_extra++;
	s->rep_pc = pc;
	s->rep_tbs = s->tbs;
}

static void snapshot(uint64_t *to)
{
	unsigned int i, k;

	for (i = 0; i < nvcpus; i++) {
		struct vcpu *s = vc(i);

		for (k = 0; k < C_N; k++)
			to[i * C_N + k] = k == C_INSNS ? s->c[C_RAW] - s->rep_extra : s->c[k];
	}
}

/*
 * vCPUs are numbered as the guest numbers its CPUs: by per-CPU base,
 * which the kernel lays out in CPU order.  vCPUs never seen come last.
 */
static unsigned int cpu_rank(unsigned int i)
{
	unsigned int j, r = 0;

	for (j = 0; j < nvcpus; j++) {
		uint64_t a = j < nkeys ? cpu_key[j] : UINT64_MAX;
		uint64_t b = i < nkeys ? cpu_key[i] : UINT64_MAX;

		if (a < b || (a == b && j < i))
			r++;
	}
	return r;
}

static void window_print(struct window *w)
{
	uint64_t all[C_N] = { 0 };
	unsigned int i, k, r, by_rank[MAX_VCPUS];

	for (i = 0; i < nvcpus; i++)
		by_rank[cpu_rank(i)] = i;
	for (r = 0; r < nvcpus; r++) {
		i = by_rank[r];
		fprintf(out, "pn-cost %" PRIu64 " %u", w->id, r);
		for (k = 0; k < C_N; k++) {
			fprintf(out, " %" PRIu64, w->sum[i * C_N + k]);
			all[k] += w->sum[i * C_N + k];
		}
		fputc('\n', out);
	}
	fprintf(out, "pn-cost %" PRIu64 " all", w->id);
	for (k = 0; k < C_N; k++)
		fprintf(out, " %" PRIu64, all[k]);
	fputc('\n', out);
	fflush(out);
}

static void vcpu_marker(unsigned int v, void *udata)
{
	g_autoptr(GByteArray) buf = g_byte_array_new();
	uint64_t val = 0, id, *now;
	struct window *w;
	unsigned int i;

	if (!rax[0] || qemu_plugin_read_register(rax[0], buf) < 8)
		return;
	memcpy(&val, buf->data, 8);	/* x86 is little-endian, as the host */
	id = val >> 1;
	w = g_hash_table_lookup(windows, &id);
	if (!w) {
		w = g_new0(struct window, 1);
		w->id = id;
		w->start = g_new0(uint64_t, MAX_VCPUS * C_N);
		w->sum = g_new0(uint64_t, MAX_VCPUS * C_N);
		g_hash_table_insert(windows, &w->id, w);
	}
	if (!(val & 1)) {
		snapshot(w->start);
		w->open = true;
		return;
	}
	if (!w->open)
		return;
	now = g_new0(uint64_t, MAX_VCPUS * C_N);
	snapshot(now);
	for (i = 0; i < nvcpus * C_N; i++)
		w->sum[i] += now[i] - w->start[i];
	g_free(now);
	w->open = false;
	window_print(w);
}

/* Is the instruction in @b a REP string one, a locked read-modify-write? */
static void decode(const uint8_t *b, size_t n, bool *rep, bool *locked)
{
	bool has_rep = false, has_lock = false;
	size_t i = 0;
	uint8_t op, modrm;

	*rep = *locked = false;
	while (i < n) {
		switch (b[i]) {
		case 0xf0:
			has_lock = true;
			i++;
			continue;
		case 0xf2: case 0xf3:
			has_rep = true;
			i++;
			continue;
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64:
		case 0x65: case 0x66: case 0x67:
			i++;
			continue;
		}
		break;
	}
	if (i < n && (b[i] & 0xf0) == 0x40)	/* REX */
		i++;
	if (i >= n)
		return;
	op = b[i];
	*locked = has_lock;
	if ((op == 0x86 || op == 0x87) && i + 1 < n) {	/* XCHG */
		modrm = b[i + 1];
		if ((modrm >> 6) != 3)
			*locked = true;
	}
	if (has_rep && ((op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) ||
			(op >= 0x6c && op <= 0x6f)))
		*rep = true;
}

static void vcpu_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i, len;
	uint8_t b[16];
	bool rep, locked;

	qemu_plugin_register_vcpu_tb_exec_cb(tb, vcpu_tb, QEMU_PLUGIN_CB_R_REGS,
					     (void *)(uintptr_t)n);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		len = qemu_plugin_insn_data(insn, b, sizeof(b));
		decode(b, len, &rep, &locked);
		if (locked)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_locked,
				QEMU_PLUGIN_CB_NO_REGS, NULL);
		if (rep)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_rep,
				QEMU_PLUGIN_CB_NO_REGS,
				(void *)(uintptr_t)qemu_plugin_insn_vaddr(insn));
		if (len == sizeof(marker) && !memcmp(b, marker, sizeof(marker)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_marker,
				QEMU_PLUGIN_CB_R_REGS, NULL);
		qemu_plugin_register_vcpu_mem_cb(insn, vcpu_mem, QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW,
						 (void *)(uintptr_t)qemu_plugin_insn_vaddr(insn));
	}
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int v)
{
	g_autoptr(GArray) regs = qemu_plugin_get_registers();
	unsigned int i;

	if (v >= MAX_VCPUS)
		return;
	cache_init(&l1[v], l1_kib, l1_ways);
	cache_init(&l2[v], l2_kib, l2_ways);
	for (i = 0; regs && i < regs->len; i++) {
		qemu_plugin_reg_descriptor *r =
			&g_array_index(regs, qemu_plugin_reg_descriptor, i);

		if (!strcmp(r->name, "rax"))
			rax[v] = r->handle;
		if (!strcmp(r->name, "gs_base"))
			gs_reg = r->handle;
		if (!strcmp(r->name, "k_gs_base"))
			kgs_reg = r->handle;
	}
	if (!rax[v])
		fprintf(stderr, "pn_cost: vCPU %u has no rax: no windows\n", v);
	if (!gs_reg || !kgs_reg)
		fprintf(stderr, "pn_cost: no gs_base, k_gs_base: every access is vCPU 0's\n");
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	if (out)
		fclose(out);
	out = NULL;
}

static bool parse_geometry(const char *v, unsigned int *kib, unsigned int *ways)
{
	char *end;
	unsigned long k = strtoul(v, &end, 10), w;

	if (*end != ':' || !k || k > (1UL << 16))
		return false;
	w = strtoul(end + 1, &end, 10);
	if (*end || !w || w > 64 || k * 1024 % (64 * w))
		return false;
	*kib = k;
	*ways = w;
	return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	bool icount = false;
	int i;

	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		const char *k = argv[i], *v = eq ? eq + 1 : "";
		size_t kl = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
		bool ok = true;

		if (kl == 3 && !strncmp(k, "out", 3))
			path = v;
		else if (kl == 6 && !strncmp(k, "icount", 6))
			ok = qemu_plugin_bool_parse("icount", v, &icount);
		else if (kl == 2 && !strncmp(k, "l1", 2))
			ok = parse_geometry(v, &l1_kib, &l1_ways);
		else if (kl == 2 && !strncmp(k, "l2", 2))
			ok = parse_geometry(v, &l2_kib, &l2_ways);
		else if (kl == 3 && !strncmp(k, "llc", 3))
			ok = parse_geometry(v, &llc_kib, &llc_ways);
		else
			ok = false;
		if (!ok) {
			fprintf(stderr, "pn_cost: bad argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "pn_cost: x86_64 system emulation only\n");
		return -1;
	}
	if (!icount) {
		fprintf(stderr, "pn_cost: needs one TCG thread: run under -icount and say icount=on\n");
		return -1;
	}
	if (!path) {
		fprintf(stderr, "pn_cost: needs out=FILE\n");
		return -1;
	}
	/* The vCPUs present at start; hotplug slots never come up here. */
	nvcpus = info->system.smp_vcpus;
	if (nvcpus > MAX_VCPUS) {
		fprintf(stderr, "pn_cost: %u vCPUs, at most %d\n", nvcpus, MAX_VCPUS);
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, "pn_cost: %s: cannot write\n", path);
		return -1;
	}
	fprintf(out, "# pn_cost vcpus=%u l1=%u:%u l2=%u:%u llc=%u:%u counters",
		nvcpus, l1_kib, l1_ways, l2_kib, l2_ways, llc_kib * nvcpus, llc_ways);
	for (i = 0; i < C_N; i++)
		fprintf(out, " %s", cname[i]);
	fputc('\n', out);
	cache_init(&llc, llc_kib * nvcpus, llc_ways);
	windows = g_hash_table_new(g_int64_hash, g_int64_equal);
	regbuf = g_byte_array_new();
	score = qemu_plugin_scoreboard_new(sizeof(struct vcpu));
	qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, vcpu_tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}

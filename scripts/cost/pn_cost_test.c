// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pn_cost_test: pn_cost.c's cache and directory model without QEMU.
 * It includes the plugin and defines the part of QEMU's plugin API the
 * plugin calls, so a test feeds vcpu_mem() the accesses it wants: a
 * "meminfo" is the size shift plus STORE, a guest page maps to the
 * physical page pt[] says.  One line per case, "ok - ..." or
 * "not ok - ... # why"; scripts/cost-check.sh numbers them.
 * Each case is a fix found in review; the comment says what the
 * plugin counted before it.
 */
#include <malloc.h>
#include <stdarg.h>

#include "pn_cost.c"

#define STORE	0x10
#define PAGES	64

struct qemu_plugin_hwaddr {
	uint64_t pa;
};

static void *board;
static size_t board_elem;
static uint64_t pt[PAGES];		/* guest page -> physical page */
static struct qemu_plugin_hwaddr hwa;
static int failed;

void *qemu_plugin_scoreboard_find(struct qemu_plugin_scoreboard *s, unsigned int i)
{
	return (char *)board + (size_t)i * board_elem;
}

struct qemu_plugin_scoreboard *qemu_plugin_scoreboard_new(size_t size)
{
	board_elem = size;
	board = g_malloc0(size * MAX_VCPUS);
	return board;
}

struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info, uint64_t vaddr)
{
	hwa.pa = pt[(vaddr >> 12) % PAGES] << 12 | (vaddr & 4095);
	return &hwa;
}

bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *h)
{
	return false;
}

uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *h)
{
	return h->pa;
}

bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info)
{
	return info & STORE;
}

unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info)
{
	return info & 7;
}

GArray *qemu_plugin_get_registers(void)
{
	return NULL;
}

/* The running vCPU's GS and KERNEL_GS_BASE (handles 1 and 2). */
static uint64_t fake_gs, fake_kgs;

int qemu_plugin_read_register(struct qemu_plugin_register *r, GByteArray *buf)
{
	uint64_t v = (uintptr_t)r == 1 ? fake_gs : fake_kgs;

	if ((uintptr_t)r != 1 && (uintptr_t)r != 2)
		return -1;
	g_byte_array_append(buf, (const guint8 *)&v, 8);
	return 8;
}

bool qemu_plugin_bool_parse(const char *name, const char *val, bool *ret)
{
	*ret = !strcmp(val, "on");
	return *ret || !strcmp(val, "off");
}

void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb)
{
}

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb)
{
}

void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *p)
{
}

/* (vcpu_tb_trans() is not run here: these four are never called) */
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb) { return 0; }
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t i)
{
	return NULL;
}
size_t qemu_plugin_insn_data(const struct qemu_plugin_insn *insn, void *d, size_t n) { return 0; }
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn) { return 0; }
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags f, void *p)
{
}
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags f, void *p)
{
}
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags f, enum qemu_plugin_mem_rw rw, void *p)
{
}

static void check(bool cond, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("%s - %s", cond ? "ok" : "not ok", what);
	if (!cond) {
		failed = 1;
		printf(" # ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
}

/* The plugin's output file, closed between cases. */
static void out_fp_close(void)
{
	if (out)
		fclose(out);
	out = NULL;
	g_free(board);
	board = NULL;
}

/* A fresh plugin: @vcpus vCPUs, the given geometry, the identity map. */
static int setup(int vcpus, const char *l1a, const char *l2a, const char *llca)
{
	char out[] = "out=/dev/null", ic[] = "icount=on", a1[32], a2[32], a3[32];
	char *argv[] = { out, ic, a1, a2, a3 };
	qemu_info_t info = { .target_name = "x86_64", .system_emulation = true };
	unsigned int v;

	snprintf(a1, sizeof(a1), "l1=%s", l1a);
	snprintf(a2, sizeof(a2), "l2=%s", l2a);
	snprintf(a3, sizeof(a3), "llc=%s", llca);
	for (v = 0; v < MAX_VCPUS; v++) {
		g_free(l1[v].tag);
		g_free(l1[v].used);
		g_free(l2[v].tag);
		g_free(l2[v].used);
		memset(&l1[v], 0, sizeof(l1[v]));
		memset(&l2[v], 0, sizeof(l2[v]));
	}
	g_free(llc.tag);
	g_free(llc.used);
	for (v = 0; v < DIR_TOP; v++) {
		g_free(dir[v]);
		dir[v] = NULL;
	}
	for (v = 0; v < PAGES; v++)
		pt[v] = v;
	nkeys = 0;
	cur = 0;
	last_key = 0;
	gs_reg = (struct qemu_plugin_register *)1;
	kgs_reg = (struct qemu_plugin_register *)2;
	fake_gs = 0;
	fake_kgs = 0;
	out_fp_close();
	info.system.smp_vcpus = vcpus;
	if (qemu_plugin_install(0, &info, 5, argv))
		return -1;
	for (v = 0; v < (unsigned int)vcpus; v++)
		vcpu_init(0, v);
	return 0;
}

static uint64_t cnt(unsigned int v, int k)
{
	return vc(v)->c[k];
}

/* One access of 2^shift bytes at guest address @va by instruction @pc. */
static void acc(unsigned int v, uint64_t va, unsigned int shift, bool store, uint64_t pc)
{
	mem_access(v, shift | (store ? STORE : 0), va, pc);
}

#define LINE(n)	((uint64_t)(n) * 64)

int main(void)
{
	struct dchunk *d;
	struct cache big;
	uint64_t line, i, llc0;
	bool dirty = false;

	/*
	 * A locked RMW of a line another vCPU wrote: its load takes the
	 * line (a transfer), its store owns it.  One RFO: before, the
	 * store counted an upgrade too.
	 */
	if (setup(2, "48:12", "2048:16", "1920:15") || setup(1, "1:16", "2:32", "4:64")) {
		printf("not ok - the plugin installs # qemu_plugin_install failed\n");
		return 1;
	}
	setup(2, "48:12", "2048:16", "1920:15");
	acc(1, LINE(10), 3, true, 0x100);
	acc(0, LINE(10), 3, false, 0x200);
	acc(0, LINE(10), 3, true, 0x200);
	check(cnt(0, C_XFER) == 1 && cnt(0, C_UPG) == 0,
	      "a locked RMW of a line another vCPU wrote: one transfer, no upgrade",
	      "xfer %lu upg %lu", cnt(0, C_XFER), cnt(0, C_UPG));
	/* ... while a store of another instruction is an upgrade. */
	acc(1, LINE(11), 3, false, 0x300);
	acc(0, LINE(11), 3, false, 0x400);
	acc(0, LINE(11), 3, true, 0x404);
	check(cnt(0, C_UPG) == 1, "a load, then another instruction's store of a shared line: an upgrade",
	      "upg %lu", cnt(0, C_UPG));

	/*
	 * The LLC as a victim cache.  L1 16 lines, L2 32, LLC 64, one set
	 * each.  A is read, then 31 lines, then A again (an L2 hit: the LLC
	 * does not see it), then 40 new lines: L2 pushes A out after 32 of
	 * them and A enters the LLC then.  A read again hits the LLC.
	 * Before, an L2 victim did not touch the LLC, whose LRU had A
	 * oldest: 72 lines through 64 ways pushed it out, a DRAM access.
	 */
	setup(1, "1:16", "2:32", "4:64");
	acc(0, LINE(0), 3, false, 1);
	for (i = 1; i <= 31; i++)
		acc(0, LINE(i), 3, false, 1);
	acc(0, LINE(0), 3, false, 1);
	for (i = 100; i < 140; i++)
		acc(0, LINE(i), 3, false, 1);
	llc0 = cnt(0, C_LLC);
	acc(0, LINE(0), 3, false, 1);
	check(llc0 == 72 && cnt(0, C_L2) == 73 && cnt(0, C_LLC) == 72,
	      "a line pushed out of L2 goes to the LLC: read again, an L2 miss and an LLC hit",
	      "llc %lu then %lu, l2 %lu", llc0, cnt(0, C_LLC), cnt(0, C_L2));

	/*
	 * An 8-byte store across a page: guest page 0 is physical page 5,
	 * page 1 is physical 9.  The second line is the first of page 9.
	 * Before, it was the line after the first, in page 6.
	 */
	setup(2, "48:12", "2048:16", "1920:15");
	pt[0] = 5;
	pt[1] = 9;
	acc(0, 4096 - 4, 3, true, 1);
	d = chunk((9 << 12) >> LINE_SHIFT);
	line = (9 << 12) >> LINE_SHIFT;
	check(d && d->owner[IDX(line)] == 1 &&
	      chunk((6 << 12) >> LINE_SHIFT)->owner[IDX((6 << 12) >> LINE_SHIFT)] == 0 &&
	      chunk(((5 << 12) + 4032) >> LINE_SHIFT)->owner[IDX(((5 << 12) + 4032) >> LINE_SHIFT)] == 1,
	      "a store across a page writes the last line of its page and the first of the next page's frame",
	      "page 9 owner %u", d ? d->owner[IDX(line)] : 255);

	/*
	 * The directory starts empty.  With the heap's big blocks reused
	 * (no mmap), a chunk gets memory a dirty block had.  Before, the
	 * chunk was not zeroed: its holders and owners were that block's
	 * bytes, and a first read counted transfers.
	 */
	setup(2, "48:12", "2048:16", "1920:15");
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	{
		void *p = malloc(sizeof(struct dchunk));

		memset(p, 0xa5, sizeof(struct dchunk));
		free(p);
	}
	pt[0] = 1ULL << 28;	/* physical 1 TiB: a chunk of its own */
	for (i = 0; i < 64; i++)
		acc(0, LINE(i), 3, false, 1);
	d = dir[((1ULL << 40) >> LINE_SHIFT) >> DIR_CHUNK_SHIFT];
	for (i = 0; d && i < (1UL << DIR_CHUNK_SHIFT); i++)
		if ((d->holders[i] & ~1ULL) || d->owner[i])
			dirty = true;
	check(d && !dirty && cnt(0, C_XFER) == 0 && cnt(0, C_UPG) == 0,
	      "a new directory chunk is empty: first reads of 64 lines, no transfer",
	      "chunk %s, xfer %lu", d ? (dirty ? "dirty" : "clean") : "missing", cnt(0, C_XFER));

	/*
	 * The running vCPU comes from the GS base, not from QEMU's index.
	 * Per-CPU bases B > A > C seen in that order are vCPUs 0, 1, 2 as
	 * found, printed by base: A is vCPU 1 of the guest, B 2, C 0.  A user
	 * GS (0) takes KERNEL_GS_BASE; with neither a per-CPU base (early
	 * boot's GS is in the kernel image) the vCPU does not change.
	 * Before, every access of a block of shared code was the vCPU's
	 * that translated it: two CPUs running one function were one.
	 */
	setup(4, "48:12", "2048:16", "1920:15");
	{
		const uint64_t A = 0xff1100013a680000ULL, B = 0xff1100013a700000ULL,
			       C = 0xff1100013a600000ULL;
		unsigned int got[6];

		cpu_from_key(0xffffffff83000000ULL, 0);	/* early boot */
		got[0] = cur;
		cpu_from_key(B, 0);
		got[1] = cur;
		cpu_from_key(0, A);			/* user mode on A */
		got[2] = cur;
		cpu_from_key(C, 0x7f0000000000ULL);
		got[3] = cur;
		cpu_from_key(0, 0);			/* no base: stays C */
		got[4] = cur;
		cpu_from_key(B, A);			/* kernel GS wins */
		got[5] = cur;
		check(got[0] == 0 && got[1] == 0 && got[2] == 1 && got[3] == 2 &&
		      got[4] == 2 && got[5] == 0 && nkeys == 3 &&
		      cpu_rank(0) == 2 && cpu_rank(1) == 1 && cpu_rank(2) == 0 && cpu_rank(3) == 3,
		      "the running vCPU from the GS base: found in order, numbered by per-CPU base",
		      "cur %u %u %u %u %u %u, ranks %u %u %u %u", got[0], got[1], got[2], got[3],
		      got[4], got[5], cpu_rank(0), cpu_rank(1), cpu_rank(2), cpu_rank(3));
	}

	/*
	 * The callbacks QEMU makes, all with index 0 (the vCPU that
	 * translated the blocks): a block in the kernel on B, one in user
	 * mode on A (GS 0, KERNEL_GS_BASE A) that stores line 20, then B's
	 * again, which loads it.  Each block and access is its own vCPU's,
	 * and B's load is a transfer from A.  Before, all were vCPU 0's:
	 * no transfer, nothing on vCPU 1.
	 */
	setup(2, "48:12", "2048:16", "1920:15");
	fake_gs = 0xff1100013a700000ULL;		/* B */
	vcpu_tb(0, (void *)5);
	vcpu_mem(0, 3, LINE(21), (void *)0x10);
	fake_gs = 0;
	fake_kgs = 0xff1100013a680000ULL;		/* A, in user mode */
	vcpu_tb(0, (void *)5);
	vcpu_mem(0, 3 | STORE, LINE(20), (void *)0x20);
	fake_gs = 0xff1100013a700000ULL;
	fake_kgs = 0;
	vcpu_tb(0, (void *)5);
	vcpu_mem(0, 3, LINE(20), (void *)0x30);
	check(cnt(0, C_RAW) == 10 && cnt(1, C_RAW) == 5 && cnt(1, C_MEM) == 1 &&
	      cnt(0, C_MEM) == 2 && cnt(0, C_XFER) == 1,
	      "callbacks of one translating vCPU go to the vCPU each GS names: B's load of A's line is a transfer",
	      "raw %lu/%lu mem %lu/%lu xfer %lu", cnt(0, C_RAW), cnt(1, C_RAW), cnt(0, C_MEM),
	      cnt(1, C_MEM), cnt(0, C_XFER));

	/*
	 * Geometry: the largest LLC the arguments allow, 64 MiB a vCPU at 64
	 * vCPUs, is 2^32 bytes.  Before, kib * 1024 in unsigned int wrapped
	 * to 0 sets.  Out-of-range arguments are refused.
	 */
	memset(&big, 0, sizeof(big));
	cache_init(&big, 65536 * 64, 64);
	check(big.sets == (1UL << 20) && big.tag && big.used,
	      "cache_init of 4 GiB, 64 ways: 2^20 sets",
	      "%u sets", big.sets);
	g_free(big.tag);
	g_free(big.used);
	{
		unsigned int k = 7, w = 7;
		bool refused = !parse_geometry("65537:16", &k, &w) && !parse_geometry("48:0", &k, &w) &&
			       !parse_geometry("48:65", &k, &w) && !parse_geometry("48:5", &k, &w) &&
			       !parse_geometry("48", &k, &w) && !parse_geometry("48:12x", &k, &w) &&
			       !parse_geometry("0:1", &k, &w);

		check(refused && k == 7 && w == 7 && parse_geometry("65536:64", &k, &w) &&
		      k == 65536 && w == 64,
		      "geometry: over 64 MiB, 0 or over 64 ways, sets not whole, junk: refused",
		      "k %u w %u", k, w);
	}
	out_fp_close();
	return failed;
}

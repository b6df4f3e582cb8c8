// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next_client: how another module uses pcpu_next.
 *
 * Everything goes through include/pcpu_next/ and pcpu_next's exported
 * symbols (the module is built against pcpu_next's Module.symvers and
 * loaded after it).  At load it exercises each component once and checks
 * the results; a failed check makes the load fail with -EINVAL, and every
 * check prints one line, so the load is the test:
 *
 *  - a constructor cache of per-CPU objects (pn_cache_*) and the typed
 *    sized API (pn_alloc_percpu(), pn_free_percpu());
 *  - an array of lazy counters, upgraded to per-CPU mode;
 *  - a counter tree;
 *  - an mm_cid-indexed counter of the loading process's mm.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include <pcpu_next/counter_tree.h>
#include <pcpu_next/lazy_counter.h>
#include <pcpu_next/mmcid_pcpu.h>
#include <pcpu_next/pcpu_alloc.h>

#define CLIENT_MAGIC	0x636c69656e74ULL

struct client_stat {
	u64 hits;
	u64 bytes;
};

static int client_failures;

#define client_check(cond, what)					\
({									\
	bool __ok = (cond);						\
									\
	pr_info("%s %s\n", __ok ? "ok" : "FAILED", what);		\
	if (!__ok)							\
		client_failures++;					\
	__ok;								\
})

/* Objects leave the cache constructed: magic in every CPU's copy. */
static int client_ctor(void __percpu *obj, void *priv, gfp_t gfp)
{
	u64 __percpu *word = obj;
	unsigned int cpu;
	u64 *p;

	for_each_possible_cpu(cpu) {
		p = per_cpu_ptr(word, cpu);
		*p = CLIENT_MAGIC;
	}
	return 0;
}

static void client_cache(void)
{
	struct client_stat __percpu *st;
	struct pn_cache *cache;
	void __percpu *obj;
	u64 sum = 0;
	unsigned int cpu;
	bool constructed = true;

	cache = pn_cache_create("client", sizeof(u64), 0, 0, client_ctor,
				NULL, NULL);
	if (!client_check(!IS_ERR(cache), "pn_cache_create"))
		return;
	obj = pn_cache_alloc(cache, GFP_KERNEL);
	if (client_check(obj, "pn_cache_alloc")) {
		u64 __percpu *word = obj;

		for_each_possible_cpu(cpu)
			if (*per_cpu_ptr(word, cpu) != CLIENT_MAGIC)
				constructed = false;
		client_check(constructed, "object constructed on every possible CPU");
		pn_cache_free(cache, obj);
	}
	client_check(!pn_cache_destroy(cache), "pn_cache_destroy: nothing left");

	st = pn_alloc_percpu(struct client_stat);
	if (!client_check(st, "pn_alloc_percpu(struct client_stat)"))
		return;
	this_cpu_inc(st->hits);
	this_cpu_add(st->bytes, 64);
	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(st, cpu)->hits + per_cpu_ptr(st, cpu)->bytes;
	client_check(sum == 65, "this_cpu_*() on it, summed over the CPUs");
	pn_free_percpu(st);
}

static void client_lazy(void)
{
	struct lazy_counter c[4] = {};	/* zero-filled: four lazy zeros */
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(c); i++) {
		lazy_counter_add_local(&c[i], 10 + i);
		lazy_counter_add_remote(&c[i], 100);
	}
	ret = lazy_counter_upgrade_many(c, ARRAY_SIZE(c), LAZY_COUNTER_FLAT,
					GFP_KERNEL);
	if (!client_check(!ret, "lazy_counter_upgrade_many(flat)"))
		return;
	client_check(!lazy_counter_is_lazy(&c[0]), "counters upgraded");
	for (i = 0; i < ARRAY_SIZE(c); i++)
		lazy_counter_add_local(&c[i], 1000);
	client_check(lazy_counter_sum(&c[3]) == 13 + 100 + 1000,
		     "lazy_counter_sum exact across the upgrade");
	lazy_counter_destroy_many(c, ARRAY_SIZE(c));
}

static void client_tree(void)
{
	/* four counters fed by the same tasks share their item rows */
	struct pn_ctree tree[4];
	struct pn_ctree_item *items;
	unsigned int i;

	/* cache-line aligned: a power-of-two kmalloc() size is */
	items = kzalloc(roundup_pow_of_two(pn_ctree_items_size_many(4)),
			GFP_KERNEL);
	if (!client_check(items, "tree items"))
		return;
	if (client_check(!pn_ctree_init_many(tree, items, 4, 32, GFP_KERNEL),
			 "pn_ctree_init_many")) {
		for (i = 0; i < 1000; i++)
			pn_ctree_add(&tree[i & 3], 3);
		client_check(pn_ctree_precise_sum(&tree[1]) == 750,
			     "pn_ctree_precise_sum");
		client_check(!pn_ctree_approx_compare_value(&tree[2], 750),
			     "pn_ctree_approx_compare_value within the range");
		pn_ctree_destroy_many(tree, 4);
	}
	kfree(items);
}

static void client_mmcid(void)
{
	struct mmcid_counter *ctr;
	struct mm_struct *mm = current->mm;
	unsigned int cpu;

	if (!client_check(mm, "loaded by a process with an mm"))
		return;
	ctr = mmcid_counter_create(mm);
	if (!client_check(!IS_ERR(ctr), "mmcid_counter_create"))
		return;
	mmcid_counter_add(ctr, 5, GFP_KERNEL, &cpu);
	mmcid_counter_add(ctr, 7, GFP_KERNEL, &cpu);
	client_check(mmcid_counter_sum(ctr) == 12, "mmcid_counter_sum");
	mmcid_counter_destroy(ctr);

	/* rss_stat's shape: four counters of the mm in one array */
	ctr = mmcid_counter_create_many(mm, 4);
	if (!client_check(!IS_ERR(ctr), "mmcid_counter_create_many"))
		return;
	mmcid_counter_add_at(ctr, 1, 3, GFP_KERNEL, &cpu);
	mmcid_counter_add_at(ctr, 3, -2, GFP_KERNEL, &cpu);
	client_check(mmcid_counter_sum_at(ctr, 1) == 3 &&
		     mmcid_counter_sum_at(ctr, 3) == -2 &&
		     mmcid_counter_sum_at(ctr, 0) == 0, "mmcid_counter_sum_at");
	mmcid_counter_destroy(ctr);
}

static int __init client_init(void)
{
	client_cache();
	client_lazy();
	client_tree();
	client_mmcid();
	pr_info("%s: %d checks failed\n", client_failures ? "FAIL" : "PASS",
		client_failures);
	return client_failures ? -EINVAL : 0;
}
module_init(client_init);

static void __exit client_exit(void)
{
}
module_exit(client_exit);

MODULE_DESCRIPTION("Sample client of pcpu_next: each component through its public API");
MODULE_LICENSE("GPL");

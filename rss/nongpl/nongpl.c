// SPDX-License-Identifier: GPL-2.0
/*
 * A module that declares a license other than the GPL and reads RSS, as
 * such modules may in mainline: get_mm_rss() and get_mm_counter() are
 * inline and use no GPL-only symbol there.  scripts/rss.sh builds it against the
 * patched kernel; modpost refuses it if the series makes one of them
 * reach a GPL-only symbol (review 2026-12-06, counters.md item 9).
 * Never loaded.
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>

static int __init nongpl_init(void)
{
	struct mm_struct *mm = current->mm;

	if (mm)
		pr_info("rss %lu, anon %lu, hiwater %lu\n", get_mm_rss(mm),
			get_mm_counter(mm, MM_ANONPAGES), get_mm_hiwater_rss(mm));
	return 0;
}
module_init(nongpl_init);

MODULE_DESCRIPTION("reads RSS under a non-GPL license (build test)");
/* the point of the test: a license modpost treats as not GPL */
MODULE_LICENSE("Proprietary");

// SPDX-License-Identifier: GPL-2.0
/* counter_tree stress and bench: being moved here from ../counter_tree.c. */

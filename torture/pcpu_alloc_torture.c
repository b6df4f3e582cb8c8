// SPDX-License-Identifier: GPL-2.0
/* pcpu_alloc stress and bench: being moved here from ../pcpu_alloc.c. */

// SPDX-License-Identifier: GPL-2.0
/* lazy_counter stress and bench: being moved here from ../lazy_counter.c. */

// SPDX-License-Identifier: GPL-2.0
/* Placeholder: the fail-nth suite is being written. */

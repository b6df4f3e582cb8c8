// SPDX-License-Identifier: GPL-2.0
/* mmcid_pcpu stress and bench: being moved here from ../mmcid_pcpu.c. */

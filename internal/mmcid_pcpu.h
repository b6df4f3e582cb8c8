/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmcid_pcpu internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/mmcid_pcpu.h).
 */
#ifndef _PCPU_NEXT_INTERNAL_MMCID_PCPU_H
#define _PCPU_NEXT_INTERNAL_MMCID_PCPU_H

#include <pcpu_next/mmcid_pcpu.h>

#endif /* _PCPU_NEXT_INTERNAL_MMCID_PCPU_H */

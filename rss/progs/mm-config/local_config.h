/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stand-in for the local_config.h that the kernel's
 * tools/testing/selftests/mm/check_config.sh generates: the guest has no
 * liburing, so cow's io_uring cases are compiled out (they skip).
 */
// No liburing support found

/* SPDX-License-Identifier: MIT */
/* The shared-library half of cpu_split: a second copy of the multiply leaf, one call deeper
 * (lib_work -> lib_leaf_mul), so unwinding has to cross libcpu_split_lib.so's frames. */
#ifndef CPU_SPLIT_LIB_H
#define CPU_SPLIT_LIB_H

#include <stdint.h>

uint64_t lib_work(uint64_t n, uint64_t x);
uint64_t lib_leaf_mul(uint64_t n, uint64_t x);

#endif

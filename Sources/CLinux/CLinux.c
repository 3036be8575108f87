/* Every function of CLinux but one is `static inline` in CLinux.h; SwiftPM builds a C target only from a
 * source file. The one here needs _GNU_SOURCE before any header. */
#define _GNU_SOURCE
#include <sched.h>
#include "CLinux.h"

int clinux_usable_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

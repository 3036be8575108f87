/* Every function of CLinux but two is `static inline` in CLinux.h; SwiftPM builds a C target only from a
 * source file. The two here need _GNU_SOURCE before any header. */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mman.h>
#include "CLinux.h"

int clinux_usable_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

int clinux_memfd(const char *name)
{
    return memfd_create(name, MFD_CLOEXEC);
}

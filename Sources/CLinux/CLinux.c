#include "CLinux.h"

/* The calling thread's deferred wake-up (see CLinux.h). */
static __thread int deferring;
static __thread int deferred;

void clinux_defer_wakeups(void) { deferring = 1; }

int clinux_wakeup_deferred(void)
{
    if (!deferring) return 0;
    deferred = 1;
    return 1;
}

int clinux_end_deferral(void)
{
    int had = deferred;
    deferring = 0;
    deferred = 0;
    return had;
}

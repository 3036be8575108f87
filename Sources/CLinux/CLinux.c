/* Every function of CLinux is `static inline` in CLinux.h; SwiftPM builds a C target only from a source file. */
#include "CLinux.h"

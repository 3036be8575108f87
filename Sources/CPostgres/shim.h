#ifndef HERALD_CPOSTGRES_SHIM_H
#define HERALD_CPOSTGRES_SHIM_H

/* libpq, PostgreSQL's C client (Debian's libpq-dev): pkg-config's libpq adds /usr/include/postgresql. */
#include <libpq-fe.h>

#endif

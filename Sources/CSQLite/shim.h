#ifndef HERALD_CSQLITE_SHIM_H
#define HERALD_CSQLITE_SHIM_H

#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import: bind copies of text and blobs through these. */

static inline int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length)
{
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

static inline int csqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length)
{
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}

/* Text and blobs that stay where they are until the statement is bound again or finalized: SQLite reads
   them in place instead of copying them (Statement keeps them in buffers of its own). */
static inline int csqlite_bind_text_in_place(sqlite3_stmt *statement, int index, const char *text, int length)
{
    return sqlite3_bind_text(statement, index, text, length, SQLITE_STATIC);
}

static inline int csqlite_bind_blob_in_place(sqlite3_stmt *statement, int index, const void *bytes, int length)
{
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_STATIC);
}

/* sqlite3_config is variadic, which Swift cannot call. Herald's store has one connection, used by one
   thread at a time: SQLite need not count its memory, which takes a global mutex at every allocation.
   Returns SQLITE_MISUSE when SQLite is already initialized (then it changes nothing). */
static inline int csqlite_stop_counting_memory(void)
{
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* Keeps the number of pages in the write-ahead log after each commit in *pages, and so replaces SQLite's
   automatic checkpoint, which would run inside the commit (SQLiteStore.tidy runs it later). */
static int csqlite_count_log_pages(void *pages, sqlite3 *database, const char *name, int count)
{
    (void)database;
    (void)name;
    *(int *)pages = count;
    return SQLITE_OK;
}

static inline void csqlite_count_log_pages_in(sqlite3 *database, int *pages)
{
    sqlite3_wal_hook(database, csqlite_count_log_pages, pages);
}

#endif

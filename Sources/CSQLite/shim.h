// Shim for SQLite 3 (Debian's libsqlite3): the loudness and incident log (--log) and its reports.
#ifndef JACKVU_CSQLITE_SHIM_H
#define JACKVU_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import.
static inline void (*jackvu_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

#endif

// Shim for SQLite 3 (Debian's libsqlite3): the loudness and incident log (--log) and its reports.
#ifndef JACKVU_CSQLITE_SHIM_H
#define JACKVU_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import.
static inline void (*jackvu_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

// Opens what others may have written narrowly (sqlite3_db_config is variadic, which Swift
// cannot call): defensive mode (no writes to the schema or its shadow tables, even with
// writable_schema), no trust in the schema (functions with side effects are refused in views,
// triggers and generated columns), no loading of extensions, and strings and blobs of at most
// `max_length` bytes (a crafted view or value cannot make a name of half a gigabyte).
static inline void jackvu_sqlite_untrusted(sqlite3 *db, int max_length) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)0);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, max_length);
    sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 100000);
}

#endif

#!/bin/sh
# On first start, makes the cluster in $PGDATA with a role and a database named herald (password
# POSTGRES_PASSWORD, which owns the database and so runs Herald's migrations); then runs PostgreSQL.
set -eu
bin=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  "$bin/initdb" -D "$PGDATA" -U postgres -E UTF8 --auth-local=peer --auth-host=scram-sha-256 >/dev/null
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" -D "$PGDATA" -w -o "-c listen_addresses='' -k /tmp" start >/dev/null
  printf '%s\n' "CREATE ROLE herald LOGIN PASSWORD :'password';" "CREATE DATABASE herald OWNER herald;" \
    | "$bin/psql" -h /tmp -U postgres -d postgres -q -v ON_ERROR_STOP=1 -v password="$POSTGRES_PASSWORD"
  "$bin/pg_ctl" -D "$PGDATA" -w stop >/dev/null
  echo "herald-postgres: made the cluster, with role and database herald"
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -k /tmp -c max_connections=200

#!/usr/bin/env bash
# The whole test suite: lint, then every test on SQLite and, at the same
# time, on PostgreSQL every test that may use the database (the others, the
# trainer's among them, run the same whatever the database: see
# tests/plugin.py). Each pass spreads whole test files over TEST_WORKERS
# pytest-xdist processes (default 3): most tests wait on the processes they
# start (workers, web servers, browsers, Redis outages), and each process
# has its own Redis, data folder and test database. `make test` runs this
# after installing the dev requirements into .venv; `make test-fast` runs
# the SQLite pass alone without the tests marked slow.
#
# It needs redis-server and Chromium (installed with apt-get when run as root,
# else it says what to install) and a PostgreSQL server: DATABASE_URL when
# set, else postgres://postgres@127.0.0.1:5432/digitslike; as root with apt-get
# and no server answering, it installs and starts one.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
PG_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/digitslike}"
DATABASE_URL_GIVEN="${DATABASE_URL:+1}"
unset DATABASE_URL

can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

apt_install() {
    echo "Installing $* with apt-get…"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
        || { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
}

need() {  # need BINARY PACKAGE
    command -v "$1" >/dev/null && return
    if can_apt; then apt_install "$2"; fi
    command -v "$1" >/dev/null || { echo "The tests need $1: install it (Debian/Ubuntu: sudo apt-get install $2)." >&2; exit 1; }
}

pg_answers() {
    $BIN/python - "$1" <<'PY'
import sys, psycopg
from urllib.parse import urlparse
u = urlparse(sys.argv[1])
try:
    psycopg.connect(host=u.hostname, port=u.port or 5432, user=u.username, password=u.password or None,
                    dbname="postgres", connect_timeout=3).close()
except psycopg.Error:
    sys.exit(1)
PY
}

ensure_postgres() {
    pg_answers "$PG_URL" && return
    if can_apt && [ -z "$DATABASE_URL_GIVEN" ]; then
        command -v pg_ctlcluster >/dev/null || apt_install postgresql
        service postgresql start >/dev/null 2>&1 || pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | tail -1)" main start
        su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null
        PG_URL="postgres://postgres:postgres@127.0.0.1:5432/digitslike"
        pg_answers "$PG_URL" && return
    fi
    echo "No PostgreSQL answers at $PG_URL. Start one, or point DATABASE_URL at one (the tests create and drop test_<name>)." >&2
    exit 1
}

need redis-server redis-server
need chromium chromium

echo "== lint"
$BIN/ruff check --no-cache .

WORKERS="${TEST_WORKERS:-3}"
PARALLEL=(-n "$WORKERS" --dist loadfile)
if [ "${1:-}" = "--fast" ]; then  # make test-fast
    shift
    echo "== tests on SQLite, without the slow ones"
    exec $BIN/python -m pytest "${PARALLEL[@]}" -m "not slow" "$@"
fi

ensure_postgres

echo "== tests on SQLite and, at the same time, on PostgreSQL ($PG_URL): its report follows SQLite's"
postgres_log="$(mktemp)"
# Both passes share the models tests/sharedruns.py trains once for a run.
export TEST_SHARED_DIR="$(mktemp -d -t digitslike-shared-XXXXXX)"
trap 'rm -f "$postgres_log"; rm -rf "$TEST_SHARED_DIR"' EXIT
set +e
DATABASE_URL="$PG_URL" DATABASE_TESTS_ONLY=1 $BIN/python -m pytest "${PARALLEL[@]}" "$@" >"$postgres_log" 2>&1 &
postgres_pid=$!
$BIN/python -m pytest "${PARALLEL[@]}" "$@"
sqlite=$?
wait "$postgres_pid"
postgres=$?
set -e
echo "== tests on PostgreSQL ($PG_URL)"
cat "$postgres_log"
echo "== SQLite: exit $sqlite; PostgreSQL: exit $postgres"
[ "$sqlite" = 0 ] && [ "$postgres" = 0 ]

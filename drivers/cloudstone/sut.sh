#!/bin/sh
# Set up and load one CloudStone SUT instance in directory DIR (pushed by vbench with
# the app, the rendered configs and schema.sql/load.sql beside this script).
#   sut.sh init DIR IMAGES      directories, static files, an empty MariaDB data dir
#   sut.sh schema DIR           create the schema and the olio user (server running)
#   sut.sh load DIR             run load.sql (server running)
#   sut.sh orphans DIR          kill PHP-FPM workers whose master is gone
# Servers themselves (mariadbd, php-fpm, nginx) are started by vbench as tracked
# processes, so that teardown, Ctrl-C and cleanup can stop them.
set -eu
cmd=$1
dir=$2
sql() { mariadb --no-defaults --socket="$dir/run/db.sock" -u root; }
case "$cmd" in
init)
  images=$3
  mkdir -p "$dir/run" "$dir/log" "$dir/static/img" "$dir/db" "$dir/tmp"
  # Page weight: event pictures of 10-39 KB and person pictures of 5-14 KB, a logo,
  # a style sheet, and a 100 KB page for the fixed-rate (web farm) profile.
  i=1
  while [ "$i" -le "$images" ]; do
    head -c $(( (10 + i * 7 % 30) * 1024 )) /dev/urandom >"$dir/static/img/event_$i.jpg"
    head -c $(( (5 + i * 3 % 10) * 1024 )) /dev/urandom >"$dir/static/img/person_$i.jpg"
    i=$((i + 1))
  done
  head -c 4096 /dev/urandom >"$dir/static/logo.png"
  printf 'body { font-family: sans-serif; }\n%.0s' $(seq 1 60) >"$dir/static/site.css"
  { printf '<!DOCTYPE html><html><body><pre>\n'
    head -c 76800 /dev/urandom | base64 -w 100
    printf '</pre></body></html>\n'; } >"$dir/static/farm100k.html"
  chmod -R a+rX "$dir"
  if [ "$(id -u)" = 0 ]; then user=--user=root; else user=; fi
  mariadb-install-db --no-defaults --datadir="$dir/db" --auth-root-authentication-method=normal \
    --skip-test-db --tmpdir="$dir/tmp" $user >"$dir/log/install-db.log" 2>&1 || {
    # Its own tmpdir: two bootstraps sharing /tmp can collide on temporary table names.
    grep -E 'ERROR|\[ERROR\]' "$dir/log/install-db.log" | tail -n 3 >&2; exit 1; }
  ;;
schema) sql <"$dir/schema.sql" ;;
load) sql <"$dir/load.sql" ;;
orphans)
  # The PHP-FPM master makes itself a session (and group) leader, so vbench's group
  # kill reaches it only through its parent; if the master itself was killed, its
  # workers are left in its group: find them by that group id and kill them.
  p=$(cat "$dir/run/php-fpm.pid" 2>/dev/null || true)
  [ -n "$p" ] || exit 0
  ps -e -o pid= -o pgid= -o args= | awk -v g="$p" '$2 == g && $3 == "php-fpm:" { print $1 }' |
    while read -r w; do kill -KILL "$w" 2>/dev/null || true; done
  ;;
*) echo "usage: sut.sh init|schema|load|orphans DIR [IMAGES]" >&2; exit 2 ;;
esac

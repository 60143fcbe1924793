# Shared by the scripts that install a Python virtual environment from a
# committed requirements file (airflow.sh, pyarrow.sh): the caller sets name
# (the venv is .cache/<name>/venv), requirements and tool (what `install`
# prints the path of), then calls venv_main "$@".
#
# The packages are installed with uv (itself from PyPI, pinned below, kept in
# .cache/uv with its download cache): pip took 2 to 4.5 minutes for
# Airflow's 130 packages here, uv about 11 s from an empty cache and 3 s from
# a warm one.

uv_version=0.13.8
# .cache may be a symlink: venvs are made at its real path.
uv_home=$(realpath -m .cache)/uv
venv=$(realpath -m .cache)/$name/venv

die() { echo "$name.sh: $*" >&2; exit 1; }

uv_install() {
  if [ -x "$uv_home/venv/bin/uv" ] && [ "$("$uv_home/venv/bin/uv" --version)" = "uv $uv_version" ]; then
    return 0
  fi
  echo "$name.sh: installing uv $uv_version from PyPI into $uv_home" >&2
  rm -rf "$uv_home/venv"
  python3 -m venv "$uv_home/venv" || die "python3 -m venv $uv_home/venv failed"
  "$uv_home/venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check "uv==$uv_version" >&2 ||
    die "pip install uv==$uv_version failed"
}

# The stamp changes with the requirements, the Python version and the venv's
# own path (its scripts name it, so a venv moved or made through another
# path is rebuilt rather than half-working).
venv_stamp() {
  { echo "$venv"; python3 -c 'import sys; print(sys.version)'; sha256sum <"$requirements"; } | sha256sum | cut -d' ' -f1
}

# venv_install creates the venv once and installs the pinned requirements; a
# later run reuses it while its stamp matches, else rebuilds it from scratch.
venv_install() {
  local stamp
  stamp=$(venv_stamp)
  if [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$stamp" ]; then
    return 0
  fi
  uv_install
  echo "$name.sh: installing $requirements into $venv" >&2
  rm -rf "$venv"
  python3 -m venv --without-pip "$venv" || die "python3 -m venv $venv failed"
  # Every package is pinned in the file, dependencies included, so the
  # resolver only checks that the set is whole.
  UV_CACHE_DIR=$uv_home/cache "$uv_home/venv/bin/uv" pip install --quiet --python "$venv/bin/python" -r "$requirements" >&2 ||
    die "uv pip install -r $requirements failed"
  echo "$stamp" >"$venv/.stamp"
}

venv_main() {
  case "${1:-}" in
  install)
    venv_install
    echo "$venv/bin/$tool"
    ;;
  *) die "usage: bash scripts/$name.sh install" ;;
  esac
}

# shellcheck shell=bash
# The pinned Ansible in a virtualenv under the cache directory (never system-wide pip).
# Sourced by scripts/provision-host and the provisioning tests.

# pul_ansible_venv REQUIREMENTS_FILE -> prints the virtualenv's directory, creating or
# updating it when the requirements changed. Progress goes to stderr.
pul_ansible_venv() {
  local requirements=$1
  local cache_dir=${PUL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/play-under-load}
  local venv stamp wanted
  venv="$cache_dir/ansible-venv-$(basename "$requirements" .txt)"
  stamp="$venv/requirements.sha256"
  # requirements-test.txt includes requirements.txt: hash both.
  wanted=$(cat "$requirements" "$(dirname "$requirements")/requirements.txt" | sha256sum | cut -d' ' -f1)
  if [[ ! -x $venv/bin/ansible-playbook || ! -f $stamp || $(cat "$stamp") != "$wanted" ]]; then
    echo "installing the pinned Ansible into $venv (about a minute, once)" >&2
    if ! python3 -m venv --clear "$venv" >/dev/null 2>&1; then
      echo "python3 -m venv failed: install python3-venv (apt-get install python3-venv)" >&2
      return 1
    fi
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2
    printf '%s\n' "$wanted" >"$stamp"
  fi
  printf '%s\n' "$venv"
}

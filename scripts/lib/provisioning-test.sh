# shellcheck shell=bash
# What the provisioning tests (container-test, vm-test) share. Sourced; each defines say().

# pul_fail_loudly: a command that fails under `set -e` ends the test saying which, where and
# with what status: no failure is silent (-E: in functions and subshells too).
pul_fail_loudly() {
  set -E
  # shellcheck disable=SC2154  # status is assigned in the trap itself
  trap 'status=$?; say "FAILED: \`$BASH_COMMAND\` exited $status (line $LINENO)" >&2; trap - ERR; exit "$status"' ERR
}

# The repository's files as they are in the working tree, for a test that copies the project
# into a container or a VM: tracked and new files, no build output (.gitignore), and not the
# tracked files that are gone from the working tree (a student's `scripts/lab run` replaces its
# lab's committed run).
# pul_worktree_tar REPO -> a tar of those files on stdout. Fails, saying why, if git or tar do.
pul_worktree_tar() {
  local repo=$1
  (
    cd "$repo" || exit 1
    git ls-files -co --exclude-standard -z |
      python3 -c 'import os, sys
names = sys.stdin.buffer.read().split(b"\0")
sys.stdout.buffer.write(b"".join(name + b"\0" for name in names if name and os.path.lexists(name)))' |
      tar --null -T - -cf -
  )
}

# pul_host_mirror ROOT -> the Debian mirror of the machine whose files are under ROOT (/: the
# host's own; a proxy or local mirror may be configured there), or deb.debian.org. Only the source files that exist are
# read: grep exits 2 for a missing one even when another matched, and under pul_fail_loudly that
# ended the command substitution with no mirror at all (a machine with debian.sources only).
pul_host_mirror() {
  local root=${1%/} files=() file uri=""
  for file in "$root"/etc/apt/sources.list.d/*.sources "$root"/etc/apt/sources.list; do
    [[ -f $file ]] && files+=("$file")
  done
  if ((${#files[@]} > 0)); then
    uri=$(grep -hE '^(URIs:|deb )' "${files[@]}" | grep -v security | grep -oE 'https?://[^ ]+' | head -n 1) || true
  fi
  printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

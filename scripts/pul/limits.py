"""Process limits a run may need raised before it starts the load generator and the server."""

from __future__ import annotations

import resource


def raise_open_files(wanted: int) -> str | None:
    """Raise this process's soft RLIMIT_NOFILE to at least `wanted`; children inherit it.

    Every connection is a file descriptor in ab and in the server, so a
    concurrency of 10,000 needs over 10,000 of them, while many shells start
    with a soft limit of 1,024. The soft limit may be raised up to the hard
    limit without privileges; beyond that only root (or limits.conf) can.
    Returns a sentence when it changed the limit or could not, None when the
    limit was already enough.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return None
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as error:
        return (f"could not raise the open-files limit from {soft} to {target} ({error}); "
                "connections beyond it will fail with 'Too many open files'")
    if target < wanted:
        return (f"raised the open-files limit from {soft} to {target}, the hard limit, short of the {wanted} "
                f"this run wants: raise the hard limit (`ulimit -Hn {wanted}` as root, or limits.conf)")
    return f"raised the open-files limit from {soft} to {target} for the load generator and the server"

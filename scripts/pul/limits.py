"""Process limits a lab may need raised before it starts ab and the server."""

from __future__ import annotations

import resource


def raise_open_files(wanted: int) -> tuple[int, str]:
    """Raise this process's soft RLIMIT_NOFILE towards `wanted` (children inherit it).

    Every connection is a file descriptor in ab and in the server, so a
    concurrency of 10,000 needs well over 10,000 of them, while many shells
    start with a soft limit of 1,024. The soft limit can be raised up to the
    hard limit without privileges; beyond that only root (or limits.conf) can.
    Returns (the soft limit now, a sentence saying what happened).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as error:
            return soft, (f"could not raise the open-files limit from {soft} to {target} ({error}); "
                          "runs needing more connections will fail with 'Too many open files'")
        if soft < wanted:
            return soft, (f"open-files limit raised to {soft}, the hard limit, short of the {wanted} wanted: "
                          f"raise it with `ulimit -Hn {wanted}` as root or in /etc/security/limits.conf")
        return soft, f"open-files limit raised to {soft} for ab and the server"
    return soft, f"open-files limit {'unlimited' if soft == resource.RLIM_INFINITY else soft} is enough"

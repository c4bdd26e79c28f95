"""The first process in a kernel's sandbox: ``python -I -S kernel_entry.py UID MEMORY PROCESSES CPU FILE COMMAND...``.

It drops root (when it has it) for the unprivileged user ``UID`` (-1: stay this user), sets the
limits — data bytes, processes of its user, CPU seconds, the largest file — and becomes the
kernel, ``COMMAND``. :class:`gpulab.grading.sandbox.Kernel` starts it by path, with the standard
library alone (``-I -S``): nothing it imports can come from the sandbox's folders.
"""

import os
import resource
import sys


def main(argv: list[str]) -> None:
    uid, memory, processes, cpu, largest = map(int, argv[:5])
    if uid >= 0 and os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    else:
        mine = sum(1 for p in os.listdir("/proc") if p.isdigit() and os.stat("/proc/" + p).st_uid == os.getuid())
        processes += mine
    for limit, value in (
        (resource.RLIMIT_DATA, memory),
        (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, largest),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))
    os.execv(argv[5], argv[5:])


if __name__ == "__main__":
    main(sys.argv[1:])

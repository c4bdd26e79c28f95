"""Removes a Python's scratch folder once that Python is gone: ``python -I -S _scratch_janitor.py FOLDER PID``.

:func:`gpulab.distributed.scratch_folder` starts it, in a session of its own, beside a kernel that may
be killed (a killed Python runs no ``atexit``). It waits while its parent is still process ``PID``,
then removes ``FOLDER``.
"""

import os
import shutil
import sys
import time


def main(folder: str, parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.2)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

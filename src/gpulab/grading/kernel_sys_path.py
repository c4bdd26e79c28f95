"""Prints, as JSON, the folders this Python reads modules from, beyond this file's own: ``python kernel_sys_path.py``.

:mod:`gpulab.grading.sandbox` runs it with the environment its kernels get, and shows the kernels
those folders (read-only) and nothing else of the machine but the system's.
"""

import json
import sys

if __name__ == "__main__":
    print(json.dumps(sys.path[1:]))

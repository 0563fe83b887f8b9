"""Another BLAS kernel and numpy's baseline SIMD, for running the tests a second time.

``python .ci/other_kernels.py`` prints the environment assignments (``NAME=value`` words for
``env``): an OpenBLAS core type other than the one the CPU selects, and
``NPY_DISABLE_CPU_FEATURES`` with every dispatched SIMD target numpy found on this CPU.
``python .ci/other_kernels.py --check`` (run under those assignments) exits non-zero unless both
took effect, so the second run can never silently be the first run again.
"""

from __future__ import annotations

import os
import platform
import sys

try:  # numpy >= 2
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:  # numpy 1.x
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__  # type: ignore[no-redef]

#: a core type every CPU of the architecture can run, older than what a CI machine selects
OTHER_CORE = {"x86_64": "Sandybridge", "AMD64": "Sandybridge", "aarch64": "ARMV8", "arm64": "ARMV8"}


def blas_architecture() -> str:
    from threadpoolctl import threadpool_info

    return ",".join(str(i.get("architecture")) for i in threadpool_info() if i.get("internal_api") == "openblas")


def main() -> int:
    if sys.argv[1:] == ["--check"]:
        want = os.environ.get("OPENBLAS_CORETYPE", "")
        arch = blas_architecture()
        found = [k for k in __cpu_dispatch__ if __cpu_features__.get(k)]
        print(f"second run: OpenBLAS kernel {arch}, numpy SIMD targets found {found or 'none (baseline only)'}")
        if want.lower() not in arch.lower() or found:
            print(f"other kernels did not take effect (wanted {want!r}, SIMD off)", file=sys.stderr)
            return 1
        return 0
    found = [k for k in __cpu_dispatch__ if __cpu_features__.get(k)]
    core = OTHER_CORE.get(platform.machine(), "")
    if core and core.lower() in blas_architecture().lower():
        core = "Nehalem" if core == "Sandybridge" else ""  # the CPU already runs that one
    words = [f"OPENBLAS_CORETYPE={core}"] if core else []
    words.append(f"NPY_DISABLE_CPU_FEATURES={' '.join(found)}")
    print("\n".join(words))
    return 0


if __name__ == "__main__":
    sys.exit(main())

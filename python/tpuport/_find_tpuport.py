"""Locating the tpuport binary that pip installed with this package."""

import os
import sys
import sysconfig


def _candidates():
    exe = "tpuport" + (sysconfig.get_config_var("EXE") or "")
    # 1. The scripts directory of the environment this package lives in (a venv, the system).
    yield os.path.join(sysconfig.get_path("scripts"), exe)
    # 2. The user scheme (`pip install --user`).
    if sys.version_info >= (3, 10):
        user_scheme = sysconfig.get_preferred_scheme("user")
    elif os.name == "nt":
        user_scheme = "nt_user"
    elif sys.platform == "darwin" and getattr(sys, "_framework", None):
        user_scheme = "osx_framework_user"
    else:
        user_scheme = "posix_user"
    yield os.path.join(sysconfig.get_path("scripts", scheme=user_scheme), exe)
    # 3. `pip install --target DIR`: the package is DIR/tpuport, the binary DIR/bin/tpuport.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    yield os.path.join(package_root, "bin", exe)


def find_tpuport_bin() -> str:
    """Returns the path of the installed tpuport binary; raises FileNotFoundError if absent."""
    tried = []
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        tried.append(path)
    raise FileNotFoundError("tpuport binary not found; looked at: " + ", ".join(tried))

"""`python -m tpuport ARGS`: runs the installed binary with ARGS."""

import os
import subprocess
import sys

from tpuport import find_tpuport_bin


def main() -> None:
    binary = os.fsdecode(find_tpuport_bin())
    env = dict(os.environ)
    # The interpreter that ran us is the one whose site-packages hold the plugin extras;
    # tell the binary, unless the user chose another.
    env.setdefault("TPUPORT_PYTHON", sys.executable)
    if sys.platform == "win32":
        sys.exit(subprocess.run([binary, *sys.argv[1:]], env=env).returncode)
    os.execve(binary, [binary, *sys.argv[1:]], env)


if __name__ == "__main__":
    main()

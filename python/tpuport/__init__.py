"""tpuport: the command-line tool, installed as a binary next to this package.

`find_tpuport_bin()` returns the path of that binary, for tools that want to call it.
"""

from ._find_tpuport import find_tpuport_bin

__all__ = ["find_tpuport_bin"]

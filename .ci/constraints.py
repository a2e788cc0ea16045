"""Write constraints.txt: the versions of every package installed in the given venvs, one venv per Python the
suite passed on, merged so that each Python gets its own where they differ (an environment marker per range).

    python .ci/constraints.py .venv-3.10/bin/python .venv/bin/python .venv-3.13/bin/python > constraints.txt

`make` installs with it (`pip install -c constraints.txt`), so a reader who installs next year gets the versions
that made the committed outputs; CI's two venvs install from it at both ends of the Python range.
"""

from __future__ import annotations

import subprocess
import sys


def installed(python: str) -> tuple[tuple[int, int], dict[str, str]]:
    """(the interpreter's (major, minor), {package: version}) of the venv of ``python``, editable installs and
    packages installed from a file or a URL left out."""
    version = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], check=True,
                             capture_output=True, text=True).stdout.split()
    frozen = subprocess.run([python, "-m", "pip", "freeze", "--exclude-editable"], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    pins = dict(line.split("==", 1) for line in frozen if "==" in line and " @ " not in line)
    return (int(version[0]), int(version[1])), {name.lower(): v for name, v in pins.items()}


def marker(versions: list[tuple[int, int]], first: int, last: int) -> str:
    """The python_version range that venvs ``first`` to ``last`` of the sorted ``versions`` stand for: from the
    first one's Python up to the next venv's after the last."""
    low = "" if first == 0 else f'python_version >= "{versions[first][0]}.{versions[first][1]}"'
    high = "" if last == len(versions) - 1 else f'python_version < "{versions[last + 1][0]}.{versions[last + 1][1]}"'
    return " and ".join(part for part in (low, high) if part)


def merged(venvs: list[tuple[tuple[int, int], dict[str, str]]]) -> list[str]:
    """One pin per package where every venv has the same version (or only some have it, as a backport:
    a constraint installs nothing), else one pin per run of venvs with the same version, with its marker."""
    venvs = sorted(venvs)
    versions = [v for v, _ in venvs]
    lines = []
    for name in sorted(set().union(*(pins for _, pins in venvs))):
        seen = [pins.get(name) for _, pins in venvs]
        if len({v for v in seen if v is not None}) == 1:
            lines.append(f"{name}=={next(v for v in seen if v is not None)}")
            continue
        first = 0
        for i in range(len(seen)):
            if i == len(seen) - 1 or seen[i + 1] != seen[i]:
                if seen[i] is not None:
                    lines.append(f"{name}=={seen[i]} ; {marker(versions, first, i)}")
                first = i + 1
    return lines


def main(pythons: list[str]) -> int:
    if not pythons:
        print(__doc__, file=sys.stderr)
        return 2
    venvs = [installed(p) for p in pythons]
    names = ", ".join(f"{major}.{minor}" for (major, minor), _ in sorted(venvs))
    print(f"# the versions the suite passed with on Python {names}; regenerate with .ci/constraints.py (README)")
    print("\n".join(merged(venvs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

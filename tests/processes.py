"""What a test leaves running: the launcher tests assert that no worker outlives its run."""

import os
from pathlib import Path


def child_processes() -> list[str]:
    """Processes whose parent is this one (zombies included: those were not reaped)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(os.getpid()):
            found.append(f"{status.parent.name} {fields.get('Name', '').strip()} {fields.get('State', '').strip()}")
    return found


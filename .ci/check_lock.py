"""Fail when the active environment holds a package that constraints.txt does not pin (at that
version): the lock is stale, e.g. a dependency was added to pyproject.toml without rerunning
tools/lock.sh. Usage: python .ci/check_lock.py [constraints.txt]"""
import re
import sys
from importlib.metadata import distributions
from pathlib import Path

UNLOCKED = {"negbench", "pip"}          # the project itself; the venv's own installer


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


lock_file = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "constraints.txt")
lock = {}
for line in lock_file.read_text().splitlines():
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)==([^\s;]+)", line)
    if m:
        lock[norm(m[1])] = m[2]
bad = []
seen = 0
for dist in distributions():
    name, version = norm(dist.metadata["Name"]), dist.version
    if name in UNLOCKED:
        continue
    seen += 1
    if name not in lock:
        bad.append(f"{name}=={version} is not in {lock_file.name}")
    elif lock[name] != version.split("+")[0]:          # 2.13.0+cpu satisfies ==2.13.0
        bad.append(f"{name}=={version} but {lock_file.name} pins {lock[name]}")
if bad:
    print("check_lock: FAIL (refresh the lock: bash tools/lock.sh)\n  " + "\n  ".join(bad))
    sys.exit(1)
print(f"check_lock: all {seen} installed packages are pinned by {lock_file.name}")

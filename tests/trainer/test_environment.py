"""The processes that hold the secrets keep their environment from the same
user's other processes, where users' code runs (``keep_private``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from trainer import environment

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534
# An interpreter any user may run (the suite's own may live in root's home).
SYSTEM_PYTHON = next((path for path in ("/usr/bin/python3", "/usr/local/bin/python3") if os.path.exists(path)), None)

# Started as an ordinary user: keeps private or not, as told, then a child
# of it (as job processes are, the same user) reads its environment.
PARENT = """
import os, subprocess, sys
import environment
if sys.argv[1] == "private":
    environment.keep_private()
reader = "import os\\ntry:\\n    print(open(f'/proc/{os.getppid()}/environ', 'rb').read().count(b'SECRET_KEY=s3cret'))\\n" \\
         "except PermissionError:\\n    print('refused')"
print(subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True).stdout.strip())
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not SYSTEM_PYTHON,
                    reason="runs its processes as another user: needs root, setpriv and a system Python")
@pytest.mark.parametrize("mode, seen", [("private", "refused"), ("open", "1")])
def test_a_process_that_keeps_private_hides_its_environment_from_its_users_other_processes(mode, seen):
    folder = Path(tempfile.mkdtemp(prefix="digitslike-private-"))  # one the ordinary user may read
    try:
        folder.chmod(0o755)
        shutil.copy(ROOT / "trainer" / "environment.py", folder / "environment.py")
        (folder / "parent.py").write_text(PARENT)
        done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                               SYSTEM_PYTHON, "parent.py", mode], cwd=folder, capture_output=True, text=True,
                              env={"PATH": os.environ["PATH"], "SECRET_KEY": "s3cret"}, timeout=60)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == seen


def test_the_environment_of_users_code_is_on_the_allow_list_alone():
    given = {"PATH": "/bin", "LC_ALL": "C", "OMP_NUM_THREADS": "2", "SECRET_KEY": "k", "DATABASE_URL": "postgres://",
             "DB_PASS": "p", "MODEL_SERVER_DEVICE": "cpu"}
    assert environment.allowed(given) == {"PATH": "/bin", "LC_ALL": "C", "OMP_NUM_THREADS": "2"}
    assert environment.allowed(given, environment.MODEL_SERVER_NAMES)["MODEL_SERVER_DEVICE"] == "cpu"

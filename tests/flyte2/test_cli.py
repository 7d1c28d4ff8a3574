"""The flyte CLI on the configuration `flytelite config init` writes, which flytekit reads too."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from flytekit.configuration import Config

from tests.e2e.flyte_cli import wait_for
from tests.flyte2.conftest import NO_SDK, PYTHON, SUCCEEDED, WORKFLOWS, run_phase

pytestmark = NO_SDK
RUN_URL = re.compile(r"/v2/domain/development/project/flytesnacks/runs/([a-z0-9]+)")


def test_flyte_run_with_the_configuration_flytelite_writes(server, tmp_path):
    config = tmp_path / "config.yaml"
    subprocess.run([sys.executable, "-m", "flytelite.cli", "config", "init", "--path", str(config), "--port",
                    str(server.port)], check=True, capture_output=True)
    assert Config.auto(str(config)).platform.endpoint == f"localhost:{server.port}"
    flyte = str(Path(PYTHON).parent / "flyte")
    proc = subprocess.run([flyte, "--config", str(config), "run", "basics.py", "square", "--x", "7"],
                          cwd=WORKFLOWS, capture_output=True, text=True, timeout=300)
    found = RUN_URL.search(proc.stdout)
    assert found, f"flyte run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    name = found.group(1)
    wait_for(lambda: run_phase(server, name) == SUCCEEDED, "the run to succeed", timeout=180)
    listed = subprocess.run([flyte, "--config", str(config), "--output-format", "json", "get", "run"],
                            cwd=WORKFLOWS, capture_output=True, text=True, timeout=120)
    assert name in listed.stdout, f"{listed.stdout}\n{listed.stderr}"
    for flags, shown in ((["--in-phase", "succeeded", "--task-name", "basics.square"], True),
                         (["--in-phase", "failed"], False), (["--task-name", "basics.shift"], False)):
        filtered = subprocess.run([flyte, "--config", str(config), "--output-format", "json", "get", "run", *flags],
                                  cwd=WORKFLOWS, capture_output=True, text=True, timeout=120)
        assert filtered.returncode == 0 and (name in filtered.stdout) == shown, (flags, filtered.stdout,
                                                                                  filtered.stderr)
    actions = subprocess.run([flyte, "--config", str(config), "--output-format", "json", "get", "action", name],
                             cwd=WORKFLOWS, capture_output=True, text=True, timeout=120)
    assert "a0" in actions.stdout and "SUCCEEDED" in actions.stdout, f"{actions.stdout}\n{actions.stderr}"
    logs = subprocess.run([flyte, "--config", str(config), "get", "logs", name],
                          cwd=WORKFLOWS, capture_output=True, text=True, timeout=120)
    assert "Flyte runtime started for action a0" in logs.stdout, f"{logs.stdout}\n{logs.stderr}"

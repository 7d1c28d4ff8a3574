"""Run the tests of flytekit's remote integration suite that need a Flyte sandbox's MinIO, against
flytelite on S3: moto's S3 server on localhost:30002 with the bucket my-s3-bucket and the credentials
minio/miniostorage (the sandbox's), a fresh flytelite whose storage_root is that bucket, and a flytekit
config that names both, as a sandbox's does. Environment only; the assertions are flytekit's.

    .venv/bin/python scripts/conformance_s3.py [CONFORMANCE_DIR] [pytest args]

CONFORMANCE_DIR defaults to ../shared/conformance/flytekit-remote beside the project. Prints pytest's
summary line last; exits with pytest's code (2 when port 30002 is taken).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from flytelite.testing import S3TestServer, make_server

PROJECT = Path(__file__).resolve().parent.parent
S3_PORT = 30002
TESTS = ("test_open_ff", "test_attr_access_sd", "test_sd_attr", "test_get_download_artifact_signed_url")


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def main(argv: list[str]) -> int:
    suite = Path(argv[0]) if argv and not argv[0].startswith("-") else PROJECT.parent / "shared/conformance/flytekit-remote"
    pytest_args = argv[1:] if argv and not argv[0].startswith("-") else argv
    if port_taken(S3_PORT):
        print(f"port {S3_PORT} is taken: the suite expects its S3 server there; free it first")
        return 2
    work = Path(tempfile.mkdtemp(prefix="flytekit-remote-s3-"))
    s3 = S3TestServer(S3_PORT, work / "moto.log")
    s3.start()
    # Tasks import the suite's workflow modules the way flytekit's test image does (as run.sh sets it).
    os.environ["PYTHONPATH"] = f"{suite}{os.pathsep}{suite / 'tests/flytekit/integration/remote'}"
    os.environ["FLYTE_SDK_RICH_TRACEBACKS"] = "0"
    server = make_server(work, s3.server_config() + f"images:\n  default: {sys.executable}\n")
    try:
        server.start()
        server.config_path.write_text(f"admin:\n  endpoint: dns:///127.0.0.1:{server.port}\n  insecure: true\n"
                                      + s3.client_config())
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   FLYTECTL_CONFIG=str(server.config_path), FLYTELITE_TEST_ENDPOINT=f"localhost:{server.port}",
                   FLYTEKIT_CI="1")
        log = work / "pytest.log"
        with open(log, "w") as out:
            code = subprocess.call(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-rA", "--timeout", "600",
                 "-m", "not lftransfers", "tests/flytekit/integration/remote", "-k", " or ".join(TESTS), *pytest_args],
                cwd=suite, env=env, stdout=out, stderr=subprocess.STDOUT)
        lines = log.read_text(errors="replace").splitlines()
        for line in lines:
            if line.startswith(("PASSED", "FAILED", "ERROR")) or " PASSED" in line or " FAILED" in line:
                print(line)
        print(f"server log: {server.log_path}; pytest log: {log}")
        print(lines[-1] if lines else "no pytest output")
        return code
    finally:
        server.stop()
        s3.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

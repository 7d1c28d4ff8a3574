"""The `flytelite` command: start the server, write a flytekit config."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from flytelite.config import DEFAULT_PORT, Config

FLYTEKIT_CONFIG = """\
admin:
  # flytelite serves gRPC and HTTP on one port
  endpoint: dns:///localhost:{port}
  insecure: true
"""


def _start(args: argparse.Namespace) -> int:
    from flytelite.server import FlyteliteServer

    config = Config.load(args.config, home=args.home, port=args.port, host=args.host)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        asyncio.run(FlyteliteServer(config).run())
    except OSError as exc:
        print(f"flytelite could not start: {exc}. Is another server on port {config.port}? Try --port.",
              file=sys.stderr)
        return 1
    return 0


def _config_init(args: argparse.Namespace) -> int:
    path = Path(args.path).expanduser()
    if path.exists() and not args.force:
        print(f"{path} exists; left unchanged (use --force to overwrite)")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FLYTEKIT_CONFIG.format(port=args.port))
    print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flytelite", description="A Flyte backend without Kubernetes.")
    sub = parser.add_subparsers(dest="command", required=True)

    start = sub.add_parser("start", help="start the server (gRPC + HTTP on one port)")
    start.add_argument("--port", type=int, default=None, help=f"public port (default {DEFAULT_PORT})")
    start.add_argument("--host", default=None, help="address to listen on (default 0.0.0.0)")
    start.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
    start.add_argument("--config", type=Path, default=None, help="YAML configuration file")
    start.add_argument("--log-level", default="info")
    start.set_defaults(func=_start)

    config = sub.add_parser("config", help="client configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    init = config_sub.add_parser("init", help="write ~/.flyte/config.yaml for flytekit unless one exists")
    init.add_argument("--port", type=int, default=DEFAULT_PORT)
    init.add_argument("--path", default="~/.flyte/config.yaml")
    init.add_argument("--force", action="store_true")
    init.set_defaults(func=_config_init)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

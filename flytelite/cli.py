"""The `flytelite` command: start the server, write a flytekit config, see replicas, see and evict the cache,
remove old executions (gc), upgrade the database's schema, back up and restore a home, hash client secrets
and passwords for the `auth:` configuration."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from flytelite.config import DEFAULT_PORT, Config

if TYPE_CHECKING:
    from flytelite.plugins.registry import PluginRegistry

FLYTEKIT_CONFIG = """\
admin:
  # flytelite serves gRPC and HTTP on one port: flytekit's and the flyte 2.x SDK's API
  endpoint: dns:///localhost:{port}
  insecure: true
task:
  # where the flyte 2.x SDK runs tasks unless told otherwise (flytekit reads no defaults from here)
  project: flytesnacks
  domain: development
"""


def start_server(args: argparse.Namespace, plugins: PluginRegistry | None = None) -> int:
    """`flytelite start`; `plugins` replaces the engine's task plugins (benchmarks/noop_server.py)."""
    from flytelite.logs import configure as configure_logging
    from flytelite.server import FlyteliteServer
    from flytelite.store.db import SchemaMismatch

    config = Config.load(args.config, home=args.home, port=args.port, host=args.host, role=args.role,
                         tls_cert=args.tls_cert, tls_key=args.tls_key)
    configure_logging(config.logging, args.log_level)
    try:
        asyncio.run(FlyteliteServer(config, plugins).run())
    except SchemaMismatch as exc:
        print(f"flytelite could not start: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"flytelite could not start: {exc}. Is another server on port {config.port}? Try --port.",
              file=sys.stderr)
        return 1
    return 0


def _hash_secret(args: argparse.Namespace) -> int:
    """Print the hash of a secret (read from stdin, or a new random one printed first) for auth.clients/users."""
    from flytelite.auth.secrets import hash_secret, new_secret

    if args.generate:
        secret = new_secret()
        print(f"secret (give it to the client; it is not stored): {secret}", file=sys.stderr)
    else:
        secret = sys.stdin.readline().rstrip("\n") if not sys.stdin.isatty() else __import__("getpass").getpass()
        if not secret:
            print("an empty secret cannot be hashed", file=sys.stderr)
            return 2
    print(hash_secret(secret))
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


def _open_state(args: argparse.Namespace):
    """The Context of the state under --home (or --config's database), opened beside a running server."""
    from flytelite.context import Context
    from flytelite.storage import BlobStore
    from flytelite.store.db import Database

    config = Config.load(args.config, home=args.home)
    if not config.database_url and not (config.home / "flytelite.db").exists():
        raise SystemExit(f"no flytelite state in {config.home}; pass the --home the server runs with")
    return Context(config=config, db=Database(config.db_url), blobs=BlobStore(config.blob_root, config.s3))


def _db_upgrade(args: argparse.Namespace) -> int:
    """Bring the database's schema to this release's (what a Deployment's init step runs)."""
    from flytelite.store.db import Database, SchemaMismatch

    config = Config.load(args.config, home=args.home)
    config.home.mkdir(parents=True, exist_ok=True)
    try:
        before, now = Database(config.db_url).migrate()
    except SchemaMismatch as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"schema at revision {now}" + ("" if before == now else f" (was {before or 'empty'})"))
    return 0


def _db_version(args: argparse.Namespace) -> int:
    from flytelite.store.db import Database, newest_revision

    config = Config.load(args.config, home=args.home)
    current = Database(config.db_url).schema_revision()
    print(f"database: {current or 'empty'}; this flytelite: {newest_revision()}")
    return 0


def _backup(args: argparse.Namespace) -> int:
    from flytelite.store.backup import BackupError, backup

    try:
        count = backup(Config.load(args.config, home=args.home), Path(args.archive))
    except BackupError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"wrote {args.archive} ({count} files)")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from flytelite.store.backup import BackupError, restore

    try:
        count = restore(Path(args.archive), Path(args.home).expanduser())
    except BackupError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"restored {count} files into {args.home}; start a server with --home {args.home}")
    return 0


def _open_catalog(args: argparse.Namespace):
    from flytelite.catalog import Catalog

    return Catalog(_open_state(args))


def _status(args: argparse.Namespace) -> int:
    """The replicas sharing this database, the executions each drives, what waits for an engine, and which
    replica leads the scheduler."""
    from flytelite.server.replicas import cluster_state

    ctx = _open_state(args)
    state = cluster_state(ctx, ctx.clock.now())
    _print_table([("REPLICA", "ROLE", "HOST", "PID", "ADDRESS", "HEARTBEAT", "QUEUE", "LEASES")] + [
        (r.id, r.role, r.host, str(r.pid), r.address or "-", f"{r.heartbeat_age:.0f}s ago", str(r.queue_depth),
         str(r.leases))
        for r in state.replicas])
    print(f"{len(state.replicas)} replica(s); {state.running} unfinished execution(s), "
          f"{state.unowned} waiting for an engine replica (no live lease)")
    print(f"scheduler leader: {state.scheduler_leader or 'none (no engine replica leads; schedules wait)'}")
    return 0


def _print_table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def _cache_list(args: argparse.Namespace) -> int:
    entries = _open_catalog(args).list(task_name=args.task, project=args.project, domain=args.domain)
    rows = [("PROJECT", "DOMAIN", "TASK", "CACHE VERSION", "TAG", "CREATED", "SOURCE EXECUTION")]
    for e in entries:
        src = e.source.node_execution_id if e.source is not None else None
        rows.append((e.key.project, e.key.domain, e.key.task_name, e.key.cache_version, e.key.tag,
                     e.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                     f"{src.execution_id.name}/{src.node_id}" if src is not None else "-"))
    _print_table(rows)
    print(f"{len(entries)} cached {'entry' if len(entries) == 1 else 'entries'}")
    return 0


def _cache_clear(args: argparse.Namespace) -> int:
    cleared = _open_catalog(args).clear(task_name=args.task, project=args.project, domain=args.domain)
    what = f" of task {args.task}" if args.task else ""
    print(f"cleared {cleared} cached {'entry' if cleared == 1 else 'entries'}{what}")
    return 0


def _gc(args: argparse.Namespace) -> int:
    """Remove finished executions older than --older-than with their data, logs and cache entries."""
    from datetime import timedelta

    from flytelite.config import parse_duration
    from flytelite.retention import collect

    try:
        older_than = timedelta(seconds=parse_duration(args.older_than))
    except ValueError as exc:
        raise SystemExit(f"flytelite gc: --older-than {exc}") from exc
    report = collect(_open_state(args), older_than)
    for name in report.executions:
        print(f"removed {name}")
    for name in report.kept_for_cache:
        print(f"kept {name}: a younger execution's cache hit uses its data")
    print(report.summary())
    return 0


def _audit(args: argparse.Namespace) -> int:
    """The audit trail, newest first: one line per call (or JSON lines with --json)."""
    from datetime import timedelta

    from flytelite.admin.audit import AuditLog
    from flytelite.config import parse_duration

    try:
        since = timedelta(seconds=parse_duration(args.since)) if args.since else None
    except ValueError as exc:
        raise SystemExit(f"flytelite audit: --since {exc}") from exc
    for e in AuditLog(_open_state(args)).events(limit=args.limit, since=since, project=args.project or ""):
        fields = {"at": e.at.isoformat(), "identity": e.identity, "client_id": e.client_id, "address": e.address,
                  "action": e.action, "project": e.project, "domain": e.domain, "resource": e.resource,
                  "outcome": e.outcome, "message": e.message}
        if args.json:
            print(json.dumps(fields))
        else:
            who = e.identity or "-"
            print("  ".join([fields["at"], who + (f" ({e.client_id})" if e.client_id else ""), e.address or "-",
                             e.action, "/".join(p for p in (e.project, e.domain) if p) or "-", e.resource or "-",
                             e.outcome] + ([e.message] if e.message else [])))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flytelite", description="A Flyte backend without Kubernetes.")
    sub = parser.add_subparsers(dest="command", required=True)

    start = sub.add_parser("start", help="start the server (gRPC + HTTP on one port)")
    start.add_argument("--port", type=int, default=None, help=f"public port (default {DEFAULT_PORT})")
    start.add_argument("--host", default=None, help="address to listen on (default localhost; 0.0.0.0 for every interface)")
    start.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
    start.add_argument("--config", type=Path, default=None, help="YAML configuration file")
    start.add_argument("--role", choices=("all", "api", "engine"), default=None,
                       help="all (default): API, console and engine; api: API and console only; engine: "
                            "engine and scheduler only (replicas on one database share the executions)")
    start.add_argument("--tls-cert", default=None, help="PEM certificate: serve gRPC and HTTP over TLS")
    start.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    start.add_argument("--log-level", default=None, help="level of every logger (default: the configuration's "
                                                         "logging.level, info)")
    start.set_defaults(func=start_server)

    config = sub.add_parser("config", help="client configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    init = config_sub.add_parser(
        "init", help="write ~/.flyte/config.yaml for flytekit and the flyte 2.x SDK unless one exists")
    init.add_argument("--port", type=int, default=DEFAULT_PORT)
    init.add_argument("--path", default="~/.flyte/config.yaml")
    init.add_argument("--force", action="store_true")
    init.set_defaults(func=_config_init)

    status = sub.add_parser("status", help="replicas on this database, their leases, waiting executions and the "
                                                "scheduler's leader")
    status.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
    status.add_argument("--config", type=Path, default=None, help="YAML configuration file (its database_url)")
    status.set_defaults(func=_status)

    gc = sub.add_parser("gc", help="remove finished executions past their age, with their data, logs and cache "
                                   "entries (beside a running server, on its --home or --config)")
    gc.add_argument("--older-than", required=True, metavar="DURATION",
                    help="age of what goes, e.g. 30d, 12h, 90m (executions that finished before it)")
    gc.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
    gc.add_argument("--config", type=Path, default=None, help="YAML configuration file")
    gc.set_defaults(func=_gc)

    audit = sub.add_parser("audit", help="the audit trail, newest first: who created, terminated, relaunched, "
                           "recovered, signalled, registered or changed what, from where, and how it ended")
    audit.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
    audit.add_argument("--config", type=Path, default=None, help="YAML configuration file (its database_url)")
    audit.add_argument("--since", default=None, metavar="DURATION", help="only this recent, e.g. 1d, 12h")
    audit.add_argument("--project", default=None, help="only calls naming this project")
    audit.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    audit.set_defaults(func=_audit)

    db = sub.add_parser("db", help="the database's schema")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    for name, func, helptext in (("upgrade", _db_upgrade, "upgrade the schema to this release's (as FlyteAdmin's "
                                                          "`migrate run`)"),
                                 ("version", _db_version, "print the database's schema revision and this release's")):
        cmd = db_sub.add_parser(name, help=helptext)
        cmd.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
        cmd.add_argument("--config", type=Path, default=None, help="YAML configuration file (its database_url)")
        cmd.set_defaults(func=func)

    backup = sub.add_parser("backup", help="write a SQLite home (database, blobs, logs, keys) to a .tar.gz, "
                                           "also while a server runs on it")
    backup.add_argument("archive", help="the .tar.gz to write")
    backup.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
    backup.add_argument("--config", type=Path, default=None, help="YAML configuration file")
    backup.set_defaults(func=_backup)
    restore = sub.add_parser("restore", help="unpack a `flytelite backup` archive into a new home")
    restore.add_argument("archive", help="the .tar.gz `flytelite backup` wrote")
    restore.add_argument("--home", required=True, help="the folder to restore into (empty or missing)")
    restore.set_defaults(func=_restore)

    auth = sub.add_parser("auth", help="authentication helpers")
    auth_sub = auth.add_subparsers(dest="auth_command", required=True)
    hashp = auth_sub.add_parser("hash-secret", help="print the hash of a client secret or password (read from "
                                                    "stdin) for auth.clients.<id>.secret_hash or auth.users")
    hashp.add_argument("--generate", action="store_true", help="make a random secret, print it to stderr and "
                                                                "its hash to stdout")
    hashp.set_defaults(func=_hash_secret)

    cache = sub.add_parser("cache", help="see and evict cached task outputs")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    for name, func, helptext in (("list", _cache_list, "list cached entries, newest first"),
                                 ("clear", _cache_clear, "evict cached entries (all, or one task's)")):
        cmd = cache_sub.add_parser(name, help=helptext)
        cmd.add_argument("--home", default=None, help="state folder (default ~/.flytelite)")
        cmd.add_argument("--config", type=Path, default=None, help="YAML configuration file")
        cmd.add_argument("--task", default=None, help="only this task name (e.g. my_module.my_task)")
        cmd.add_argument("--project", default=None, help="only this project")
        cmd.add_argument("--domain", default=None, help="only this domain")
        cmd.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

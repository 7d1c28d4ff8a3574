"""Runs one task of a workflow file with the `flyte` SDK, as a user's script does, and prints what came of it
as JSON on its last line. Run by tests/flyte2 and benchmarks/flyte2.py with the SDK's own interpreter:

    flyte2_run.py <endpoint> <file> <task> <inputs as JSON> local|remote|report|start [<flyte.init options as JSON>]

`local` runs the task in this process (the SDK's local mode), `remote` on the server and waits for it (`report`
too, and prints its report, read with Run.get_report), `start` on the server without waiting (the run's name is
printed). The options replace flyte.init's defaults here (insecure=True: a server without TLS), e.g. to sign in."""

import importlib.util
import json
import sys
from pathlib import Path


def main() -> None:
    endpoint, file, task_name, inputs, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    import flyte

    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module
    spec.loader.exec_module(module)
    task = getattr(module, task_name)
    options = {"insecure": True, **(json.loads(sys.argv[6]) if len(sys.argv) > 6 else {})}
    flyte.init(endpoint=endpoint, project="flytesnacks", domain="development", root_dir=file.parent, **options)
    kwargs = json.loads(inputs)
    if mode == "local":
        run = flyte.with_runcontext(mode="local").run(task, **kwargs)
        print(json.dumps({"outputs": _outputs(run.outputs())}))
        return
    run = flyte.run(task, **kwargs)
    if mode == "start":
        print(json.dumps({"name": run.name}))
        return
    try:
        run.wait(quiet=True)
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, not raised
        print(f"wait raised {type(exc).__name__}: {exc}", file=sys.stderr)
    details = run.details()
    phase = details.pb2.action.status.phase
    status = details.pb2.action.status
    result = {"name": run.name, "phase": phase, "attempts": status.attempts, "duration_ms": status.duration_ms}
    if details.pb2.action.HasField("error_info"):
        error = details.pb2.action.error_info
        result["error"] = {"code": error.code, "message": error.message, "kind": error.kind}
    if phase == 5:  # SUCCEEDED
        result["outputs"] = _outputs(run.outputs())
    if mode == "report":
        result["report"] = run.get_report()
    print(json.dumps(result))


def _outputs(outputs) -> list[str]:
    return [repr(value) for value in outputs] if outputs is not None else []


if __name__ == "__main__":
    main()

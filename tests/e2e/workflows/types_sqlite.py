"""flytekit's SQLite3Task end to end: a task type ("sqlite") that runs flytekit's own executor, not user code."""

import os

import pandas  # noqa: F401  (imported before flytekit looks up types: FlyteSchema.open() reads with pandas)
from flytekit import kwtypes, task, workflow
from flytekit.extras.sqlite3.task import SQLite3Config, SQLite3Task
from flytekit.types.schema import FlyteSchema

# The test writes this database beside this file before registering (its path is baked into the task).
DB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "types_items.db")
Rows = FlyteSchema[kwtypes(name=str, qty=int)]

types_sql = SQLite3Task(
    name="types_sql",
    query_template="SELECT name, qty FROM items WHERE qty >= {{ .inputs.min_qty }} ORDER BY name",
    inputs=kwtypes(min_qty=int),
    output_schema_type=Rows,
    task_config=SQLite3Config(uri=DB),
)


@task
def types_rows(rows: Rows) -> list[str]:
    df = rows.open().all()
    return [f"{name}:{qty}" for name, qty in zip(df["name"], df["qty"], strict=True)]


@workflow
def types_sql_wf(min_qty: int) -> list[str]:
    return types_rows(rows=types_sql(min_qty=min_qty))

"""flytesnacks' k8s_spark_plugin pyspark_pi example (without its ImageSpec and its spark.jars from the internet,
which this machine cannot reach), and a Spark task whose user code fails."""

import datetime
import random
from operator import add

import flytekit
from flytekit import Resources, task, workflow
from flytekitplugins.spark import Spark


@task(
    task_config=Spark(
        spark_conf={
            "spark.driver.memory": "1000M",
            "spark.executor.memory": "1000M",
            "spark.executor.cores": "1",
            "spark.executor.instances": "2",
            "spark.driver.cores": "1",
        }
    ),
    limits=Resources(mem="2000M"),
)
def hello_spark(partitions: int) -> float:
    print(f"Starting Spark with Partitions: {partitions}")
    n = 1 * partitions
    sess = flytekit.current_context().spark_session
    count = sess.sparkContext.parallelize(range(1, n + 1), partitions).map(f).reduce(add)
    pi_val = 4.0 * count / n
    return pi_val


def f(_):
    x = random.random() * 2 - 1
    y = random.random() * 2 - 1
    return 1 if x**2 + y**2 <= 1 else 0


@task(cache_version="2")
def print_every_time(value_to_print: float, date_triggered: datetime.datetime) -> int:
    print(f"My printed value: {value_to_print} @ {date_triggered}")
    return 1


@workflow
def my_spark(triggered_date: datetime.datetime = datetime.datetime(2020, 9, 11)) -> float:
    pi = hello_spark(partitions=1)
    print_every_time(value_to_print=pi, date_triggered=triggered_date)
    return pi


@task(task_config=Spark(spark_conf={"spark.executor.instances": "1", "spark.flytelite.probe": "seen"}))
def spark_conf_seen() -> str:
    sess = flytekit.current_context().spark_session
    return f"{sess.conf.get('spark.flytelite.probe')} {sess.sparkContext.master}"


@task(task_config=Spark(spark_conf={"spark.executor.instances": "1"}))
def spark_fails(n: int) -> int:
    sess = flytekit.current_context().spark_session
    if sess.sparkContext.parallelize(range(n)).count() == n:
        raise ValueError(f"counted {n}, as expected, and failed on purpose")
    return n


@workflow
def conf_wf() -> str:
    return spark_conf_seen()


@workflow
def failing_wf(n: int = 3) -> int:
    return spark_fails(n=n)

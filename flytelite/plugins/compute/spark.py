"""flytekitplugins-spark's `spark` tasks (flyteplugins' k8s/spark plugin, which the Spark operator runs as a
SparkApplication): `spark-submit` of the task's application file with the task's command as its arguments, its
`sparkConf` as --conf and its `hadoopConf` as spark.hadoop.* (as the operator passes them), and the task's
interpreter as PySpark's Python (`executorPath`). The master is local[<cores>], the cores the task's executors
ask for (spark.executor.instances x spark.executor.cores) in the driver's own JVM, unless `spark.master` in the
configuration names a cluster to submit to. The driver is the task's process: its log is the attempt's log.

A fast-registered task's command is `pyflyte-fast-execute … -- pyflyte-execute …`: the second process inherits
the driver's gateway to its JVM (PYSPARK_GATEWAY_PORT), so the task's SparkSession is the submitted one.
"""

from __future__ import annotations

import os
import shutil

from flyteidl.plugins import spark_pb2

from flytelite.plugins.compute.launcher import LOOPBACK, local_entrypoint
from flytelite.plugins.compute.plugin import EngineProcess
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.process import Attempt
from flytelite.plugins.machinery.taskspec import BadShape, custom, fits, quantity
from flytelite.plugins.machinery.template import rendered_command

PYTHON = spark_pb2.SparkApplication.PYTHON
# Set for a driver on a local master unless the task sets them: nothing but itself needs to reach it. (Its UI
# listens where SPARK_LOCAL_IP says, every interface without it.)
LOCAL_DEFAULTS = {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}


class SparkProcess(EngineProcess):
    id = "spark"
    task_types = ("spark",)
    program = "spark-submit"
    package = "flytekitplugins-spark (with pyspark)"
    role = "driver"

    def shape(self, tctx: TaskExecutionContext) -> dict:
        job = custom(tctx.task, spark_pb2.SparkJob)
        if job.applicationType != PYTHON and not job.mainClass:
            raise BadShape("a Java, Scala or R Spark application needs its mainClass")
        if not job.mainApplicationFile and not job.mainClass:
            raise BadShape("its Spark job names neither a mainApplicationFile nor a mainClass")
        conf = dict(job.sparkConf)
        try:
            executors = int(conf.get("spark.executor.instances", "1"))
            cores = int(conf.get("spark.executor.cores", "1"))
        except ValueError as e:
            raise BadShape(f"its sparkConf has a count that is not a whole number: {e}") from None
        memory = conf.get("spark.driver.memory", "")
        fits(f"{executors} Spark executors of {cores} cores", executors * cores,
             quantity(memory.replace("g", "Gi").replace("m", "Mi")) if memory else 0)
        if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
            raise BadShape("Spark needs a Java runtime on this machine, and none is on PATH nor in JAVA_HOME "
                           "(Debian: apt install openjdk-17-jre-headless)")
        return {"master": self.ctx.config.spark.master or f"local[{executors * cores}]", "conf": conf,
                "hadoop": dict(job.hadoopConf), "file": job.mainApplicationFile, "main_class": job.mainClass}

    def command(self, tctx: TaskExecutionContext, attempt: Attempt) -> tuple[list[str], dict[str, str]]:
        shape = self.shape(tctx)
        interpreter = self.ctx.config.interpreter_for(tctx.container.image)
        bin_dir = os.path.dirname(interpreter)
        local = shape["master"].startswith("local")
        # The driver's scratch files go in the attempt's temp folder, deleted with it.
        conf = {**(LOCAL_DEFAULTS if local else {}), "spark.local.dir": attempt.temp_dir, **shape["conf"],
                **{f"spark.hadoop.{k}": v for k, v in shape["hadoop"].items()},
                "spark.pyspark.python": interpreter, "spark.pyspark.driver.python": interpreter}
        argv = [os.path.join(bin_dir, "spark-submit"), "--master", shape["master"], "--name", tctx.unique_key]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        if shape["main_class"]:
            argv += ["--class", shape["main_class"]]
        argv += [local_entrypoint(shape["file"], bin_dir), *rendered_command(tctx)]
        env = self.environment(tctx, attempt, bin_dir)
        env.update({"PYSPARK_PYTHON": interpreter, "PYSPARK_DRIVER_PYTHON": interpreter})
        if local:
            env.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        os.makedirs(conf["spark.local.dir"], exist_ok=True)
        return argv, env

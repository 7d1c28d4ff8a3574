#!/bin/bash
# The entrypoint of the test cluster's Spark image (localhost/flytelite-spark:v1): what the pods of Spark's own
# Kubernetes scheduler ask of their image, as Spark's published images answer it.
#   driver ARGS...   spark-submit in client mode on this pod's address (SPARK_DRIVER_BIND_ADDRESS), then ARGS
#   executor         an executor of the driver at SPARK_DRIVER_URL, shaped by the SPARK_EXECUTOR_* variables the
#                    driver sets on its executor pods, with its Java options from SPARK_JAVA_OPT_0, _1, ...
#   anything else    run as a command
# Spark and Java come from the host through the pod's hostPath mounts: SPARK_HOME defaults to the pyspark
# package of the `python3` on PATH, Java to JAVA_HOME's (else `java` on PATH).
set -euo pipefail

spark_home() {
    [ -n "${SPARK_HOME:-}" ] && { echo "$SPARK_HOME"; return; }
    python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'
}

case "${1:-}" in
driver)
    shift
    exec "$(spark_home)/bin/spark-submit" --deploy-mode client \
        --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" --conf "spark.driver.host=$SPARK_DRIVER_BIND_ADDRESS" \
        "$@"
    ;;
executor)
    shift
    home=$(spark_home)
    java_options=()
    for i in $(env | sed -n 's/^SPARK_JAVA_OPT_\([0-9][0-9]*\)=.*/\1/p' | sort -n); do
        name="SPARK_JAVA_OPT_$i"
        java_options+=("${!name}")
    done
    exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" "${java_options[@]}" \
        -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" -cp "$home/conf:$home/jars/*${SPARK_CLASSPATH:+:$SPARK_CLASSPATH}" \
        org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
        --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
        --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
        --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}"
    ;;
*)
    exec "$@"
    ;;
esac

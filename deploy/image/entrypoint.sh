#!/bin/bash
# The image's entry point (deploy/Containerfile), run by tini:
#
#   IMAGE COMMAND [FLAGS...]     `reassign-monitor COMMAND FLAGS...` (run, progress, execute, verify, ...)
#   IMAGE driver SUBMIT-ARGS...  what Spark on Kubernetes (and so the Spark operator) runs in the driver pod:
#                                spark-submit in client mode, here of /opt/reassign-monitor/job_main.py
#   IMAGE executor               what it runs in an executor pod: Spark's Kubernetes executor backend,
#                                configured by the SPARK_* variables Spark gives that pod
#
# `driver` and `executor` follow the contract of Apache Spark's own images (their entrypoint.sh), so the
# image works wherever those do; every other word is the CLI's.
set -euo pipefail

case "${1:-}" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:?set by Spark on Kubernetes}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    # Spark passes the executor's JVM options as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... and mounts its
    # configuration at SPARK_CONF_DIR.
    java_options=()
    for name in "${!SPARK_JAVA_OPT_@}"; do java_options+=("${!name}"); done
    classpath="${SPARK_CONF_DIR:-$SPARK_HOME/conf}:$SPARK_HOME/jars/*"
    classpath+="${SPARK_EXTRA_CLASSPATH:+:$SPARK_EXTRA_CLASSPATH}:$PWD"
    exec java "${java_options[@]}" -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" -cp "$classpath" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    exec reassign-monitor "$@"
    ;;
esac

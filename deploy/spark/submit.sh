#!/usr/bin/env bash
# Submit the streaming job (`reassign-monitor run`) to a Spark cluster with spark-submit.
#
#   deploy/spark/submit.sh --master MASTER [reassign-monitor run flags...]
#
#   deploy/spark/submit.sh --master spark://spark-master:7077 --bootstrap-server kafka1:9092 \
#       --checkpoint-location hdfs:///user/kafka/reassign-monitor --command-config /etc/kafka/client.properties
#
# --master (required): spark://HOST:PORT (standalone), k8s://https://HOST:PORT, yarn, or local[N] to try
# it on this host. Every other argument goes unchanged to `reassign-monitor run` (see
# `reassign-monitor run --help`); the checkpoint location must be durable storage every node reaches.
#
# Deploy mode is client: the driver runs on this host and serves /metrics on --metrics-port (default
# 9469) here, where deploy/prometheus/prometheus.yml scrapes it. On Kubernetes prefer the Spark
# operator (deploy/k8s/sparkapplication.yaml), which runs the driver in the cluster.
#
# Environment:
#   PYSPARK_PYTHON        interpreter with this project installed (`pip install` of the wheel or of the checkout),
#                         at the same path on every node: the poll runs on executors. Default: this checkout's
#                         .venv/bin/python, else python3. spark-submit runs that installation's
#                         streaming/job_main.py. Checked here before submitting.
#   SPARK_SUBMIT          spark-submit to use. Default: $SPARK_HOME/bin/spark-submit, else the one pip's
#                         pyspark installed next to PYSPARK_PYTHON, else spark-submit on PATH.
#   SPARK_SUBMIT_OPTIONS  extra spark-submit options, split on spaces, e.g.
#                         "--executor-memory 1g --conf spark.kubernetes.container.image=IMAGE".
#
# Exit status: 2 on bad usage (as the CLI), otherwise spark-submit's.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

die() { echo "submit.sh: error: $*" >&2; exit 2; }

master=""
run_args=()
while (($#)); do
  case "$1" in
    --master) (($# >= 2)) || die "--master needs a URL"; master=$2; shift 2 ;;
    --master=*) master=${1#--master=}; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) run_args+=("$1"); shift ;;
  esac
done

case "$master" in
  spark://?*|k8s://?*|yarn|local|local\[*\]) ;;
  "") die "--master spark://HOST:PORT | k8s://https://HOST:PORT | yarn is required (--help for usage)" ;;
  *) die "--master $master: expected spark://HOST:PORT, k8s://https://HOST:PORT, yarn or local[N]" ;;
esac

python=${PYSPARK_PYTHON:-}
if [[ -z $python ]]; then
  if [[ -x $repo/.venv/bin/python ]]; then python=$repo/.venv/bin/python; else python=$(command -v python3 || true); fi
fi
# The entry point of the package that interpreter has installed (a wheel, or this checkout's editable install):
# driver and executors then run the same code. From / so that the checkout cannot stand in for an installed package.
job_main=$(cd / && "$python" -c 'import streaming.job_main as m; print(m.__file__)' 2>/dev/null) \
  || die "PYSPARK_PYTHON=${python:-?} cannot import the project: pip install $repo into it, or point PYSPARK_PYTHON elsewhere"
export PYSPARK_PYTHON=$python PYSPARK_DRIVER_PYTHON=$python

if [[ -n ${SPARK_SUBMIT:-} ]]; then submit=$SPARK_SUBMIT
elif [[ -n ${SPARK_HOME:-} ]]; then submit=$SPARK_HOME/bin/spark-submit
elif [[ -x $(dirname "$python")/spark-submit ]]; then submit=$(dirname "$python")/spark-submit
else submit=spark-submit
fi

read -r -a options <<< "${SPARK_SUBMIT_OPTIONS:-}"

# Options after ours win, so SPARK_SUBMIT_OPTIONS can override the deploy mode or the name.
exec "$submit" --master "$master" --deploy-mode client --name kafka-reassign-monitor \
  --conf "spark.pyspark.python=$python" --conf "spark.pyspark.driver.python=$python" \
  "${options[@]}" "$job_main" run "${run_args[@]}"

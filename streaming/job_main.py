"""Entry point for `spark-submit streaming/job_main.py run --bootstrap-server ... [flags]` on a Spark
cluster: the same CLI, with the master left to spark-submit."""

import sys

from streaming.cli import main

if __name__ == "__main__":
    argv = sys.argv[1:] or ["run"]
    if argv[0] == "run" and "--master" not in argv:
        argv += ["--master", ""]
    sys.exit(main(argv))

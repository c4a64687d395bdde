"""The JVM's own output goes to the lake's log file, not the terminal (issue 15: "Spark, JVM and
kernel chatter goes to a log file in the lake"); see burstlake/spark.py."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pyspark

from burstlake.spark import jvm_output_to, log_file

INCUBATOR = "WARNING: Using incubator modules: jdk.incubator.vector"


def _launcher_module_options() -> bytes:
    """The JVM options Spark's launcher adds (``JavaModuleOptions`` in spark-launcher)."""
    [jar] = (Path(pyspark.__file__).parent / "jars").glob("spark-launcher_*.jar")
    with zipfile.ZipFile(jar) as archive:
        return archive.read("org/apache/spark/launcher/JavaModuleOptions.class")


def test_the_incubator_warning_goes_to_the_lake_log(tmp_path, capfd):
    """Spark's launcher starts the JVM with the vector incubator module, so the JVM prints its
    warning; started inside ``jvm_output_to`` (as a session's JVM is), that lands in the log."""
    assert b"--add-modules=jdk.incubator.vector" in _launcher_module_options()
    log = log_file(tmp_path / "lake")
    java = shutil.which("java")
    command = [java, "-XX:+IgnoreUnrecognizedVMOptions", "--add-modules=jdk.incubator.vector"]
    with jvm_output_to(log):
        subprocess.run([*command, "-version"], check=True)
    subprocess.run([*command, "-version"], check=True)  # outside: the terminal, as before
    assert INCUBATOR in log.read_text()
    assert capfd.readouterr().err.count(INCUBATOR) == 1

"""Faster JVM starts for the JVM test session (`nox -s spark`).

It starts dozens of JVMs: the test process's own, and one per child process a
test runs (a kill, a second machine, a session sparkload starts). Each spends most of its
first seconds loading Spark's classes and compiling them. Two settings of the JDK cut that
by about 40 % on a two-core machine (12.8 s → 7.5 s for a start and a first Delta write):

- a class-data archive (AppCDS) of the classes a JVM Spark loads for a Delta load, dumped
  once by ``python tests/jvm_class_archive.py ARCHIVE`` and mapped by every later JVM;
- the JIT's first tier only (``TieredStopAtLevel=1``) for the JVMs of child processes: they
  run a few statements and end, and the optimizing tier's compile work costs them more than
  it saves.

Both reach every JVM through ``JDK_JAVA_OPTIONS`` (``jdk_options``), which the ``java``
launcher reads. A JVM that runs a whole session's statements (the test process's own, the
Spark Connect server) is started with the optimizing tier
(``optimizing_jit``): with the first tier only, the in-process tests took half as long
again. These are test settings, not sparkload's. A JVM whose class path differs from the
archive's (spark-submit's launcher) starts as before: the archive is only a hint.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# CDS reports archives it cannot map (the launcher JVM's own class path differs) on
# stdout, which some tests read; the archive is optional, so those lines are dropped.
QUIET = "-Xlog:cds=off,cds+dynamic=off"
FIRST_TIER_ONLY = "-XX:TieredStopAtLevel=1"

# What the dumping JVM does: start as sparkload starts it, then create, append to, merge
# into and read a Delta table, so the archive holds the classes those statements load.
_WARM_UP = """
import sys
from sparkload.engine.jvm import jvm_session

folder = sys.argv[1]
spark = jvm_session("local[2]", {})
table = folder + "/t"
spark.range(100).selectExpr("id", "cast(id as string) as name").write.format("delta").save(table)
spark.range(50, 150).selectExpr("id", "'x' as name").createOrReplaceTempView("changes")
spark.sql(f"MERGE INTO delta.`{table}` AS t USING changes AS s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
spark.read.json(spark.sparkContext.parallelize(['{"a": 1, "b": [1]}'])).collect()
assert spark.read.format("delta").load(table).count() == 150
spark.stop()
"""


def jdk_options(archive: Path) -> str:
    """``JDK_JAVA_OPTIONS`` for the test JVMs: the archive where it was dumped, the first
    JIT tier always."""
    options = [FIRST_TIER_ONLY, QUIET]
    if archive.is_file():
        options.insert(0, f"-XX:SharedArchiveFile={archive.resolve()}")
    return " ".join(options)


@contextlib.contextmanager
def optimizing_jit() -> Iterator[None]:
    """JVMs started inside run with the JIT's optimizing tier (the archive stays)."""
    options = os.environ.get("JDK_JAVA_OPTIONS")
    if options is None or FIRST_TIER_ONLY not in options.split():
        yield
        return
    os.environ["JDK_JAVA_OPTIONS"] = " ".join(o for o in options.split() if o != FIRST_TIER_ONLY)
    try:
        yield
    finally:
        os.environ["JDK_JAVA_OPTIONS"] = options


def dump(archive: Path) -> None:
    """Dump the archive of a JVM that ran a Delta load (about a minute, 190 MB). A failed dump
    leaves no archive, and the tests run without one."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        options = f"-XX:ArchiveClassesAtExit={archive} {FIRST_TIER_ONLY} {QUIET}"
        done = subprocess.run(
            [sys.executable, "-c", _WARM_UP, folder],
            env={**os.environ, "JDK_JAVA_OPTIONS": options},
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        archive.unlink(missing_ok=True)
        print(f"no class archive, the JVM tests start without one:\n{done.stderr[-2000:]}")


if __name__ == "__main__":
    # Dumps the archive, then prints the options for the JVMs that follow (the last line).
    where = Path(sys.argv[1])
    dump(where)
    print(jdk_options(where))

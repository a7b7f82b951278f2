"""``import sparkload`` loads none of the engine: a script pays for Spark, pyarrow, pandas and
requests when it runs a pipeline (or reads an HTTP source), not when it declares one. Each
check runs in a fresh process, as a user's script starts; timings are in
docs/performance.md ("Start-up"), not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import sparkload as sl

# The checkout whose package the tests import, so the child process imports the same one.
_CHECKOUT = Path(sl.__file__).resolve().parent.parent
# The libraries a pipeline run needs and a declaration does not: the engine's client and
# server, the Delta and object-store readers, the dataframe libraries, the HTTP client.
HEAVY = ("pyspark", "pysail", "pyarrow", "pandas", "numpy", "deltalake", "obstore", "requests")


def _loaded_after(script: str) -> list[str]:
    """The HEAVY libraries in ``sys.modules`` after ``script`` ran in a new interpreter."""
    probe = textwrap.dedent(script) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))
    """)
    env = dict(os.environ, PYTHONPATH=str(_CHECKOUT))
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=_CHECKOUT, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_import_sparkload_loads_no_engine_nor_heavy_library() -> None:
    assert _loaded_after("import sparkload") == []


def test_declaring_resources_a_source_and_a_destination_loads_no_engine(tmp_path: Path) -> None:
    """What a script does before ``pipeline.run``: decorators, an incremental cursor, the
    configuration, the errors, a destination."""
    script = f"""
        import sparkload as sl
        from sparkload.sources import incremental, TDataItems, DltResource

        @sl.resource(primary_key="id", write_disposition="merge")
        def items(updated=sl.incremental("updated", initial_value=0)):
            yield {{"id": 1, "updated": 1}}

        @sl.source
        def shop():
            return items

        destination = sl.destinations.delta({str(tmp_path)!r})
        assert list(items()) == [{{"id": 1, "updated": 1}}]
        assert issubclass(sl.PipelineStepFailed, sl.SparkloadError)
        sl.config.get("runtime.log_level")
    """
    assert _loaded_after(script) == []


def test_public_names_that_need_the_engine_still_resolve() -> None:
    """The names loaded on first use are the objects they always were: ``sl.pipeline`` the
    function (also once a module of the ``sparkload.pipeline`` subpackage was imported first),
    ``HTTPRequestError`` a ``requests.HTTPError`` from ``sparkload`` and its exceptions."""
    script = """
        import sparkload.pipeline.trace  # the subpackage first, as a user's import may do
        import sparkload as sl
        from sparkload import HTTPRequestError, LoadInfo, Pipeline, Plan, attach, pipeline
        import sparkload.exceptions
        import requests

        assert callable(sl.pipeline) and sl.pipeline is pipeline
        assert pipeline.__module__ == "sparkload.pipeline.factory"
        assert isinstance(sl.Pipeline, type) and sl.Pipeline is Pipeline
        assert sparkload.exceptions.HTTPRequestError is HTTPRequestError is sl.HTTPRequestError
        assert issubclass(HTTPRequestError, (requests.HTTPError, sl.SparkloadError))
        assert {"pipeline", "Pipeline", "HTTPRequestError"} <= set(dir(sl))
        assert set(sl.__all__) <= set(dir(sl))
        namespace = {}
        exec("from sparkload import *", namespace)
        assert namespace["pipeline"] is pipeline
    """
    assert set(_loaded_after(script)) >= {"pyspark", "requests"}

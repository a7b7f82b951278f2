"""pyarrow tables as items: their columns and types are loaded as they are."""

import dlt
import pyarrow as pa
from diff_harness import make_pipeline


@dlt.resource(name="t", primary_key="id", write_disposition="merge")
def t(ids, label):
    yield pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "label": pa.array([label] * len(ids)),
            "score": pa.array([1.5] * len(ids)),
        }
    )


pipeline = make_pipeline("arrow")
pipeline.run(t([1, 2, 3], "first"))
pipeline.run(t([3, 4], "second"))

"""schema_contract data_type covers a column hint that changes the type of a column the table
has (its data_type, precision, scale, timezone or nullable), not only variant columns:
freeze refuses the load, discard_row drops the rows holding a value there, discard_value
loads them without it."""

import dlt
from diff_harness import make_pipeline, record

pipeline = make_pipeline("contract_data_type_hint_change")
for mode in ("freeze", "discard_row", "discard_value"):
    for label, first, change in [
        ("text", None, {"data_type": "text"}),
        (
            "scale",
            {"data_type": "decimal", "precision": 12, "scale": 4},
            {"data_type": "decimal", "precision": 12, "scale": 2},
        ),
        ("nullable", None, {"nullable": False}),
    ]:
        name = f"{label}_{mode}"
        columns = {"amount": first} if first else None
        pipeline.run(dlt.resource([{"id": 1, "amount": 5}], name=name, columns=columns))
        data = [{"id": 2, "amount": 6}, {"id": 3, "note": "no amount"}]
        contract = {"data_type": mode}
        hinted = dlt.resource(data, name=name, columns={"amount": change}, schema_contract=contract)
        try:
            pipeline.run(hinted)
            record(name, "loaded")
        except Exception:
            record(name, "refused")
            pipeline.drop_pending_packages()

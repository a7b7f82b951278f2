"""The staged-value tags: how values JSON cannot type travel from extract to normalize.

JSON has no date, time, decimal or binary type, and no NaN or infinity, so extract writes
such values as strings that start with a two-character tag (NUL + a letter); normalize
reads the tag in Spark and gives the column its real type. Untagged strings stay text, and
a real string starting with NUL is escaped with ``TAG_STRING`` so it cannot be misread.
"""

from __future__ import annotations

TAG = "\x00"
TAG_TIMESTAMP = TAG + "Z"
TAG_DATE = TAG + "D"
TAG_TIME = TAG + "T"
TAG_DECIMAL = TAG + "N"
TAG_BINARY = TAG + "B"
TAG_STRING = TAG + "S"  # a real string that happens to start with NUL
# Integers beyond ±2**53: JSON readers parse them as doubles when a column also has
# floats, so they travel as tagged text and become bigint again in Spark.
TAG_BIGINT = TAG + "I"
# NaN, +inf and -inf, which orjson would write as null: a value lost without a word. They
# travel as "NaN", "Infinity" or "-Infinity", the spellings Spark casts back to a double.
TAG_DOUBLE = TAG + "F"
# A dict or list kept whole as JSON text in a column hinted ``json`` (normalize writes it
# when values of one load need rewriting; see normalize/conflicts.py).
TAG_JSON = TAG + "J"

TAGS = {
    TAG_TIMESTAMP: "timestamp",
    TAG_DATE: "date",
    TAG_TIME: "time",
    TAG_DECIMAL: "decimal",
    TAG_BINARY: "binary",
    TAG_BIGINT: "bigint",
    TAG_DOUBLE: "double",
    TAG_JSON: "json",
}

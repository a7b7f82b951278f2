"""Pydantic models as ``columns=``: the columns a model declares, the schema contract it
implies and the validation of every item against it, as dlt does.

pydantic is optional: nothing here imports it until a model is given. A model is recognised
only when pydantic was already imported (``sys.modules``), since a class of it cannot exist
otherwise, so resources without a model never pay for the import.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeGuard

from sparkload.exceptions import DataValidationError, ResourceError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

# dlt's Python type → data type (dlt.common.data_types.type_helpers.PY_TYPE_TO_SC_TYPE);
# the order matters: bool before int, datetime before date.
_PY_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "bool"),
    (Decimal, "decimal"),
    (datetime.datetime, "timestamp"),
    (datetime.date, "date"),
    (datetime.time, "time"),
    (str, "text"),
    (float, "double"),
    (int, "bigint"),
    (bytes, "binary"),
    (dict, "json"),
    (list, "json"),
)
# What the model's ``extra`` makes of the columns entity (dlt's extra_to_column_mode) and back.
_EXTRA_TO_COLUMN_MODE = {"forbid": "freeze", "allow": "evolve", "ignore": "discard_value"}
_COLUMN_MODE_TO_EXTRA = {
    "evolve": "allow",
    "discard_value": "ignore",
    "freeze": "forbid",
    "discard_row": "forbid",
}
# Items a model cannot validate and dlt passes on as they are: frames of rows.
_FRAME_MODULES = ("pyarrow", "pandas", "polars")


def is_model(columns: object) -> TypeGuard[type[BaseModel]]:
    """Whether ``columns`` is a Pydantic model class."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(columns, type) and issubclass(columns, pydantic.BaseModel)


# -- columns ------------------------------------------------------------------------------------
def model_columns(model: type[BaseModel]) -> dict[str, dict[str, object]]:
    """The column hints a model declares, as dlt's ``pydantic_to_table_schema_columns``: a
    field's (alias's) data type and ``nullable`` (its type is Optional). A nested model, a
    dict or a list is a ``json`` column; a field typed ``Any`` is left to the data. With
    ``dlt_config = {"skip_nested_types": True}`` nested models are flattened into
    ``<field>__<sub field>`` columns and dicts and lists are left out."""
    config = getattr(model, "dlt_config", None) or {}
    skip_nested = bool(config.get("skip_nested_types", config.get("skip_complex_types", False)))
    out: dict[str, dict[str, object]] = {}
    for field_name, field in model.model_fields.items():
        name = field.alias or field_name
        annotation = getattr(field.annotation, "inner_type", None) or field.annotation  # pydantic.Json
        inner, nullable = _inner_type(annotation)
        if inner is Any:
            continue  # inferred from the data, as in dlt
        if is_model(inner):
            if not skip_nested:
                out[name] = {"data_type": "json", "nullable": nullable}
                continue
            for sub_name, hints in model_columns(inner).items():
                out[f"{name}__{sub_name}"] = {**hints, "nullable": hints["nullable"] or nullable}
            continue
        data_type = _data_type(inner, model, field_name)
        if data_type == "json" and skip_nested:
            continue
        out[name] = {"data_type": data_type, "nullable": nullable}
    return out


def _inner_type(annotation: object) -> tuple[object, bool]:
    """The type a field holds, and whether it is Optional: ``Annotated`` and ``NewType``
    unwrapped, a union's first non-None member taken (as dlt does), a ``Literal`` as the
    type of its first value, a generic as its origin (``list[int]`` → ``list``)."""
    nullable = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin is typing.Union or origin is types.UnionType:
            members = typing.get_args(annotation)
            others = [member for member in members if member is not type(None)]
            nullable = nullable or len(others) < len(members)
            annotation = others[0] if others else Any
        elif origin is typing.Literal:
            annotation = type(typing.get_args(annotation)[0])
        elif hasattr(annotation, "__supertype__"):  # typing.NewType
            annotation = annotation.__supertype__
        elif annotation is typing.Optional:
            return Any, True
        elif origin is not None:
            return origin, nullable
        else:
            return annotation, nullable


def _data_type(python_type: object, model: type[BaseModel], field_name: str) -> str:
    """The data type of a field's Python type, as dlt's ``py_type_to_sc_type``; a type none
    fits is refused naming the field (dlt would write its ``str()`` as text)."""
    if isinstance(python_type, type):
        for known, data_type in _PY_TYPES:
            if issubclass(python_type, known):
                return data_type
        if issubclass(python_type, enum.Enum):
            return "bigint" if issubclass(python_type, int) else "text"
        if dataclasses.is_dataclass(python_type) or issubclass(python_type, (Mapping, Sequence)):
            return "json"
    raise ResourceError(
        f"columns={model.__name__}: the field '{field_name}' has the type {python_type!r}, which maps "
        "to no column type (text, bigint, double, bool, decimal, date, timestamp, time, binary, json: "
        "str, int, float, bool, Decimal, date, datetime, time, bytes, dict, list or a nested model); "
        "type it as one of these, or as Any to let the data decide"
    )


# -- schema contract -------------------------------------------------------------------------
def model_contract(model: type[BaseModel], given: str | Mapping[str, str] | None) -> dict[str, str]:
    """The modes a model's items are validated under, as dlt's ``create_item_validator``
    expands them: those ``given`` names, else tables ``evolve``, columns from the model's
    ``extra`` (``forbid`` → freeze, ``allow`` → evolve, ``ignore``, pydantic's default, →
    discard_value) and data_type ``freeze``."""
    extra = model.model_config.get("extra") or "ignore"
    modes = {"tables": "evolve", "columns": _EXTRA_TO_COLUMN_MODE[extra], "data_type": "freeze"}
    if isinstance(given, str):
        modes = dict.fromkeys(modes, given)
    elif given:
        modes.update(given)
    if modes["data_type"] == "discard_value":
        raise ResourceError(
            f"columns={model.__name__}: schema_contract data_type='discard_value' cannot be applied to a "
            "Pydantic model (a field that does not validate cannot be left out of the item); use "
            "'freeze', 'discard_row' or 'evolve'"
        )
    return modes


# -- validation --------------------------------------------------------------------------------
class ModelValidator:
    """A pipe step validating each item against a model, as dlt's ``PydanticValidator``: the
    item goes on as the model dumps it (by alias, defaults filled, values converted to the
    fields' types). An item that fails goes by the contract: a column the model lacks (with
    ``extra="forbid"``) by the columns mode, a field that does not validate by the data_type
    mode: ``freeze`` raises DataValidationError, ``discard_row`` drops the item."""

    def __init__(self, resource: str, model: type[BaseModel], column_mode: str, data_mode: str) -> None:
        self.resource = resource
        self.model = model
        self.column_mode = column_mode
        self.data_mode = data_mode
        self._checked = _contract_model(model, column_mode, data_mode)

    def same_as(self, other: ModelValidator) -> bool:
        return (self.resource, self.model, self.column_mode, self.data_mode) == (
            other.resource,
            other.model,
            other.column_mode,
            other.data_mode,
        )

    def __call__(self, item: object) -> object:
        if item is None or type(item).__module__.split(".")[0] in _FRAME_MODULES:
            return item  # arrow tables and data frames pass as they are, as in dlt
        from pydantic import ValidationError

        try:
            validated = self._checked.model_validate(item)
        except ValidationError as error:
            self._failed(item, error)  # raises, or drops the item under discard_row
            return None
        return validated.model_dump(by_alias=True)

    def _failed(self, item: object, error: ValidationError) -> None:
        """None (the item is dropped) under ``discard_row``; else DataValidationError."""
        for problem in error.errors():
            if problem["type"] == "model_type":
                raise ResourceError(
                    f"resource '{self.resource}': columns={self.model.__name__} validates dicts; "
                    f"it got {item!r}"
                ) from error
            entity, mode = (
                ("columns", self.column_mode)
                if problem["type"] == "extra_forbidden"
                else ("data_type", self.data_mode)
            )
            if mode == "discard_row":
                return None
            raise DataValidationError(
                table=self.resource,
                column=".".join(str(part) for part in problem["loc"]),
                schema_entity=entity,
                value=item,
                detail=f"the item does not validate against {self.model.__name__}: {problem['msg']}",
            ) from error
        return None


def _contract_model(model: type[BaseModel], column_mode: str, data_mode: str) -> type[BaseModel]:
    """``model`` as the modes validate with it (dlt's ``apply_schema_contract_to_model``):
    data_type ``evolve`` checks no field's type, and the columns mode sets ``extra``."""
    from pydantic import ConfigDict, create_model

    extra = _COLUMN_MODE_TO_EXTRA[column_mode]
    if data_mode == "evolve":
        fields: dict[str, Any] = {name: (Any, None) for name in model.model_fields}
        config = ConfigDict(extra=extra)  # type: ignore[typeddict-item]
        return create_model(f"{model.__name__}Any", __config__=config, **fields)
    if extra == (model.model_config.get("extra") or "ignore"):
        return model
    # A subclass keeps the model's validators; nested models keep their own extra (dlt
    # rebuilds them too, which makes a nested model's unknown keys follow the columns mode).
    checked = type(f"{model.__name__}Extra{extra.title()}", (model,), {"__module__": model.__module__})
    checked.model_config = {**model.model_config, "extra": extra}  # type: ignore[attr-defined]
    checked.model_rebuild(force=True)  # type: ignore[attr-defined]
    return checked

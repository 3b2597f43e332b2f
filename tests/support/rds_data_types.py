"""How Data API values map to PostgreSQL and back, and its errors, for rds_data_shim.py.

Parameters: a stringValue is bound as varchar (or as its typeHint's type), longValue as int8,
doubleValue as float8, booleanValue as bool, blobValue as bytea, isNull as a NULL of
unspecified type; arrayValue is refused. Results: int2/int4/int8/oid -> longValue, float4/float8
-> doubleValue, bool -> booleanValue, bytea -> blobValue, numeric -> stringValue (or long/double
with decimalReturnType DOUBLE_OR_LONG), arrays of those -> arrayValue, NULL -> isNull, anything
else -> stringValue of its PostgreSQL text form.
"""

import base64
import math

# PostgreSQL type oids.
BOOL, BYTEA, INT8, INT2, INT4, OID, FLOAT4, FLOAT8, VARCHAR = 16, 17, 20, 21, 23, 26, 700, 701, 1043
NUMERIC, DATE, TIME, TIMESTAMP, UUID, JSON = 1700, 1082, 1083, 1114, 2950, 114
LONGS = {INT2, INT4, INT8, OID}
DOUBLES = {FLOAT4, FLOAT8}
# Arrays the Data API returns as arrayValue: oid -> (member, element kind). pg8000 parses them.
ARRAYS = {
    1000: ("booleanValues", BOOL),
    1005: ("longValues", INT2),
    1007: ("longValues", INT4),
    1016: ("longValues", INT8),
    1021: ("doubleValues", FLOAT4),
    1022: ("doubleValues", FLOAT8),
    1231: ("stringValues", NUMERIC),
    1009: ("stringValues", VARCHAR),
    1014: ("stringValues", VARCHAR),
    1015: ("stringValues", VARCHAR),
}
TYPE_HINTS = {"DATE": DATE, "TIME": TIME, "TIMESTAMP": TIMESTAMP, "DECIMAL": NUMERIC, "UUID": UUID, "JSON": JSON}
# java.sql.Types codes in columnMetadata.type, as the real API (JDBC underneath) reports them.
JDBC_TYPES = {BOOL: -7, BYTEA: -2, INT2: 5, INT4: 4, INT8: -5, OID: -5, FLOAT4: 7, FLOAT8: 8, NUMERIC: 2,
              VARCHAR: 12, 25: 12, 1042: 1, DATE: 91, TIME: 92, TIMESTAMP: 93, 1184: 93}
JDBC_OTHER, JDBC_ARRAY = 1111, 2003


class ApiError(Exception):
    """An error answer of the Data API: its type (x-amzn-ErrorType), HTTP status and message."""

    def __init__(self, kind, status, message):
        super().__init__(message)
        self.kind, self.status, self.message = kind, status, message


def bad_request(message):
    return ApiError("BadRequestException", 400, message)


def database_error(error):
    """PostgreSQL's error fields, formatted the way the real API reports them."""
    fields = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
    if not fields:
        return ApiError("DatabaseErrorException", 400, f"ERROR: {error}")
    message = f"ERROR: {fields.get('M', '')}"
    for key, label in (("D", "Detail"), ("H", "Hint"), ("P", "Position")):
        if fields.get(key):
            message += f"\n  {label}: {fields[key]}"
    return ApiError("DatabaseErrorException", 400, f"{message}; SQLState: {fields.get('C', '')}")


def bind(parameters):
    """Data API parameters -> ({name: text value or None}, {name: type oid})."""
    values, oids = {}, {}
    for parameter in parameters or []:
        name = parameter.get("name")
        if not name:
            raise bad_request("Parameter name is required")
        value = parameter.get("value") or {}
        hint = parameter.get("typeHint")
        if len(value) != 1:
            raise bad_request(f"Parameter {name}: value must set exactly one member, got {sorted(value)}")
        ((member, v),) = value.items()
        if member == "stringValue":
            if hint is not None and hint not in TYPE_HINTS:
                raise bad_request(f"Parameter {name}: unknown typeHint {hint}")
            values[name], oids[name] = v, TYPE_HINTS.get(hint, VARCHAR)
        elif member == "longValue":
            values[name], oids[name] = str(int(v)), INT8
        elif member == "doubleValue":
            values[name], oids[name] = repr(float(v)), FLOAT8
        elif member == "booleanValue":
            values[name], oids[name] = "true" if v else "false", BOOL
        elif member == "blobValue":
            values[name], oids[name] = "\\x" + base64.b64decode(v).hex(), BYTEA
        elif member == "isNull":
            values[name], oids[name] = None, 0
        elif member == "arrayValue":
            raise bad_request("Array parameters are not supported.")
        else:
            raise bad_request(f"Parameter {name}: unknown value member {member}")
    return values, oids


def field(oid, text, options):
    """One column value (PostgreSQL text form, or a list for mapped arrays) -> a Data API Field."""
    if text is None:
        return {"isNull": True}
    if oid in ARRAYS:
        return {"arrayValue": array_value(text, ARRAYS[oid])}
    if oid == BOOL:
        return {"booleanValue": text == "t"}
    if oid in LONGS:
        if options.get("longReturnType") == "STRING":
            return {"stringValue": text}
        return {"longValue": int(text)}
    if oid in DOUBLES:
        number = float(text)
        return {"doubleValue": number} if math.isfinite(number) else {"stringValue": text}
    if oid == NUMERIC and options.get("decimalReturnType") == "DOUBLE_OR_LONG":
        if "." not in text and text.lstrip("-").isdigit():
            return {"longValue": int(text)}
        return {"doubleValue": float(text)} if math.isfinite(float(text)) else {"stringValue": text}
    if oid == BYTEA:
        return {"blobValue": base64.b64encode(bytes.fromhex(text[2:])).decode("ascii")}
    return {"stringValue": text}


def array_value(items, kind):
    member, element = kind
    if any(isinstance(i, list) for i in items):
        return {"arrayValues": [array_value(i, kind) for i in items]}
    if element == NUMERIC:
        items = [None if i is None else str(i) for i in items]
    return {member: items}


def plain(f):
    """A Field's value as formattedRecords (formatRecordsAs JSON) shows it."""
    if "isNull" in f:
        return None
    ((_, value),) = f.items()
    return value


def column_metadata(connection, columns, names):
    missing = [c["type_oid"] for c in columns if c["type_oid"] not in names]
    if missing:
        for oid, name in connection.run("SELECT oid::int8, typname::text FROM pg_type WHERE oid = ANY(CAST(:o AS oid[]))",
                                        o="{" + ",".join(str(o) for o in set(missing)) + "}"):
            names[int(oid)] = name
    result = []
    for c in columns:
        oid = c["type_oid"]
        type_name = names.get(oid, "unknown")
        result.append({
            "name": c["name"],
            "label": c["name"],
            "type": JDBC_ARRAY if type_name.startswith("_") else JDBC_TYPES.get(oid, JDBC_OTHER),
            "typeName": type_name,
            "schemaName": "",
            "tableName": "",
            "isAutoIncrement": False,
            "isSigned": oid in LONGS or oid in DOUBLES or oid == NUMERIC,
            "isCurrency": oid == 790,
            "isCaseSensitive": oid in (VARCHAR, 25, 1042),
            "nullable": 2,
            "precision": 0,
            "scale": 0,
            "arrayBaseColumnType": 0,
        })
    return result

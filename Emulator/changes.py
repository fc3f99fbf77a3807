"""Resources that change data, for the emulator: uniform requests that write (platform-api.md §4).

`FRUITS_EDIT` inserts and deletes rows of FRUITS' `output_table` and answers with the
refreshed table, as a platform resource backed by a write procedure does:

    POST /api/v1/rpc/FRUITS_EDIT/  {"insert": [[6, "kiwi", 0.9, 1]], "delete": [[2]]}
    → [{"name": "output_table", "data": [[1, "apple", 0.52, 1], [3, "plum", 1.25, 1], ..., [6, "kiwi", 0.9, 1]]}]

`insert` is a table parameter in FRUITS' column order; `delete` a table parameter of ids
(`[[2]]`, or plainly `[2]`). Deletes run first; deleting an absent id changes nothing;
inserting an id that exists answers 400 and changes nothing. The change happens once per
`X-Transaction-ID`: a repeated call with the same id gets the stored answer (emulator.py).
A later table_stream of FRUITS sees the changed rows.
"""


class BadParameters(ValueError):
    pass


EDITS = {"FRUITS_EDIT": "FRUITS"}


def install(platform):
    """Adds the editing resources whose target exists."""
    for name, target_name in EDITS.items():
        target = platform.resources.get(target_name)
        if target is None:
            continue
        table = target["outputs"][0]
        columns = table["columns"]
        platform.resources[name] = {
            "name": name,
            "lifetime": None,
            "input": {"scalar": [], "tabular": [
                {"id": 1, "name": "insert", "columns": columns},
                {"id": 2, "name": "delete", "columns": [columns[0]]},
            ]},
            # The same table object: the answer is the target's refreshed rows.
            "outputs": [table],
            "changes": target_name,
        }


def apply(platform, resource, params):
    """Applies `params` to the target's rows under the platform's lock."""
    table = resource["outputs"][0]
    width = len(table["columns"])
    unknown = set(params) - {"insert", "delete"}
    if unknown:
        raise BadParameters(f"unknown parameters: {', '.join(sorted(unknown))}; {resource['name']} takes insert and delete")
    inserts = params.get("insert", [])
    deletes = params.get("delete", [])
    if not isinstance(inserts, list) or not all(isinstance(r, list) and len(r) == width for r in inserts):
        raise BadParameters(f"insert must be a list of rows of {width} values")
    if not isinstance(deletes, list):
        raise BadParameters("delete must be a list of ids")
    ids = [d[0] if isinstance(d, list) and len(d) == 1 else d for d in deletes]
    with platform.lock:
        kept = [r for r in table["rows"] if r[0] not in ids]
        present = {r[0] for r in kept}
        for row in inserts:
            if row[0] in present:
                raise BadParameters(f"a row with id {row[0]} already exists")
            present.add(row[0])
        table["rows"][:] = kept + [list(r) for r in inserts]

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

`FRUITS_WRITE` only appends: `{"insert": [[30, "fig", 1.1, 1]]}` adds the rows as they are,
an id that exists included, as a write into a table without a key does, and answers the
refreshed table. Each call that runs changes FRUITS, so a call sent twice without an
`X-Transaction-ID` shows as a row held twice (tests of writes that must happen once).
"""


class BadParameters(ValueError):
    pass


# Resource name -> (the resource whose rows it changes, whether it only appends).
EDITS = {"FRUITS_EDIT": ("FRUITS", False), "FRUITS_WRITE": ("FRUITS", True)}


def install(platform):
    """Adds the editing resources whose target exists."""
    for name, (target_name, appends) in EDITS.items():
        target = platform.resources.get(target_name)
        if target is None:
            continue
        table = target["outputs"][0]
        columns = table["columns"]
        inputs = [{"id": 1, "name": "insert", "columns": columns}]
        if not appends:
            inputs.append({"id": 2, "name": "delete", "columns": [columns[0]]})
        platform.resources[name] = {
            "name": name,
            "lifetime": None,
            "input": {"scalar": [], "tabular": inputs},
            # The same table object: the answer is the target's refreshed rows.
            "outputs": [table],
            "changes": target_name,
            "appends": appends,
        }


def apply(platform, resource, params):
    """Applies `params` to the target's rows under the platform's lock."""
    table = resource["outputs"][0]
    width = len(table["columns"])
    accepted = {"insert"} if resource["appends"] else {"insert", "delete"}
    unknown = set(params) - accepted
    if unknown:
        raise BadParameters(f"unknown parameters: {', '.join(sorted(unknown))}; {resource['name']} takes {' and '.join(sorted(accepted))}")
    inserts = params.get("insert", [])
    deletes = params.get("delete", [])
    if not isinstance(inserts, list) or not all(isinstance(r, list) and len(r) == width for r in inserts):
        raise BadParameters(f"insert must be a list of rows of {width} values")
    if not isinstance(deletes, list):
        raise BadParameters("delete must be a list of ids")
    ids = [d[0] if isinstance(d, list) and len(d) == 1 else d for d in deletes]
    with platform.lock:
        if resource["appends"]:
            table["rows"].extend(list(r) for r in inserts)
            return
        kept = [r for r in table["rows"] if r[0] not in ids]
        present = {r[0] for r in kept}
        for row in inserts:
            if row[0] in present:
                raise BadParameters(f"a row with id {row[0]} already exists")
            present.add(row[0])
        table["rows"][:] = kept + [list(r) for r in inserts]

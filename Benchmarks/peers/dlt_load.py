"""dlt loading the same answer into SQLite as its documentation recommends: a resource that
fetches with dlt's requests helper and yields pages of rows, the sqlalchemy destination
with an SQLite URL, `replace` as the write disposition, column types declared.

    python dlt_load.py URL TOKEN RESOURCE DATABASE PIPELINES_DIR
"""

import os
import sys

import dlt
from dlt.sources.helpers import requests

url, token, resource, path, pipelines_dir = sys.argv[1:6]

COLUMNS = {"id": "bigint", "code": "text", "name": "text", "amount": "double",
           "quantity": "bigint", "active": "bigint", "created": "text", "note": "text"}
PAGE = 10_000


@dlt.resource(name="output_table", write_disposition="replace",
              columns={name: {"data_type": kind, "nullable": True} for name, kind in COLUMNS.items()})
def rows():
    answer = requests.post(f"{url}api/v1/rpc/{resource}/", headers={"Authorization": f"Bearer {token}"}, json={}).json()
    names = list(COLUMNS)
    for table in answer:
        data = table["data"]
        for start in range(0, len(data), PAGE):
            yield [dict(zip(names, row)) for row in data[start:start + PAGE]]


pipeline = dlt.pipeline(
    pipeline_name="bench", pipelines_dir=pipelines_dir, dataset_name="main",
    destination=dlt.destinations.sqlalchemy(f"sqlite:///{os.path.abspath(path)}"))
pipeline.run(rows())

"""What a user writes by hand: fetch the answer, json.load it, executemany into SQLite.

    python3 handwritten.py URL TOKEN RESOURCE DATABASE
"""

import json
import sqlite3
import sys
import urllib.request

url, token, resource, path = sys.argv[1:5]
request = urllib.request.Request(
    f"{url}api/v1/rpc/{resource}/", data=b"{}", method="POST",
    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
with urllib.request.urlopen(request) as response:
    answer = json.load(response)

db = sqlite3.connect(path)
db.execute("CREATE TABLE IF NOT EXISTS output_table "
           "(id INTEGER, code TEXT, name TEXT, amount REAL, quantity INTEGER, active INTEGER, created TEXT, note TEXT)")
with db:
    db.execute("DELETE FROM output_table")
    for table in answer:
        db.executemany("INSERT INTO output_table VALUES (?,?,?,?,?,?,?,?)", table["data"])
db.close()

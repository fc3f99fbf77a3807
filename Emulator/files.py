"""The platform's file server for the emulator (platform-api.md §5).

Each file connection (the SDK's mount name) is a folder under the served root: the seed
under Emulator/files/ holds `nfs4` (as in the platform's HHFWFiles example) and
`local_storage` (the platform's own store), each with nested folders. Unless --files names
a folder to serve in place, the seed is copied to a fresh temporary folder at start, so
put and delete never change the repository.

    GET    /api/v1/directory/<connection>/?directory=<path>   {"directories": [...], "files": [...]}
    GET    /api/v1/file/<connection>/meta/?file=<path>        {"stat": {"st_size": ..., "st_mode": ..., ...}}
    GET    /api/v1/file/<connection>/?file=<path>             the bytes; X-Range/If-Match and Range/If-Range resume
    PUT    /api/v1/file/<connection>/?file=<path>             raw body; 204
    DELETE /api/v1/file/<connection>/?file=<path>             204; 404 when missing

Paths are relative to the connection's folder; a path that leads out of it (`..`, an
absolute path, a symbolic link) is refused with 400 and never touched.

Test helper (no token):
    POST /admin/files/inject  {"connection": "nfs4", "directory": ".", "files": [...], "directories": [...]}
        adds names to that folder's listings (to play a server that names files badly)
    DELETE /admin/files/inject   removes every injected name
"""

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.join(HERE, "files")
PREFIX = "dray-emulator-files-"


class PathRefused(Exception):
    pass


class FileServer:
    def __init__(self, root=None):
        if root is None:
            root = self.fresh_copy()
        self.root = os.path.realpath(root)
        self.lock = threading.Lock()
        self.injected = {}

    @staticmethod
    def fresh_copy():
        """Copies the seed to a new temporary folder, first removing copies whose emulator
        is gone (a killed emulator cannot clean up after itself)."""
        base = os.environ.get("TMPDIR", "/tmp")
        for name in os.listdir(base):
            if name.startswith(PREFIX):
                pid = name[len(PREFIX):].split("-")[0]
                if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                    shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        target = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base)
        shutil.copytree(SEED, target, dirs_exist_ok=True)
        return target

    # Paths

    def connection_root(self, connection):
        if not connection or "/" in connection or connection in (".", ".."):
            return None
        path = os.path.join(self.root, connection)
        return path if os.path.isdir(path) else None

    @staticmethod
    def resolve(base, relative):
        """The real path of `relative` inside `base`, or PathRefused when it leads out."""
        if relative is None or relative == "":
            raise PathRefused("missing path")
        if relative.startswith("/") or "\x00" in relative:
            raise PathRefused(f"'{relative}' is not a relative path")
        full = os.path.realpath(os.path.join(base, relative))
        if full != base and not full.startswith(base + os.sep):
            raise PathRefused(f"'{relative}' leads outside the connection")
        return full

    # Requests

    def handle(self, handler, method, rest, query, body, file_body):
        """Serves `directory/...` and `file/...` calls; `file_body` makes a streamed body."""
        parts = rest.split("/")
        if parts[0] == "directory" and len(parts) == 3 and parts[2] == "" and method == "GET":
            return self.listing(handler, parts[1], first(query, "directory"))
        if parts[0] == "file" and len(parts) == 4 and parts[2] == "meta" and parts[3] == "" and method == "GET":
            return self.meta(handler, parts[1], first(query, "file"))
        if parts[0] == "file" and len(parts) == 3 and parts[2] == "":
            name = first(query, "file")
            if method == "GET":
                return self.get(handler, parts[1], name, file_body)
            if method == "PUT":
                return self.put(handler, parts[1], name, body)
            if method == "DELETE":
                return self.delete(handler, parts[1], name)
        return handler.error(404, "Not Found")

    def locate(self, handler, connection, relative, what):
        """(connection root, real path), or None after answering with an error."""
        base = self.connection_root(connection)
        if base is None:
            handler.error(404, "Not Found", [f"no file connection '{connection}'"])
            return None
        if relative is None:
            handler.error(400, "Bad Request", [f"missing query parameter '{what}'"])
            return None
        try:
            return base, self.resolve(os.path.realpath(base), relative)
        except PathRefused as e:
            handler.error(400, "Bad Request", [str(e)])
            return None

    def listing(self, handler, connection, directory):
        found = self.locate(handler, connection, directory, "directory")
        if found is None:
            return
        base, path = found
        if not os.path.isdir(path):
            return handler.error(404, "Not Found", [f"no folder '{directory}' on {connection}"])
        directories, files = [], []
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            if entry.name.startswith(".dray-upload-"):
                continue
            (directories if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
        with self.lock:
            extra = self.injected.get((connection, os.path.normpath(directory)), {})
        handler.send_json(200, {"directories": directories + extra.get("directories", []),
                                "files": files + extra.get("files", [])})

    def meta(self, handler, connection, name):
        found = self.locate(handler, connection, name, "file")
        if found is None:
            return
        _, path = found
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return handler.error(404, "Not Found", [f"no file '{name}' on {connection}"])
        stat = {key: getattr(st, key) for key in dir(st) if key.startswith("st_") and isinstance(getattr(st, key), (int, float))}
        handler.send_json(200, {"stat": dict(sorted(stat.items()))})

    def get(self, handler, connection, name, file_body):
        found = self.locate(handler, connection, name, "file")
        if found is None:
            return
        _, path = found
        if not os.path.isfile(path):
            return handler.error(404, "Not Found", [f"no file '{name}' on {connection}"])
        st = os.stat(path)
        etag = '"%s"' % hashlib.sha256(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:32]
        headers = {
            "ETag": etag,
            "Last-Modified": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(st.st_mtime)),
            "Content-Disposition": 'inline; filename="%s"' % os.path.basename(path).replace('"', ""),
        }
        handler.send_answer(file_body(path), headers)

    def put(self, handler, connection, name, body):
        found = self.locate(handler, connection, name, "file")
        if found is None:
            return
        base, path = found
        if os.path.isdir(path):
            return handler.error(400, "Bad Request", [f"'{name}' is a folder on {connection}"])
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".dray-upload-", dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(temporary, path)
        handler.send(204)

    def delete(self, handler, connection, name):
        found = self.locate(handler, connection, name, "file")
        if found is None:
            return
        _, path = found
        if os.path.isdir(path):
            return handler.error(400, "Bad Request", [f"'{name}' is a folder on {connection}"])
        try:
            os.remove(path)
        except FileNotFoundError:
            return handler.error(404, "Not Found", [f"no file '{name}' on {connection}"])
        handler.send(204)

    # Admin (tests only)

    def admin(self, handler, method, path, body):
        if path == "/admin/files/inject" and method == "POST":
            try:
                spec = json.loads(body)
                key = (spec["connection"], os.path.normpath(spec.get("directory", ".")))
            except (ValueError, KeyError, TypeError) as e:
                return handler.error(400, "Bad Request", [f"bad injection: {e}"])
            with self.lock:
                entry = self.injected.setdefault(key, {"files": [], "directories": []})
                entry["files"] += list(spec.get("files", []))
                entry["directories"] += list(spec.get("directories", []))
            return handler.send(204)
        if path == "/admin/files/inject" and method == "DELETE":
            with self.lock:
                self.injected.clear()
            return handler.send(204)
        if path == "/admin/files/root" and method == "GET":
            return handler.send_json(200, {"root": self.root})
        return handler.error(404, "Not Found")


def first(query, name):
    values = query.get(name)
    return values[0] if values else None

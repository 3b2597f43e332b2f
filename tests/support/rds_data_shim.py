"""An RDS Data API endpoint that runs its statements on a real PostgreSQL, for the tests.

moto does not execute SQL, so this speaks the Data API's restJson1 wire protocol (service
`rds-data`, API version 2018-08-01, the shapes of botocore's rds-data service-2.json) and runs
every statement on the database of `--database-url` through pg8000. The `aws-sdk-rdsdata`
client, its typed `Field`s and its error types are then exercised for real.

    rds_data_shim.py --database-url postgres://USER:PASS@127.0.0.1:PORT/DB \
        --resource-arn arn:aws:rds:us-east-1:123456789012:cluster:bounded-rag \
        --secret-arn arn:aws:secretsmanager:us-east-1:123456789012:secret:bounded-rag-db-AbCdEf \
        --port 0

prints `listening on PORT` as its first line and serves until SIGTERM or Ctrl-C. Clients point
the SDK at it (AWS_ENDPOINT_URL, any region, any credentials: requests must be SigV4-signed
for service rds-data, the signature itself is not checked). Run with .local/venv-pg/bin/python
(scripts/pg.sh install puts pg8000 there).

Operations (POST, JSON bodies as the real API):
  /Execute              ExecuteStatement: sql, parameters [{name, value: Field, typeHint?}],
                        database?, transactionId?, includeResultMetadata?, formatRecordsAs?,
                        resultSetOptions? -> records (rows only), numberOfRecordsUpdated,
                        columnMetadata?, formattedRecords?
  /BatchExecute         BatchExecuteStatement: sql once per parameterSets entry, all in one
                        transaction (or in transactionId's) -> updateResults
  /BeginTransaction     -> transactionId (a connection of its own, held open; rolled back after
                        --transaction-timeout seconds unused, 180 like the real API)
  /CommitTransaction    -> transactionStatus "Transaction Committed"
  /RollbackTransaction  -> transactionStatus "Rollback Complete"

Like the real API: without transactionId a statement commits on its own; one statement per
call (the extended protocol refuses several); parameters are `:name` placeholders, never text
spliced into the SQL. How values are bound and returned is in rds_data_types.py: a stringValue
is bound as varchar (a uuid or jsonb column needs a CAST or typeHint); numeric comes back as
stringValue, and every type without a Field of its own (text, jsonb, uuid, timestamps,
pgvector's vector) as stringValue of its PostgreSQL text form. (The real API documents a list
of PostgreSQL types it supports and may refuse others with UnsupportedResultException; whether
it returns a `vector` column was not confirmed: select `embedding::text` rather than rely on
this shim's leniency.)

Errors are the real API's, in its JSON shape (HTTP status, `x-amzn-ErrorType` header, body
{"message": ...}): an SQL error is DatabaseErrorException (400) with PostgreSQL's message and
"; SQLState: XXXXX" at the end; an unknown or expired transaction TransactionNotFoundException
(404); a secretArn other than --secret-arn SecretsErrorException (400); a resourceArn other than
--resource-arn BadRequestException (400); an unsigned request MissingAuthenticationTokenException
(403); a database that cannot be reached DatabaseUnavailableException (504).

Test controls (not part of the Data API):
  GET  /_shim/calls     {"Execute": n, "BatchExecute": n, ...}: every request received per
                        operation, injected failures included, so tests can assert call counts
  GET  /_shim/requests  the last 1,000 requests as [{"op": ..., "body": {...}}], so tests can
                        check what the client sent (SQL text and parameters apart)
  POST /_shim/fail?op=Execute&status=503&times=1[&error=ServiceUnavailableError][&after=N][&sql=TEXT]
                        the next `times` requests of `op` (after the next N pass; with `sql`,
                        counting only requests whose SQL holds TEXT) fail with that status and
                        error type
                        (default by status: 503 ServiceUnavailableError, 504
                        DatabaseUnavailableException, 500 InternalServerErrorException, 400
                        DatabaseResumingException, the paused-Aurora answer)
  POST /_shim/reset     zeroes the counts, forgets the requests and pending failures
"""

import argparse
import json
import secrets
import signal
import sys
import threading
import time
import urllib.parse
import uuid
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pg8000.native
from pg8000.converters import PG_TYPES
from pg8000.exceptions import DatabaseError, InterfaceError
from rds_data_types import ARRAYS, ApiError, bad_request, bind, column_metadata, database_error, field, plain

OPERATIONS = {
    "/Execute": "Execute",
    "/BatchExecute": "BatchExecute",
    "/BeginTransaction": "BeginTransaction",
    "/CommitTransaction": "CommitTransaction",
    "/RollbackTransaction": "RollbackTransaction",
}
DEFAULT_FAILURE = {
    503: "ServiceUnavailableError",
    504: "DatabaseUnavailableException",
    500: "InternalServerErrorException",
    400: "DatabaseResumingException",
}
FAILURE_MESSAGES = {
    "DatabaseResumingException": "Communications link failure: the database is resuming after being auto-paused.",
}
KEPT_REQUESTS = 1000



class ShimConnection(pg8000.native.Connection):
    """pg8000's connection, keeping each result's command tag (INSERT, SELECT...) and reading
    every column as its PostgreSQL text form except the arrays mapped to arrayValue."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        arrays = {oid: PG_TYPES[oid] for oid in ARRAYS}
        self.pg_types.clear()
        self.pg_types.default_factory = lambda: _text
        self.pg_types.update(arrays)

    def handle_COMMAND_COMPLETE(self, data, context):
        context.command = data[:-1].split(b" ")[0].decode("ascii", "replace")
        super().handle_COMMAND_COMPLETE(data, context)

    def in_transaction(self):
        return self._transaction_status != b"I"


def _text(value):
    return value


class Database:
    """Connections to the PostgreSQL of --database-url: a pool of idle autocommit connections
    per database name, and the connections held by open transactions."""

    def __init__(self, url, transaction_timeout):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("postgres", "postgresql"):
            raise SystemExit(f"--database-url must be postgres://USER:PASS@HOST:PORT/DB, got {url}")
        self.user = urllib.parse.unquote(parts.username or "postgres")
        self.password = urllib.parse.unquote(parts.password or "")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 5432
        self.default_database = urllib.parse.unquote(parts.path.lstrip("/")) or self.user
        self.transaction_timeout = transaction_timeout
        self.lock = threading.Lock()
        self.idle = {}
        self.transactions = {}

    def connect(self, database):
        try:
            return ShimConnection(
                user=self.user,
                password=self.password,
                host=self.host,
                port=self.port,
                database=database or self.default_database,
                application_name="rds_data_shim",
                timeout=60,
            )
        except DatabaseError as e:
            fields = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
            if fields.get("C") == "3D000":
                raise bad_request(f"Database {database} does not exist") from e
            raise database_error(e) from e
        except (InterfaceError, OSError) as e:
            raise ApiError("DatabaseUnavailableException", 504, f"the database cannot be reached: {e}") from e

    def borrow(self, database):
        database = database or self.default_database
        with self.lock:
            pool = self.idle.setdefault(database, [])
            if pool:
                return database, pool.pop()
        return database, self.connect(database)

    def give_back(self, database, connection, healthy):
        # A connection left inside a transaction (a client sent BEGIN itself) is not reused.
        if healthy and not connection.in_transaction():
            with self.lock:
                self.idle.setdefault(database, []).append(connection)
        else:
            _close(connection)

    def begin(self, database):
        connection = self.connect(database)
        try:
            connection.run("BEGIN")
        except DatabaseError as e:
            _close(connection)
            raise database_error(e) from e
        transaction_id = secrets.token_urlsafe(48)
        with self.lock:
            self.transactions[transaction_id] = Transaction(connection)
        return transaction_id

    def transaction(self, transaction_id):
        with self.lock:
            transaction = self.transactions.get(transaction_id)
        if transaction is None:
            raise ApiError("TransactionNotFoundException", 404, f"Transaction {transaction_id} is not found")
        return transaction

    def end(self, transaction_id):
        with self.lock:
            self.transactions.pop(transaction_id, None)

    def expire(self):
        """Rolls back the transactions unused for transaction_timeout seconds."""
        now = time.monotonic()
        with self.lock:
            stale = [(k, t) for k, t in self.transactions.items() if now - t.last_used > self.transaction_timeout]
        for transaction_id, transaction in stale:
            if transaction.lock.acquire(blocking=False):
                try:
                    if now - transaction.last_used > self.transaction_timeout:
                        self.end(transaction_id)
                        _close(transaction.connection)
                finally:
                    transaction.lock.release()


class Transaction:
    def __init__(self, connection):
        self.connection = connection
        self.lock = threading.Lock()
        self.last_used = time.monotonic()


def _close(connection):
    try:
        connection.close()
    except Exception:  # already broken; nothing left to release
        pass


def run_statement(connection, sql, parameters):
    """Runs one statement with bound parameters; returns pg8000's result context."""
    values, oids = bind(parameters)
    try:
        statement, make_vals = pg8000.native.to_statement(sql)
        args = make_vals(values)
        types = [oid or 0 for oid in make_vals(oids)]
    except InterfaceError as e:
        raise bad_request(str(e)) from e
    except Exception as e:  # pg8000's placeholder scanner trips on some malformed SQL
        raise bad_request(f"cannot parse the SQL statement: {e}") from e
    try:
        return connection.execute_unnamed(statement, args, oids=types)
    except DatabaseError as e:
        raise database_error(e) from e
    except InterfaceError as e:
        # "in failed transaction block" and other protocol-level refusals.
        raise ApiError("DatabaseErrorException", 400, f"ERROR: {e}") from e


class Shim:
    """The operations, the call counts and the injected failures."""

    def __init__(self, database, resource_arn, secret_arn):
        self.db = database
        self.resource_arn = resource_arn
        self.secret_arn = secret_arn
        self.lock = threading.Lock()
        self.calls = Counter()
        self.requests = deque(maxlen=KEPT_REQUESTS)
        self.failures = {}
        self.type_names = {}

    def record(self, op, body):
        with self.lock:
            self.calls[op] += 1
            self.requests.append({"op": op, "body": body})
            failure = self.failures.get(op)
            if failure and failure["sql"] not in (body.get("sql") or ""):
                failure = None
            if failure and failure["after"] > 0:
                failure["after"] -= 1
            elif failure and failure["times"] > 0:
                failure["times"] -= 1
                return ApiError(failure["error"], failure["status"],
                                FAILURE_MESSAGES.get(failure["error"], "injected by rds_data_shim"))
        return None

    def check_arns(self, body):
        if not body.get("resourceArn"):
            raise bad_request("resourceArn is required")
        if not body.get("secretArn"):
            raise bad_request("secretArn is required")
        if body["resourceArn"] != self.resource_arn:
            raise bad_request(f"Invalid cluster arn: {body['resourceArn']}")
        if body["secretArn"] != self.secret_arn:
            raise ApiError("SecretsErrorException", 400, "The secret provided wasn't found.")

    def dispatch(self, op, body):
        self.check_arns(body)
        handlers = {
            "Execute": self.execute,
            "BatchExecute": self.batch_execute,
            "BeginTransaction": self.begin_transaction,
            "CommitTransaction": self.commit_transaction,
            "RollbackTransaction": self.rollback_transaction,
        }
        return handlers[op](body)

    def _with_connection(self, body, work):
        """Runs work(connection) in the body's transaction, or on a pooled connection."""
        if body.get("transactionId"):
            transaction = self.db.transaction(body["transactionId"])
            with transaction.lock:
                transaction.last_used = time.monotonic()
                try:
                    return work(transaction.connection)
                finally:
                    transaction.last_used = time.monotonic()
        database, connection = self.db.borrow(body.get("database"))
        healthy = False
        try:
            result = work(connection)
            healthy = True
            return result
        except ApiError as e:
            healthy = e.kind == "DatabaseErrorException" or e.kind == "BadRequestException"
            raise
        finally:
            self.db.give_back(database, connection, healthy)

    def execute(self, body):
        sql = body.get("sql")
        if not sql:
            raise bad_request("sql is required")
        options = body.get("resultSetOptions") or {}

        def work(connection):
            context = run_statement(connection, sql, body.get("parameters"))
            command = getattr(context, "command", "")
            updated = context.row_count if command in ("INSERT", "UPDATE", "DELETE", "MERGE") else 0
            answer = {"numberOfRecordsUpdated": max(updated, 0), "generatedFields": []}
            if context.rows is None:
                return answer
            columns = context.columns or []
            records = [[field(c["type_oid"], v, options) for c, v in zip(columns, row)] for row in context.rows]
            if body.get("formatRecordsAs") == "JSON":
                answer["formattedRecords"] = json.dumps(
                    [{c["name"]: plain(f) for c, f in zip(columns, record)} for record in records])
                return answer
            answer["records"] = records
            if body.get("includeResultMetadata"):
                answer["columnMetadata"] = column_metadata(connection, columns, self.type_names)
            return answer

        return self._with_connection(body, work)

    def batch_execute(self, body):
        sql = body.get("sql")
        if not sql:
            raise bad_request("sql is required")
        sets = body.get("parameterSets") or []

        def work(connection):
            own = not body.get("transactionId")
            if own:
                connection.run("BEGIN")
            try:
                for parameters in sets:
                    run_statement(connection, sql, parameters)
            except BaseException:
                if own:
                    connection.run("ROLLBACK")
                raise
            if own:
                connection.run("COMMIT")
            return {"updateResults": [{"generatedFields": []} for _ in sets]}

        return self._with_connection(body, work)

    def begin_transaction(self, body):
        return {"transactionId": self.db.begin(body.get("database"))}

    def _finish(self, body, statement, status):
        transaction_id = body.get("transactionId")
        if not transaction_id:
            raise bad_request("transactionId is required")
        transaction = self.db.transaction(transaction_id)
        with transaction.lock:
            self.db.end(transaction_id)
            try:
                context = transaction.connection.execute_simple(statement)
            except DatabaseError as e:
                raise database_error(e) from e
            except InterfaceError as e:
                # COMMIT of a transaction an error aborted: PostgreSQL rolled it back.
                raise ApiError("DatabaseErrorException", 400,
                               f"ERROR: the transaction was aborted by an earlier error and has been rolled back ({e})") from e
            finally:
                _close(transaction.connection)
        if statement == "COMMIT" and getattr(context, "command", "") == "ROLLBACK":
            raise ApiError("DatabaseErrorException", 400, "ERROR: the transaction was rolled back")
        return {"transactionStatus": status}

    def commit_transaction(self, body):
        return self._finish(body, "COMMIT", "Transaction Committed")

    def rollback_transaction(self, body):
        return self._finish(body, "ROLLBACK", "Rollback Complete")

    def control(self, path, query):
        with self.lock:
            if path == "/_shim/calls":
                return dict(self.calls)
            if path == "/_shim/requests":
                return list(self.requests)
            if path == "/_shim/reset":
                self.calls.clear()
                self.requests.clear()
                self.failures.clear()
                return {}
            if path == "/_shim/fail":
                op = query.get("op", ["Execute"])[0]
                status = int(query.get("status", ["503"])[0])
                error = query.get("error", [DEFAULT_FAILURE.get(status, "InternalServerErrorException")])[0]
                times = int(query.get("times", ["1"])[0])
                after = int(query.get("after", ["0"])[0])
                sql = query.get("sql", [""])[0]
                self.failures[op] = {"status": status, "error": error, "times": times, "after": after,
                                     "sql": sql}
                return self.failures[op]
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK pools connections
    shim = None
    verbose = False

    def log_message(self, fmt, *args):
        if self.verbose:
            super().log_message(fmt, *args)

    def _send(self, status, payload, kind=None):
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        if kind:
            self.send_header("x-amzn-ErrorType", kind)
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw.strip() else {}

    def _control(self):
        url = urllib.parse.urlsplit(self.path)
        answer = self.shim.control(url.path, urllib.parse.parse_qs(url.query))
        if answer is None:
            self._send(404, {"message": f"no such path {url.path}"})
        else:
            self._send(200, answer)

    def do_GET(self):
        if self.path.startswith("/_shim/"):
            self._control()
        else:
            self._send(404, {"message": f"no such path {self.path}"}, "UnknownOperationException")

    def do_POST(self):
        if self.path.startswith("/_shim/"):
            self._body()
            self._control()
            return
        op = OPERATIONS.get(urllib.parse.urlsplit(self.path).path)
        try:
            body = self._body()
        except ValueError:
            self._send(400, {"message": "the request body is not JSON"}, "SerializationException")
            return
        if op is None:
            self._send(404, {"message": f"no operation at {self.path}"}, "UnknownOperationException")
            return
        try:
            injected = self.shim.record(op, body)
            if injected:
                raise injected
            authorization = self.headers.get("Authorization", "")
            if not authorization.startswith("AWS4-HMAC-SHA256") or "/rds-data/aws4_request" not in authorization:
                raise ApiError("MissingAuthenticationTokenException", 403,
                               "Missing Authentication Token (a SigV4 signature for service rds-data)")
            self._send(200, self.shim.dispatch(op, body))
        except ApiError as e:
            self._send(e.status, {"message": e.message}, e.kind)
        except Exception as e:  # a bug here, reported as the API would report its own
            self._send(500, {"message": f"rds_data_shim: {type(e).__name__}: {e}"}, "InternalServerErrorException")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="postgres://USER:PASS@HOST:PORT/DB")
    parser.add_argument("--resource-arn", default="arn:aws:rds:us-east-1:123456789012:cluster:bounded-rag")
    parser.add_argument("--secret-arn",
                        default="arn:aws:secretsmanager:us-east-1:123456789012:secret:bounded-rag-db-AbCdEf")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = a free port (printed)")
    parser.add_argument("--transaction-timeout", type=float, default=180.0,
                        help="seconds a transaction may stay unused before it is rolled back")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    args = parser.parse_args()

    database = Database(args.database_url, args.transaction_timeout)
    # Fail now, not at the first request, when the database is not there.
    _, connection = database.borrow(None)
    database.give_back(database.default_database, connection, True)

    Handler.shim = Shim(database, args.resource_arn, args.secret_arn)
    Handler.verbose = args.verbose
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True

    def reap():
        while True:
            time.sleep(min(5.0, max(args.transaction_timeout / 4, 0.05)))
            database.expire()

    threading.Thread(target=reap, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()

"""Self-test of rds_data_shim.py through boto3's real `rds-data` client.

    .local/venv/bin/python tests/support/rds_data_shim_selftest.py

Starts PostgreSQL (`scripts/pg.sh start` in a temporary folder, or the server of
BOUNDED_RAG_PG_URL when set), starts the shim on it with .local/venv-pg/bin/python, then checks
every value type both ways, metadata and JSON records, batches, a committed, a rolled-back and an
expired transaction, SQL errors, wrong ARNs, an unsigned request, the call counts and an
injected 503 retried by the client. Prints one line per check and `N passed, N failed`; exits
non-zero on any failure. Needs boto3 (.local/venv has it through moto: scripts/setup-test-tools.sh)
and `scripts/pg.sh install`.
"""

import base64
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

import boto3
from botocore import UNSIGNED
from botocore.config import Config

ROOT = pathlib.Path(__file__).resolve().parents[2]
PG_PYTHON = ROOT / ".local" / "venv-pg" / "bin" / "python"
SHIM = ROOT / "tests" / "support" / "rds_data_shim.py"
CLUSTER = "arn:aws:rds:us-east-1:123456789012:cluster:selftest"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:selftest-db-AbCdEf"
TRANSACTION_TIMEOUT = 1.0


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def run(self, name, check):
        try:
            check()
        except Exception:
            self.failed += 1
            print(f"FAIL  {name}")
            traceback.print_exc(file=sys.stdout)
        else:
            self.passed += 1
            print(f"ok    {name}")


def error_code(call):
    try:
        call()
    except Exception as e:  # botocore.exceptions.ClientError and its modeled subclasses
        response = getattr(e, "response", None)
        if response is None:
            raise
        return response["Error"]["Code"], response["Error"].get("Message", "")
    raise AssertionError("the call succeeded")


def main():
    tmp = tempfile.mkdtemp(prefix="rds-data-shim-")
    pg_dir = os.path.join(tmp, "pg")
    url = os.environ.get("BOUNDED_RAG_PG_URL")
    started_pg = not url
    if started_pg:
        url = subprocess.run([str(ROOT / "scripts" / "pg.sh"), "start", pg_dir], check=True,
                             stdout=subprocess.PIPE, text=True).stdout.strip()
    shim = subprocess.Popen(
        [str(PG_PYTHON), str(SHIM), "--database-url", url, "--resource-arn", CLUSTER, "--secret-arn", SECRET,
         "--port", "0", "--transaction-timeout", str(TRANSACTION_TIMEOUT)],
        stdout=subprocess.PIPE, text=True)
    try:
        line = shim.stdout.readline()
        assert line.startswith("listening on "), f"shim said {line!r}"
        endpoint = f"http://127.0.0.1:{int(line.split()[-1])}"
        return run_checks(endpoint)
    finally:
        shim.terminate()
        shim.wait(timeout=10)
        if started_pg:
            subprocess.run([str(ROOT / "scripts" / "pg.sh"), "stop", pg_dir], check=False)
            subprocess.run(["rm", "-rf", tmp], check=False)


def run_checks(endpoint):
    def client(**config):
        return boto3.client("rds-data", endpoint_url=endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing",
                            config=Config(**config))

    rds = client(retries={"mode": "standard", "total_max_attempts": 1})
    arns = {"resourceArn": CLUSTER, "secretArn": SECRET, "database": "bounded_rag"}

    def execute(sql, parameters=(), **extra):
        return rds.execute_statement(sql=sql, parameters=list(parameters), **arns, **extra)

    def control(path, method="GET"):
        request = urllib.request.Request(endpoint + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read())

    def s(name, value, hint=None):
        p = {"name": name, "value": {"stringValue": value}}
        if hint:
            p["typeHint"] = hint
        return p

    checks = Checks()
    execute("DROP TABLE IF EXISTS selftest")
    execute("CREATE TABLE selftest (id int8 PRIMARY KEY, name text, score float8, ok bool, note text,"
            " blob bytea, price numeric(10,2), meta jsonb, uid uuid, at timestamp, day date,"
            " embedding vector(3), tags text[], counts int4[])")

    def insert_every_type():
        answer = execute(
            "INSERT INTO selftest (id, name, score, ok, note, blob, price, meta, uid, at, day, embedding, tags, counts)"
            " VALUES (:id, :name, :score, :ok, :note, :blob, :price, :meta, :uid, :at, :day,"
            " CAST(:embedding AS vector), CAST(:tags AS text[]), CAST(:counts AS int4[]))",
            [
                {"name": "id", "value": {"longValue": 1}},
                s("name", "it's: ::text \"quoted\" -- not a comment"),
                {"name": "score", "value": {"doubleValue": 0.25}},
                {"name": "ok", "value": {"booleanValue": True}},
                {"name": "note", "value": {"isNull": True}},
                {"name": "blob", "value": {"blobValue": b"\x00\x01\xff"}},
                s("price", "12.50", "DECIMAL"),
                s("meta", '{"tenant": "a", "n": 1}', "JSON"),
                s("uid", "7c9e6679-7425-40de-944b-e07fc1f90ae7", "UUID"),
                s("at", "2024-05-06 07:08:09.123", "TIMESTAMP"),
                s("day", "2024-05-06", "DATE"),
                s("embedding", "[1,2,3]"),
                s("tags", "{a,b}"),
                s("counts", "{1,2,3}"),
            ])
        assert answer["numberOfRecordsUpdated"] == 1, answer
        assert "records" not in answer, answer

    def select_every_type():
        answer = execute("SELECT id, name, score, ok, note, blob, price, meta, uid, at, day, embedding::text AS e,"
                         " tags, counts, CAST(3 AS int4) AS small, CAST(1.5 AS float4) AS real"
                         " FROM selftest WHERE id = CAST(:id AS int8)",
                         [{"name": "id", "value": {"longValue": 1}}])
        assert answer["numberOfRecordsUpdated"] == 0, answer
        (row,) = answer["records"]
        expected = [
            {"longValue": 1},
            {"stringValue": "it's: ::text \"quoted\" -- not a comment"},
            {"doubleValue": 0.25},
            {"booleanValue": True},
            {"isNull": True},
            {"blobValue": b"\x00\x01\xff"},
            {"stringValue": "12.50"},
            {"stringValue": '{"n": 1, "tenant": "a"}'},
            {"stringValue": "7c9e6679-7425-40de-944b-e07fc1f90ae7"},
            {"stringValue": "2024-05-06 07:08:09.123"},
            {"stringValue": "2024-05-06"},
            {"stringValue": "[1,2,3]"},
            {"arrayValue": {"stringValues": ["a", "b"]}},
            {"arrayValue": {"longValues": [1, 2, 3]}},
            {"longValue": 3},
            {"doubleValue": 1.5},
        ]
        assert row == expected, row

    def vector_distance_with_double_colon_casts():
        answer = execute("SELECT embedding <-> CAST(:q AS vector) AS d, 'x'::text AS t FROM selftest WHERE id = 1",
                         [s("q", "[1,2,4]")])
        assert answer["records"] == [[{"doubleValue": 1.0}, {"stringValue": "x"}]], answer

    def string_is_bound_as_varchar():
        code, message = error_code(lambda: execute("UPDATE selftest SET uid = :u WHERE id = 1",
                                                   [s("u", "7c9e6679-7425-40de-944b-e07fc1f90ae7")]))
        assert code == "DatabaseErrorException", code
        assert "character varying" in message and "SQLState: 42804" in message, message

    def metadata_and_json_records():
        answer = execute("SELECT id, name, embedding FROM selftest", includeResultMetadata=True)
        names = [(c["name"], c["typeName"]) for c in answer["columnMetadata"]]
        assert names == [("id", "int8"), ("name", "text"), ("embedding", "vector")], names
        answer = execute("SELECT id, price, ok FROM selftest", formatRecordsAs="JSON")
        assert "records" not in answer, answer
        assert json.loads(answer["formattedRecords"]) == [{"id": 1, "price": "12.50", "ok": True}], answer

    def result_set_options():
        answer = execute("SELECT id, price FROM selftest",
                         resultSetOptions={"decimalReturnType": "DOUBLE_OR_LONG", "longReturnType": "STRING"})
        assert answer["records"] == [[{"stringValue": "1"}, {"doubleValue": 12.5}]], answer

    def hostile_text_stays_data():
        hostile = "'); DROP TABLE selftest; --"
        execute("UPDATE selftest SET note = :n WHERE id = 1", [s("n", hostile)])
        answer = execute("SELECT note FROM selftest WHERE id = 1")
        assert answer["records"] == [[{"stringValue": hostile}]], answer
        sent = [r["body"]["sql"] for r in control("/_shim/requests") if r["op"] == "Execute"]
        assert not any(hostile in sql for sql in sent)

    def batch():
        answer = rds.batch_execute_statement(
            sql="INSERT INTO selftest (id, name) VALUES (:id, :name)",
            parameterSets=[[{"name": "id", "value": {"longValue": i}}, s("name", f"n{i}")] for i in (10, 11, 12)],
            **arns)
        assert answer["updateResults"] == [{"generatedFields": []}] * 3, answer
        count = execute("SELECT count(*) FROM selftest WHERE id >= 10")["records"]
        assert count == [[{"longValue": 3}]], count

    def batch_is_atomic():
        code, _ = error_code(lambda: rds.batch_execute_statement(
            sql="INSERT INTO selftest (id) VALUES (:id)",
            parameterSets=[[{"name": "id", "value": {"longValue": 20}}], [{"name": "id", "value": {"longValue": 10}}]],
            **arns))
        assert code == "DatabaseErrorException", code
        assert execute("SELECT count(*) FROM selftest WHERE id = 20")["records"] == [[{"longValue": 0}]]

    def commit():
        tx = rds.begin_transaction(**arns)["transactionId"]
        execute("INSERT INTO selftest (id, name) VALUES (30, 'in tx')", transactionId=tx)
        outside = execute("SELECT count(*) FROM selftest WHERE id = 30")["records"]
        assert outside == [[{"longValue": 0}]], outside
        inside = execute("SELECT count(*) FROM selftest WHERE id = 30", transactionId=tx)["records"]
        assert inside == [[{"longValue": 1}]], inside
        status = rds.commit_transaction(resourceArn=CLUSTER, secretArn=SECRET, transactionId=tx)
        assert status["transactionStatus"] == "Transaction Committed", status
        assert execute("SELECT count(*) FROM selftest WHERE id = 30")["records"] == [[{"longValue": 1}]]

    def rollback():
        tx = rds.begin_transaction(**arns)["transactionId"]
        execute("DELETE FROM selftest WHERE id = 30", transactionId=tx)
        status = rds.rollback_transaction(resourceArn=CLUSTER, secretArn=SECRET, transactionId=tx)
        assert status["transactionStatus"] == "Rollback Complete", status
        assert execute("SELECT count(*) FROM selftest WHERE id = 30")["records"] == [[{"longValue": 1}]]
        code, _ = error_code(lambda: execute("SELECT 1", transactionId=tx))
        assert code == "TransactionNotFoundException", code

    def commit_after_error_fails():
        tx = rds.begin_transaction(**arns)["transactionId"]
        error_code(lambda: execute("SELECT * FROM no_such_table", transactionId=tx))
        code, _ = error_code(lambda: rds.commit_transaction(resourceArn=CLUSTER, secretArn=SECRET, transactionId=tx))
        assert code == "DatabaseErrorException", code

    def expired_transaction():
        tx = rds.begin_transaction(**arns)["transactionId"]
        execute("INSERT INTO selftest (id) VALUES (40)", transactionId=tx)
        time.sleep(TRANSACTION_TIMEOUT * 2.5)
        code, _ = error_code(lambda: execute("SELECT 1", transactionId=tx))
        assert code == "TransactionNotFoundException", code
        assert execute("SELECT count(*) FROM selftest WHERE id = 40")["records"] == [[{"longValue": 0}]]

    def sql_error():
        code, message = error_code(lambda: execute("SELECT * FROM no_such_table"))
        assert code == "DatabaseErrorException", code
        assert 'relation "no_such_table" does not exist' in message and "SQLState: 42P01" in message, message

    def wrong_arns():
        code, _ = error_code(lambda: rds.execute_statement(sql="SELECT 1", resourceArn=CLUSTER,
                                                           secretArn=SECRET + "x"))
        assert code == "SecretsErrorException", code
        code, _ = error_code(lambda: rds.execute_statement(sql="SELECT 1", resourceArn=CLUSTER + "x",
                                                           secretArn=SECRET))
        assert code == "BadRequestException", code

    def unsigned():
        code, _ = error_code(lambda: client(signature_version=UNSIGNED).execute_statement(sql="SELECT 1", **arns))
        assert code == "MissingAuthenticationTokenException", code

    def array_parameters_refused():
        code, message = error_code(lambda: execute("SELECT :a", [{"name": "a", "value": {"arrayValue": {
            "longValues": [1]}}}]))
        assert code == "BadRequestException" and "Array parameters" in message, (code, message)

    def counts_and_injected_503():
        control("/_shim/reset", "POST")
        control("/_shim/fail?op=Execute&status=503&times=1", "POST")
        retrying = client(retries={"mode": "standard", "total_max_attempts": 3})
        retrying.execute_statement(sql="SELECT 1", **arns)
        assert control("/_shim/calls") == {"Execute": 2}, control("/_shim/calls")
        control("/_shim/fail?op=Execute&status=503&times=1", "POST")
        code, _ = error_code(lambda: execute("SELECT 1"))
        assert code == "ServiceUnavailableError", code
        control("/_shim/fail?op=BeginTransaction&status=400&error=DatabaseResumingException&times=1", "POST")
        code, _ = error_code(lambda: rds.begin_transaction(**arns))
        assert code == "DatabaseResumingException", code
        assert control("/_shim/calls") == {"Execute": 3, "BeginTransaction": 1}, control("/_shim/calls")

    for check in (insert_every_type, select_every_type, vector_distance_with_double_colon_casts,
                  string_is_bound_as_varchar, metadata_and_json_records, result_set_options,
                  hostile_text_stays_data, batch, batch_is_atomic, commit, rollback, commit_after_error_fails,
                  expired_transaction, sql_error, wrong_arns, unsigned, array_parameters_refused,
                  counts_and_injected_503):
        checks.run(check.__name__, check)
    execute("DROP TABLE selftest")
    print(f"rds_data_shim selftest: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""moto's server with every DynamoDB item operation atomic, as it is in DynamoDB.

moto's server handles requests on threads and its DynamoDB backend does not lock an item
between checking a condition and writing it, so two concurrent conditional `UpdateItem`s can
both pass (the store conformance suite's rate-window check then admits 6 of 5). DynamoDB
itself serialises writes to one item. This wrapper runs each item operation under one lock and
then starts moto's own server with the same arguments (`-H HOST -p PORT`); the other services
(SQS long polls included) are untouched.
"""

import sys
import threading

from moto.dynamodb.models import DynamoDBBackend
from moto.server import main

_LOCK = threading.RLock()
_ITEM_OPERATIONS = (
    "put_item",
    "update_item",
    "delete_item",
    "get_item",
    "transact_write_items",
    "batch_write_item",
)


def _atomic(method):
    def call(self, *args, **kwargs):
        with _LOCK:
            return method(self, *args, **kwargs)

    return call


for _name in _ITEM_OPERATIONS:
    setattr(DynamoDBBackend, _name, _atomic(getattr(DynamoDBBackend, _name)))

if __name__ == "__main__":
    sys.exit(main())

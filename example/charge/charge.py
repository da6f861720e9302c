"""The example's payment step: charges an order (simulated; a card starting with 4000 is declined)."""

import hashlib
from typing import Any


class CardDeclined(Exception):
    """The card was declined; the order can be retried with another card."""


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    order = event["order"]
    if str(event["payment"]["card"]).startswith("4000"):
        raise CardDeclined(f"card for order {order['id']} was declined")
    reference = hashlib.sha256(f"{order['id']}:{order['total']}".encode()).hexdigest()[:12]
    return {"charge_id": f"ch_{reference}", "amount": order["total"], "currency": order.get("currency", "EUR")}

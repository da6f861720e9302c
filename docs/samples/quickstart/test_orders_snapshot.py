"""docs/guides/testing.md: a snapshot test of the Quick start's stack, with pytest and syrupy
(tests/testing/test_snapshots.py runs it)."""

# --8<-- [start:sample]
from aws_cdk import App
from orders import OrdersStack
from syrupy.extensions.json import JSONSnapshotExtension

from idempotent_constructs.testing import stable_template


def test_the_orders_stack_deploys_what_its_snapshot_says(snapshot):
    stack = OrdersStack(App(), "Orders")
    assert stable_template(stack) == snapshot(extension_class=JSONSnapshotExtension)


# --8<-- [end:sample]

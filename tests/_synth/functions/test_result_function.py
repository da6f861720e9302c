"""idempotent_constructs/_synth/functions/result_function.py: the shared result function."""

from __future__ import annotations

from tests._synth.functions.build import large_results
from tests.synth import role_statements


def test_the_result_function_may_touch_only_its_namespaces_records_and_objects():
    tpl = large_results()
    statements = role_statements(tpl, "IdempotencyResultFunction")
    dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in s["Action"])]
    (records,) = dynamodb  # one statement for the table, listing the namespaces
    assert records["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["orders/orders#*", "orders/refunds#*"]
    assert sorted(records["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    (objects,) = [s for s in statements if sorted(s["Action"]) == ["s3:GetObject", "s3:PutObject"]]
    assert [resource["Fn::Join"][1][-1] for resource in objects["Resource"]] == ["/orders/orders#/*", "/orders/refunds#/*"]

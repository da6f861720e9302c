"""idempotent_constructs/_synth/functions/result_function.py: the shared result function."""

from __future__ import annotations

from tests._synth.functions.build import large_results
from tests.synth import allows, resources, role_statements


def test_the_result_function_may_touch_only_its_namespaces_records_and_objects():
    tpl = large_results()
    statements = role_statements(tpl, "IdempotencyResultFunction")
    dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in s["Action"])]
    (records,) = dynamodb  # one statement for the table, listing the namespaces
    assert records["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["orders/orders#*", "orders/refunds#*"]
    assert sorted(records["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    (objects,) = [s for s in statements if sorted(s["Action"]) == ["s3:GetObject", "s3:PutObject"]]
    assert [resource["Fn::Join"][1][-1] for resource in objects["Resource"]] == ["/orders/orders#/*", "/orders/refunds#/*"]


def test_another_workflow_reaches_a_namespace_only_through_the_result_function_which_asks_for_its_owner_token():
    # Issue 52: A's role may invoke the stack's result function, which may reach B's records; so the
    # function acts only for a caller that names the record's owner token (tests/lambda_src/test_results.py),
    # a secret A cannot read, since its own role reaches no item of B's namespace.
    tpl = large_results()
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    orders = role_statements(tpl, "OrdersRole")
    (function,) = [lid for lid in resources(tpl, "AWS::Lambda::Function") if lid.startswith("IdempotencyResultFunction")]
    assert allows(orders, "lambda:InvokeFunction", {"Fn::Join": ["", [{"Fn::GetAtt": [function, "Arn"]}, ":*"]]}, "")
    for action in ("dynamodb:GetItem", "dynamodb:UpdateItem"):
        assert allows(orders, action, table_arn, "orders/orders#0f3a")
        assert not allows(orders, action, table_arn, "orders/refunds#0f3a")
    assert not any(allows(orders, action, table_arn, "") for action in ("dynamodb:Query", "dynamodb:Scan"))
    function = role_statements(tpl, "IdempotencyResultFunction")
    assert allows(function, "dynamodb:UpdateItem", table_arn, "orders/refunds#0f3a")  # hence the token

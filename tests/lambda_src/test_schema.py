"""lambda_src/schema.py: the names every part of the library agrees on."""

from __future__ import annotations

from idempotent_constructs.lambda_src import schema


def test_a_metrics_namespace_keeps_the_readable_namespace():
    assert schema.metrics_namespace("shop/orders") == "IdempotentConstructs/shop/orders"
    assert schema.metrics_namespace("a+b@c=d") == "IdempotentConstructs/a-b-c-d"


def test_the_longest_namespaces_get_distinct_metrics_namespaces_within_cloudwatchs_limit():
    first, second = "x" * (schema.NAMESPACE_MAX_LENGTH - 1) + "1", "x" * (schema.NAMESPACE_MAX_LENGTH - 1) + "2"
    assert schema.valid_namespace(first) and schema.valid_namespace(second)
    names = {schema.metrics_namespace(first), schema.metrics_namespace(second)}
    assert len(names) == 2 and all(len(name) == schema.METRICS_NAMESPACE_MAX_LENGTH for name in names)


def test_a_metrics_namespace_holds_none_of_what_a_metric_filter_refuses():
    # AWS::Logs::MetricFilter's MetricNamespace is [^:*$]*: a namespace "orders:v2" would roll the stack back.
    assert schema.metrics_namespace("orders:v2*$x") == "IdempotentConstructs/orders-v2--x"

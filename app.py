#!/usr/bin/env python3
"""The example CDK app: `cdk synth` works with no AWS credentials."""

import aws_cdk as cdk

from example.stack import OrdersStack

app = cdk.App()
OrdersStack(app, "IdempotentOrders")
app.synth()

"""The example app of app.py, under a stack name the real-AWS suite chooses.

app.py names its stack "IdempotentOrders", fixed. The suite deploys the same ``OrdersStack`` under a
name of its own (``IdempotentOrders-it-<random>``, passed as context) so that two runs in one account
never share a stack, and so that it can never update or destroy an ``IdempotentOrders`` stack, or
delete the table, of a user who deployed the example themselves.

    cdk deploy --app "python -m tests.aws.app" -c idempotent-constructs:aws-suite-stack=NAME NAME
"""

STACK_NAME_CONTEXT = "idempotent-constructs:aws-suite-stack"


def main() -> None:
    # Imported here: the suite's conftest reads STACK_NAME_CONTEXT without starting the CDK.
    import aws_cdk as cdk

    from example.stack import OrdersStack

    app = cdk.App()
    OrdersStack(app, app.node.get_context(STACK_NAME_CONTEXT))
    app.synth()


if __name__ == "__main__":
    main()

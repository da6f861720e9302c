# app.py
from aws_cdk import App

from orders import OrdersStack

app = App()
OrdersStack(app, "Orders")
app.synth()

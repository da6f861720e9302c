"""The app of docs/samples/long_map: ``cdk synth --app "python app.py"`` in this directory."""

from aws_cdk import App
from rows import RowsStack

app = App()
RowsStack(app, "Rows")
app.synth()

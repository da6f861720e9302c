"""Private: readers of what the CDK and users write. Amazon States Language documents, cloud assemblies
and templates, and the picture of a guard's states drawn from a template. Nothing here is public API."""

"""Shared by the Python suites under Tests/: pytest puts this folder on the import path, so they can
`import herald_process`."""

"""The web inspector at ``/`` beside the API (docs/inspector.md): server-rendered pages over the
same host and store the API reads, with the API's token rules."""

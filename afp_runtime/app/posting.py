"""Posting a person's message for a door that holds neither a host nor a driver (``afp send``
writes the row and a host notices it): the loop's one posting path, ``post_message``, which a
host's ``post`` and a driver's ``post`` take too (docs/host.md#a-message-reaches-its-host).
"""

from afp_runtime.loop import post_message as post

__all__ = ["post"]

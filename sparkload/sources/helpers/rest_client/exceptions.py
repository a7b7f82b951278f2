"""dlt's ``rest_client.exceptions`` names (defined with every other error in
``sparkload.exceptions``)."""

from sparkload.exceptions import HTTPRequestError, IgnoreResponseException

__all__ = ["HTTPRequestError", "IgnoreResponseException"]

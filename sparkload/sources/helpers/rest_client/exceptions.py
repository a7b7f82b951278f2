"""dlt's ``rest_client.exceptions`` names (defined with every other error in
``sparkload.exceptions``)."""

from sparkload.exceptions import IgnoreResponseException
from sparkload.http_error import HTTPRequestError

__all__ = ["HTTPRequestError", "IgnoreResponseException"]

"""The one-line reason the runner gives when the API server cannot be reached
(``minisched.cluster.connection_error_reason``)."""

from __future__ import annotations

import ssl

import urllib3

from minisched.cluster import connection_error_reason


def test_the_innermost_os_error_is_the_reason() -> None:
    refused = ConnectionRefusedError(111, "Connection refused")
    error = urllib3.exceptions.MaxRetryError(None, "/api", reason=refused)
    assert connection_error_reason(error) == "connection refused"


def test_an_ssl_error_whose_reason_is_a_string_is_not_followed() -> None:
    # ssl.SSLError keeps its library's reason as a string (e.g. "WRONG_VERSION_NUMBER"):
    # following it as an error raised AttributeError before.
    wrapped = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    wrapped.reason = "WRONG_VERSION_NUMBER"
    error = urllib3.exceptions.SSLError(wrapped)
    assert "wrong version number" in connection_error_reason(error)


def test_tls_ended_mid_request_is_a_closed_connection() -> None:
    # What http.client raises (minisched/leanclient.py) when the server dies mid-request.
    error = ssl.SSLEOFError(8, "EOF occurred in violation of protocol (_ssl.c:2427)")
    assert connection_error_reason(error) == "the connection was closed"

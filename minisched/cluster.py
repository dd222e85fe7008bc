"""Where the API server comes from: the embedded one (default), or a real cluster.

Upstream counterpart: none in kube-scheduler itself; this is the part of the Go original's
``scheduler.go`` that starts etcd and kube-apiserver, and of client-go's ``clientcmd`` that
reads a kubeconfig (``BuildConfigFromFlags``).

``connect()`` yields a ``Cluster`` whose ``api_client`` is an official ``kubernetes`` client.
With no kubeconfig it starts ``python -m minisched.apiserver`` as a child process and talks to it
through the kubeconfig that the child writes, exactly as it would talk to a real cluster: the
scheduler cannot tell the difference.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import urllib3
from kubernetes import client, config

log = logging.getLogger(__name__)

READY_PREFIX = "minisched-apiserver ready "


class ClusterError(RuntimeError):
    """The cluster could not be reached or started; the message says what to do."""


def is_connection_error(error: BaseException) -> bool:
    """Whether ``error`` says the API server could not be reached (or stopped answering),
    rather than that it answered with an error: urllib3's errors and the socket's."""
    return isinstance(error, urllib3.exceptions.HTTPError | OSError)


def connection_error_reason(error: BaseException) -> str:
    """A short reason for a connection error ("connection refused"), instead of urllib3's
    nested reprs that repeat the whole URL.

    urllib3 wraps the socket's error in ``reason``, ``__cause__`` and ``__context__``; the
    innermost operating-system error says it best.
    """
    causes, todo = [], [error]
    while todo:
        e = todo.pop(0)
        if e is None or any(e is c for c in causes):
            continue
        causes.append(e)
        # An ssl.SSLError's ``reason`` is a string, not an error: only errors are followed.
        reason = getattr(e, "reason", None)
        todo += [reason if isinstance(reason, BaseException) else None, e.__cause__, e.__context__]
        todo += [a for a in e.args if isinstance(a, BaseException)]
    for e in causes:
        if isinstance(e, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {e.verify_message}"
    for e in causes:
        # TLS ended mid-request (the server went away): OpenSSL's words are no help.
        if isinstance(e, ssl.SSLEOFError):
            return "the connection was closed"
    for e in causes:
        if isinstance(e, OSError) and e.strerror:  # e.g. Connection refused
            return e.strerror[:1].lower() + e.strerror[1:]
    if any(isinstance(e, urllib3.exceptions.TimeoutError | TimeoutError) for e in causes):
        return "timed out"
    if any(isinstance(e, urllib3.exceptions.ProtocolError | ConnectionError) for e in causes):
        return "the connection was closed"
    lines = str(error).splitlines()
    return lines[0][:200] if lines else type(error).__name__


class EmbeddedServer:
    """The embedded API server as a child process.

    The child gets its own session, so a Ctrl-C in the terminal reaches only this process,
    which then stops the scheduler first and the server last. The child also exits when its
    stdin closes, which is how it notices that this process died without cleaning up.
    """

    def __init__(self, *extra_args: str, ready_timeout: float = 20.0) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="minisched-")
        self.kubeconfig = str(Path(self._dir.name) / "kubeconfig")
        self.extra_args = list(extra_args)
        self.ready_timeout = ready_timeout
        self.token = secrets.token_hex(24)  # kept for restart(): the same token again
        self.port = 0  # 0: let the server pick; restart() reuses the port it picked
        self.url = ""
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> EmbeddedServer:
        # The token goes in a file only this user can read (mode 0600, in a 0700 directory):
        # a command line is public, `ps` shows it to every user of the machine.
        token_file = Path(self._dir.name) / "token"
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(self.token + "\n")
        cmd = [sys.executable, "-m", "minisched.apiserver", "--port", str(self.port)]
        cmd += ["--kubeconfig", self.kubeconfig, "--token-file", str(token_file)]
        cmd += ["--exit-on-stdin-eof"]
        cmd += self.extra_args
        self.process = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        line = _readline_with_timeout(self.process, self.ready_timeout)
        if not line.startswith(READY_PREFIX):
            self.stop()
            raise ClusterError(f"the embedded API server did not start: {line!r}")
        fields = dict(part.split("=", 1) for part in line[len(READY_PREFIX) :].split())
        self.url, self.kubeconfig = fields["url"], fields["kubeconfig"]
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def restart(self) -> EmbeddedServer:
        """Kill the server and start a new, empty one on the same port with the same token:
        what clients see when a real API server restarts and loses its watch history."""
        proc = self.process
        if proc is not None:
            proc.kill()
            proc.wait()
            self.process = None
        return self.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate the child and wait for it; kill it if it does not go."""
        proc, self.process = self.process, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        for stream in (proc.stdin, proc.stdout):
            if stream:
                stream.close()

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._dir.cleanup()


def _readline_with_timeout(proc: subprocess.Popen[str], timeout: float) -> str:
    """The child's first stdout line, or "" if it exits or says nothing within ``timeout``."""
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    return result[0].strip() if result else ""


@dataclass
class Cluster:
    """An API server to talk to, and how we got there."""

    api_client: client.ApiClient
    kubeconfig: str
    context: str | None
    embedded: bool
    server: EmbeddedServer | None = None  # the embedded server's child process, if ours

    def describe(self) -> str:
        host = self.api_client.configuration.host
        if self.embedded:
            return f"embedded API server at {host}"
        return (
            f"cluster at {host} (kubeconfig {self.kubeconfig}, context {self.context or 'current'})"
        )

    def went_away(self, error: BaseException | None = None) -> str:
        """One line on an API server that stopped answering: who, and what we know of why."""
        host = self.api_client.configuration.host
        proc = self.server.process if self.server else None
        code = None
        if proc is not None:
            # A connection refused can come before the child's exit is visible: give it a
            # moment, so a killed embedded server is named as killed.
            try:
                code = proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
        if code is not None:
            how = f"killed by {_signal_name(-code)}" if code < 0 else f"exited with status {code}"
            return f"the embedded API server at {host} went away ({how})"
        reason = f" ({connection_error_reason(error)})" if error else ""
        return f"the API server at {host} went away{reason}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def check_reachable(
    api_client: client.ApiClient, origin: str, hint: str = "", timeout: float = 5.0
) -> None:
    """Ask the server for its version once; ClusterError in one line if it cannot answer.

    Without this, a kubeconfig naming a server that is not running surfaced as three chained
    tracebacks from the scenario's first call (and, for the scheduler alone, a warning per
    informer per retry).
    """
    host = api_client.configuration.host
    try:
        client.VersionApi(api_client).get_code(_request_timeout=(timeout, timeout))
    except client.ApiException as e:
        if e.status == 401:
            raise ClusterError(
                f"the API server at {host} ({origin}) refused our credentials: 401 Unauthorized"
                + hint
            ) from None
        # Any other answer: it is running; what it thinks of us shows in the calls that follow.
    except Exception as e:
        if not is_connection_error(e):
            raise
        raise ClusterError(
            f"cannot reach the API server at {host} ({origin}): {connection_error_reason(e)};"
            f" is it running?{hint}"
        ) from None


def _missing_kubeconfig(kubeconfig: str) -> bool:
    """True when no file of ``kubeconfig`` exists (like $KUBECONFIG, it may list several,
    separated by os.pathsep; the client silently skips the missing ones)."""
    paths = [Path(p).expanduser() for p in kubeconfig.split(os.pathsep) if p]
    return not any(p.is_file() for p in paths)


# How many connections the client's pool keeps to the API server. The client's default is five
# per CPU (10 on a 2-core machine), fewer than a scheduler uses at once: its watches, its event
# thread, and a binding per pod being bound (up to 16 in step 18). A connection handed back to
# a full pool is closed, and the next request opens another: over TLS, a handshake each time.
CONNECTION_POOL_MAXSIZE = 32


# How often, at most, the kubeconfig loader's token hook runs. The official client runs it
# before every request (Configuration.refresh_api_key_hook): it re-reads an expiring token
# (exec and auth-provider credentials), and, whatever the credentials, copies the kubeconfig's
# settings into the configuration again, which scans the environment for proxies: about 90 us
# a request. An expiring token lives for minutes; once a second is soon enough.
REFRESH_INTERVAL = 1.0


def throttle_token_refresh(configuration: client.Configuration) -> None:
    """Run the configuration's token refresh hook at most every REFRESH_INTERVAL seconds."""
    hook = configuration.refresh_api_key_hook
    if hook is None:
        return
    last = [-REFRESH_INTERVAL]

    def refresh(config: client.Configuration) -> None:
        now = time.monotonic()
        if now - last[0] >= REFRESH_INTERVAL:
            last[0] = now
            hook(config)

    configuration.refresh_api_key_hook = refresh


def new_api_client(config_file: str, context: str | None = None) -> client.ApiClient:
    """The official client for a kubeconfig, as a scheduler uses it: room in its pool for
    every connection it holds at once (CONNECTION_POOL_MAXSIZE), and the token hook run at
    most once a second (throttle_token_refresh). Raises what the kubeconfig loader raises."""
    configuration = client.Configuration()
    configuration.connection_pool_maxsize = CONNECTION_POOL_MAXSIZE
    api_client = config.new_client_from_config(
        config_file=config_file, context=context, client_configuration=configuration
    )
    throttle_token_refresh(api_client.configuration)
    return api_client


@contextlib.contextmanager
def connect(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    embedded: bool = False,
    embedded_args: tuple[str, ...] = (),
) -> Iterator[Cluster]:
    """Yield a ``Cluster``; start and stop the embedded server when no kubeconfig is given.

    The kubeconfig comes from the argument, else ``$KUBECONFIG`` (unless ``embedded`` is set);
    with neither, the embedded server is started for the duration of the ``with`` block.
    """
    origin, hint = "--kubeconfig", ""
    if kubeconfig is None and not embedded and os.environ.get("KUBECONFIG"):
        kubeconfig = os.environ["KUBECONFIG"]
        origin, hint = (
            "$KUBECONFIG",
            " (unset KUBECONFIG, or pass --embedded, for the embedded API server)",
        )
    if kubeconfig is None:
        with EmbeddedServer(*embedded_args) as server:
            api_client = new_api_client(server.kubeconfig)
            try:
                yield Cluster(api_client, server.kubeconfig, None, embedded=True, server=server)
            finally:
                api_client.close()
        return
    if _missing_kubeconfig(kubeconfig):
        raise ClusterError(f"{origin} names {kubeconfig}: no such file{hint}")
    try:
        api_client = new_api_client(kubeconfig, context)
    except Exception as e:  # a bad context, a malformed kubeconfig
        raise ClusterError(f"cannot load kubeconfig {kubeconfig!r}: {e}") from e
    try:
        check_reachable(api_client, f"named by {origin} {kubeconfig}", hint)
        if origin == "$KUBECONFIG":
            log.warning("using the cluster of $KUBECONFIG (%s); --embedded ignores it", kubeconfig)
        yield Cluster(api_client, kubeconfig, context, embedded=False)
    finally:
        api_client.close()


def apply_crd(api_client: client.ApiClient, manifest: Path, timeout: float = 30.0) -> str:
    """Create the CustomResourceDefinition of ``manifest`` unless the cluster has it, and
    wait until it is Established (its resource served); return what was done, for one line
    of output. The cluster's CRD is left as it is (as ``kubectl create`` would); it is not
    deleted afterwards either: other runs, and other schedulers, may use its objects."""
    import time

    import yaml

    crd = yaml.safe_load(manifest.read_text())
    name = crd["metadata"]["name"]
    api = client.ApiextensionsV1Api(api_client)
    try:
        api.create_custom_resource_definition(crd)
        done = f"created CustomResourceDefinition {name} ({manifest.name})"
    except client.ApiException as e:
        if e.status != 409:
            raise
        done = f"CustomResourceDefinition {name} is already there"
    deadline = time.monotonic() + timeout
    while True:
        got = api.read_custom_resource_definition(name)
        conditions = (got.status and got.status.conditions) or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            return done
        if time.monotonic() > deadline:
            raise ClusterError(f"CustomResourceDefinition {name} not established in {timeout:g}s")
        time.sleep(0.1)  # kube-apiserver establishes a new CRD within a second

"""``python -m minisched.apiserver``: run the embedded API server as its own process.

Upstream: ``cmd/kube-apiserver`` (flags, ``--bind-address``, serving until SIGTERM). The process
contract that ``minisched.cluster`` relies on:

- ``--port 0`` picks a free port; ``--host`` must be a loopback address unless
  ``--allow-non-loopback`` is given (then a warning goes to stderr);
- a kubeconfig (cluster, user and context all named ``minisched``) is written atomically with
  mode 0600 to ``--kubeconfig`` or to a fresh temporary directory (removed again at exit);
- ``--tls`` serves HTTPS with a self-signed certificate (its CA data goes into the kubeconfig):
  kubectl sends bearer tokens only over TLS (kubernetes/kubectl#744), so over plain HTTP it
  gets 401 Unauthorized; the official Python client sends the token either way. Making the
  certificate needs the ``openssl`` command (without it: one line saying so, exit 1);
- the bearer token clients must send: ``--token-file PATH`` (its first line; what
  ``minisched.cluster`` passes, the file mode 0600), else the one kept in ``--state-dir``, else
  a random one; it goes into the kubeconfig. ``--token T`` also works, but a command line is
  public: ``ps`` shows it to every user of the machine (kube-apiserver takes its tokens from a
  file too, ``--token-auth-file``);
- ``--state-dir DIR`` keeps the server's identity (the certificate and key, the token) in DIR:
  a restarted server is the same server to its clients (kube-apiserver's ``--cert-dir`` and
  token file), so a kubeconfig written before the restart still works. Without it every
  start makes a new certificate and token, and clients of the old one fail to verify the new
  certificate (``CERTIFICATE_VERIFY_FAILED``) or get 401. Delete DIR to reset the identity;
- exactly one line on stdout when ready:
  ``minisched-apiserver ready url=http://127.0.0.1:PORT kubeconfig=/abs/path``;
- logs on stderr only; SIGTERM/SIGINT (and stdin EOF with ``--exit-on-stdin-eof``) stop it
  promptly with exit status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import errno
import ipaddress
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from .serving import Server

log = logging.getLogger("minisched.apiserver")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m minisched.apiserver",
        description="The minisched embedded Kubernetes API server.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback only)")
    p.add_argument(
        "--port", type=int, default=0, help="port to listen on (0-65535); 0 picks a free one"
    )
    p.add_argument("--kubeconfig", help="where to write the kubeconfig (default: a temp dir)")
    token_source = p.add_mutually_exclusive_group()
    token_source.add_argument(
        "--token-file",
        help="read the bearer token clients must send from this file's first line "
        "(default: random, or the one kept in --state-dir)",
    )
    token_source.add_argument(
        "--token",
        help="the bearer token itself (ps shows it to every user: prefer --token-file)",
    )
    p.add_argument(
        "--watch-history",
        type=int,
        default=5000,
        help="events kept for watches that resume from a resourceVersion (older: 410 Gone)",
    )
    p.add_argument(
        "--watcher-queue",
        type=int,
        default=2000,
        help="events buffered per watcher; a watcher falling further behind is ended",
    )
    p.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        help="seconds between heartbeat bookmarks on watches that allow them",
    )
    p.add_argument(
        "--exit-on-stdin-eof",
        action="store_true",
        help="exit when stdin is closed (the parent process died)",
    )
    p.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="allow --host to be a non-loopback address (plain HTTP: anyone on the network "
        "who learns the token controls the cluster)",
    )
    p.add_argument(
        "--fail-binding-fraction",
        type=float,
        default=0.0,
        help="TEST ONLY: answer this fraction of bindings with 503 ServiceUnavailable",
    )
    p.add_argument("--seed", type=int, help="seed for generated names, uids and injected faults")
    p.add_argument(
        "--test-endpoints",
        action="store_true",
        help="TEST ONLY: enable POST /minisched/compact (forget the watch history)",
    )
    p.add_argument(
        "--data-dir",
        help="keep the objects in this directory, so a restarted server still has them "
        "(like kube-apiserver on etcd; the watch history is not kept)",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a self-signed certificate (making it needs openssl on PATH); "
        "kubectl sends its bearer token only over TLS",
    )
    p.add_argument(
        "--state-dir",
        help="keep the server's identity (TLS certificate and key, token) in this directory, "
        "so a restarted server is the same server to kubectl and a running scheduler; "
        "delete it to reset (default: a new identity on every start)",
    )
    p.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    return p.parse_args(argv)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def kubeconfig_text(url: str, token: str, ca_data: str = "") -> str:
    """A kubeconfig in YAML (written by hand: no YAML library is imported at startup)."""
    ca_line = f'\n    certificate-authority-data: "{ca_data}"' if ca_data else ""
    return f"""apiVersion: v1
kind: Config
clusters:
- name: minisched
  cluster:
    server: "{url}"{ca_line}
users:
- name: minisched
  user:
    token: "{token}"
contexts:
- name: minisched
  context:
    cluster: minisched
    user: minisched
current-context: minisched
preferences: {{}}
"""


def write_private_file(path: str, text: str) -> None:
    """Write ``text`` atomically (temp file + rename) with mode 0600."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class SetupError(Exception):
    """A reason the server cannot start, said in one line."""


def _subject_alt_names(host: str) -> str:
    try:
        ipaddress.ip_address(host)
        first = f"IP:{host}"
    except ValueError:
        first = f"DNS:{host}"
    names = [first, "DNS:localhost", "IP:127.0.0.1", "IP:::1"]
    return ",".join(dict.fromkeys(names))  # without duplicates, in order


def self_signed_certificate(directory: str, host: str, days: int = 1) -> tuple[str, str]:
    """Make a self-signed EC certificate for ``host`` with the openssl command.

    Simplified: the certificate is its own CA (kube-apiserver's self-signed ``--cert-dir``
    certificate is too); its PEM goes into the kubeconfig as ``certificate-authority-data``.
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        raise SetupError(
            "--tls needs the openssl command to make its certificate, and it is not on PATH: "
            "install openssl (or run without --tls: kubectl then gets 401)"
        )
    os.makedirs(directory, exist_ok=True)
    cert, key = os.path.join(directory, "apiserver.crt"), os.path.join(directory, "apiserver.key")
    try:
        subprocess.run(
            [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
            + ["-nodes", "-days", str(days), "-subj", "/CN=minisched-apiserver"]
            + ["-addext", f"subjectAltName={_subject_alt_names(host)}"]
            + ["-keyout", key, "-out", cert],
            check=True,
            capture_output=True,
        )
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        raise SetupError(
            f"openssl could not make the TLS certificate: {last[-1] if last else exc}"
        ) from None
    os.chmod(key, 0o600)
    return cert, key


def state_identity(state_dir: str, host: str, tls: bool) -> tuple[str, tuple[str, str] | None]:
    """The token and (with ``tls``) certificate kept in ``state_dir``, made on first use.

    The certificate is remade only when it was made for another ``--host``.
    """
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    token_file = os.path.join(state_dir, "token")
    try:
        with open(token_file, encoding="utf-8") as f:
            token = f.read().strip()
    except FileNotFoundError:
        token = ""
    if not token:
        token = secrets.token_hex(24)
        write_private_file(token_file, token + "\n")
    if not tls:
        return token, None
    cert = os.path.join(state_dir, "apiserver.crt")
    key = os.path.join(state_dir, "apiserver.key")
    host_file = os.path.join(state_dir, "apiserver.host")
    try:
        with open(host_file, encoding="utf-8") as f:
            made_for = f.read().strip()
    except FileNotFoundError:
        made_for = None
    if made_for != host or not (os.path.exists(cert) and os.path.exists(key)):
        self_signed_certificate(state_dir, host, days=3650)
        write_private_file(host_file, host + "\n")
    return token, (cert, key)


def read_token_file(path: str) -> str:
    """The token in the first line of ``path``; SetupError (one line) if there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            token = f.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read --token-file {path}: {exc}") from None
    if not token:
        raise SetupError(f"--token-file {path} is empty: its first line should be the token")
    return token


async def serve(args: argparse.Namespace, kubeconfig: str) -> None:
    tls = None
    ca_data = ""
    token = args.token or (read_token_file(args.token_file) if args.token_file else None)
    if args.state_dir:
        kept_token, tls = state_identity(args.state_dir, args.host, args.tls)
        token = token or kept_token
    elif args.tls:
        tls = self_signed_certificate(os.path.dirname(kubeconfig), args.host)
    if tls is not None:
        with open(tls[0], "rb") as f:
            ca_data = base64.b64encode(f.read()).decode()
    server = Server(
        args.host,
        args.port,
        token=token or secrets.token_hex(24),
        watch_history=args.watch_history,
        watcher_queue=args.watcher_queue,
        bookmark_interval=args.bookmark_interval,
        fail_binding_fraction=args.fail_binding_fraction,
        seed=args.seed,
        test_endpoints=args.test_endpoints,
        tls=tls,
        data_dir=args.data_dir,
    )
    await server.start()
    write_private_file(kubeconfig, kubeconfig_text(server.url, server.token, ca_data))

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.exit_on_stdin_eof:

        def watch_stdin() -> None:
            # os.read on the raw descriptor: a buffered reader's lock held by this daemon
            # thread would make interpreter shutdown abort.
            try:
                while os.read(stdin_fd, 65536):
                    pass
            except OSError:
                pass
            loop.call_soon_threadsafe(stop.set)

        stdin_fd = sys.stdin.fileno()

        threading.Thread(target=watch_stdin, name="stdin-eof", daemon=True).start()

    sys.stdout.write(f"minisched-apiserver ready url={server.url} kubeconfig={kubeconfig}\n")
    sys.stdout.flush()
    await stop.wait()
    log.info("shutting down")
    await server.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not is_loopback(args.host):
        if not args.allow_non_loopback:
            print(
                f"refusing to listen on non-loopback address {args.host!r}: the API is plain "
                "HTTP; pass --allow-non-loopback to do it anyway",
                file=sys.stderr,
            )
            return 2
        print(
            f"WARNING: listening on {args.host}, reachable from other machines over plain "
            "HTTP; anyone who obtains the token controls this cluster",
            file=sys.stderr,
        )
    if not 0 <= args.port <= 65535:
        print(
            f"--port must be between 0 and 65535 (0 picks a free port), not {args.port}",
            file=sys.stderr,
        )
        return 2
    if not 0.0 <= args.fail_binding_fraction <= 1.0:
        print("--fail-binding-fraction must be between 0 and 1", file=sys.stderr)
        return 2
    temp_dir = None
    if args.kubeconfig:
        kubeconfig = os.path.abspath(args.kubeconfig)
    else:
        temp_dir = tempfile.mkdtemp(prefix="minisched-")
        kubeconfig = os.path.join(temp_dir, "kubeconfig")
    try:
        asyncio.run(serve(args, kubeconfig))
    except KeyboardInterrupt:
        pass  # a second Ctrl-C while shutting down
    except SetupError as exc:
        print(f"minisched-apiserver: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"minisched-apiserver: {exc}", file=sys.stderr)
        if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
            print(
                f"minisched-apiserver: is another server on port {args.port}? pick another with"
                " --port N (0: any free port)",
                file=sys.stderr,
            )
        return 1
    finally:
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

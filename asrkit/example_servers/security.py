"""Who may bind where, and ZeroMQ CURVE keys.

An example server binds loopback unless told otherwise; binding any other
address needs both an explicit allow-remote flag and a CURVE secret key, so
examples never leave the machine unencrypted by accident.  With CURVE the
server proves it holds the secret key and the stream is encrypted; a trainer
must be given the server's public key.  No client allow-list (ZAP) is
installed, so any trainer that knows the public key can pull: treat the public
key file as the credential that lets a trainer in.

Keys are ZeroMQ's certificate files (zmq.auth): `<name>.key` holds the public
key, `<name>.key_secret` the public and the secret key.
"""

import ipaddress
import os

import zmq
import zmq.auth

from asrkit.errors import AsrkitError

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def endpoint_host(endpoint):
    """The host of a tcp:// endpoint; None for ipc:// and inproc://, which never leave the machine."""
    if endpoint.startswith(("ipc://", "inproc://")):
        return None
    if not endpoint.startswith("tcp://"):
        raise AsrkitError(f"endpoint {endpoint!r}: expected tcp://HOST:PORT (or ipc://PATH)")
    rest = endpoint[len("tcp://"):]
    host, separator, port = rest.rpartition(":")
    if not separator or not host or not port:
        raise AsrkitError(f"endpoint {endpoint!r}: expected tcp://HOST:PORT")
    return host.strip("[]")


def is_loopback(endpoint):
    host = endpoint_host(endpoint)
    if host is None or host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # an interface name, '*' or a host name: not provably loopback
        return False


def check_bind_allowed(endpoint, allow_remote, secret_key_file):
    """Refuse a non-loopback bind without --allow-remote and a CURVE key."""
    if is_loopback(endpoint):
        return
    if not allow_remote:
        raise AsrkitError(f"refusing to bind {endpoint}: it is not a loopback address (fix: bind "
                          "tcp://127.0.0.1:PORT, or pass --allow-remote with --curve-secret-key)")
    if not secret_key_file:
        raise AsrkitError(f"refusing to bind {endpoint} without encryption: --allow-remote needs "
                          "--curve-secret-key (make a key pair with --write-key-pair DIR)")


def write_key_pair(directory, name="server"):
    """Write <directory>/<name>.key (public) and <name>.key_secret; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    public, secret = zmq.auth.create_certificates(directory, name)
    os.chmod(secret, 0o600)
    return public, secret


def _load(path, want_secret):
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as error:
        raise AsrkitError(f"cannot read the CURVE key file {path}: {error}") from None
    if want_secret and secret is None:
        raise AsrkitError(f"{path} holds no secret key (pass the .key_secret file, not the .key file)")
    if public is None:
        raise AsrkitError(f"{path} holds no public key")
    return public, secret


def make_curve_server(socket, secret_key_file):
    """Turn a socket into a CURVE server with the key pair in `secret_key_file`."""
    public, secret = _load(secret_key_file, want_secret=True)
    socket.curve_secretkey = secret
    socket.curve_publickey = public
    socket.curve_server = True


def make_curve_client(socket, server_public_key_file):
    """CURVE client of the server whose public key is in the file; the client's own key pair is ephemeral."""
    server_public, _ = _load(server_public_key_file, want_secret=False)
    public, secret = zmq.curve_keypair()
    socket.curve_secretkey = secret
    socket.curve_publickey = public
    socket.curve_serverkey = server_public

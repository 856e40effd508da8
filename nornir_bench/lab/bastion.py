"""A router lab's bastion: OpenSSH on 127.0.0.1, the only way in to routers whose SSH server
listens inside a network namespace of the lab's own (``nornir-bench lab --routers N
--bastion``).

With a bastion, the routers' ``sshd`` listens on 127.0.0.1 of the lab's management namespace
(``nb-NAME-m``): nothing outside that namespace reaches it. The bastion listens on this
machine's 127.0.0.1 and serves each connection with OpenSSH's ``sshd`` in inetd mode (``sshd
-i``, as inetd or a systemd socket runs it) started inside the management namespace: the
accepted socket is its standard input and output, and the channels it forwards open there, to
the routers. It forwards to 127.0.0.1 only (``PermitOpen``), runs no command, carries 10
sessions a connection (OpenSSH's ``MaxSessions``), and logs in the lab's user with the lab's
password. Each connection's ``sshd`` ends with it; the lab's teardown kills whatever runs in
its namespaces, these included.
"""

from __future__ import annotations

import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

from nornir_bench.lab._system import command, password_logins_of

__all__ = ["Bastion"]

_ACCEPT_BACKLOG = 128
_JOIN_SECONDS = 10.0


class Bastion:
    """The bastion of a lab: :meth:`start` listens, :meth:`stop` stops listening.

    Args:
        namespace: the lab's management namespace, where its routers' SSH server listens.
        port: the bastion's port on 127.0.0.1.
        user: the lab's login user, the only one let in.
        workdir: the lab's work folder (the bastion's key, configuration and log).
    """

    def __init__(self, namespace: str, port: int, user: str, workdir: str) -> None:
        self.namespace = namespace
        self.port = port
        self.user = user
        self.folder = Path(workdir)
        self.key = self.folder / "bastion_host_key"
        self.config = self.folder / "bastion_sshd_config"
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._serving: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        """Its key and configuration written, listening on 127.0.0.1.

        Raises:
            LabError: a key that cannot be made; OSError: the port cannot be listened on.
        """
        command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        self.config.write_text(self._sshd_config(), encoding="utf-8")
        listener = socket.create_server(("127.0.0.1", self.port), backlog=_ACCEPT_BACKLOG)
        self._listener = listener
        self._thread = threading.Thread(
            target=self._accept, name="nornir-bench-lab-bastion", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening; the connections' servers are ended (the lab's teardown kills what
        runs in its namespaces too)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        if self._thread is not None:
            self._thread.join(_JOIN_SECONDS)
            self._thread = None
        with self._lock:
            serving, self._serving = self._serving, []
        for process in serving:
            if process.poll() is None:
                process.terminate()
        for process in serving:
            try:
                process.wait(_JOIN_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def known_hosts_line(self) -> str:
        """The bastion's key as a known-hosts line."""
        public = " ".join(Path(f"{self.key}.pub").read_text(encoding="utf-8").split()[:2])
        return f"[127.0.0.1]:{self.port} {public}\n"

    def jump_host(self, password: str) -> dict[str, Any]:
        """The inventory's ``jump_host`` that reaches the routers through it."""
        return {"host": "127.0.0.1", "port": self.port, "username": self.user,
                "password": password}

    def _accept(self) -> None:
        with open(self.folder / "bastion.log", "ab") as log:
            while (listener := self._listener) is not None:
                try:
                    connection, _ = listener.accept()
                except OSError:  # closed: the lab stops
                    return
                with connection, self._lock:
                    self._serving = [p for p in self._serving if p.poll() is None]
                    self._serving.append(subprocess.Popen(
                        ["ip", "netns", "exec", self.namespace,
                         "/usr/sbin/sshd", "-i", "-e", "-f", str(self.config)],
                        stdin=connection.fileno(), stdout=connection.fileno(), stderr=log,
                    ))

    def _sshd_config(self) -> str:
        return "\n".join([
            *password_logins_of(self.user, self.key),
            "PidFile none",
            "AllowTcpForwarding local",
            "PermitOpen 127.0.0.1:*",
            "PermitTTY no",
            "ForceCommand /bin/false",
            "",
        ])

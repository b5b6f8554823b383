# adv: lint-only
from _lint import __UNIX_SOCKET__
from _prelude import FINDINGS, _error, _json, _note, socket


def solve(case_spec):
    results = {}
    for path in [
        __UNIX_SOCKET__,
        "/run/dbus/system_bus_socket",
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/run/containerd/containerd.sock",
        "/run/systemd/private",
        "/run/systemd/journal/stdout",
        "/run/user/0/bus",
    ]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(2)
        try:
            sock.connect(path)
            results[path] = "connected"
        except Exception as exc:
            results[path] = _error(exc)
        finally:
            sock.close()
    _note("connects", results)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
